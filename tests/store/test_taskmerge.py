"""The sync merge of one task: a pure, symmetric function whose result always parses."""

from __future__ import annotations

from typing import Any

from hypothesis import assume, given
from hypothesis import strategies as st

from orange.store.merge3 import merge_text, split_sections
from orange.store.task import Task
from orange.store.taskmerge import Rules, Side, claimed_twice, merge_task

TERMINAL = {"done", "cancelled"}
RULES = Rules(
    terminal=lambda task: task.status in TERMINAL,
    follow_status=frozenset({"crash_count", "review_round"}),
)
OURS, THEIRS = Side("a" * 40, 100), Side("b" * 40, 200)
PATH = "tasks/00/t1/TASK.md"
BASE_BODY = "intro\n## Context\nline 1\nline 2\nline 3\n## Notes\nn1\nn2\n"


def task(body: str = BASE_BODY, **fields: Any) -> bytes:
    values: dict[str, Any] = {
        "id": "t1",
        "status": "working",
        "summary": "do it",
        "crash_count": 0,
        "host": "h1",
        "workspace": "p--1",
        "tmux_session": "p/b",
        "updated_at": "2026-01-01T00:00:00.000Z",
    }
    values.update(fields)
    return Task(fields=values, body=body).render().encode()


def parsed(data: bytes | None) -> Task:
    assert data is not None
    return Task.parse(data.decode(), where=PATH)


def merge(base: bytes | None, ours: bytes | None, theirs: bytes | None) -> bytes | None:
    return merge_task(base, ours, theirs, (OURS, THEIRS), RULES, PATH).data


# Hypothesis: a base task and two sides edited from it at random.
_statuses = st.sampled_from(["pending", "working", "review", "done", "cancelled"])
_words = st.text(alphabet="abc xyz#:-'\"\n", max_size=12)


@st.composite
def edited(draw: st.DrawFn, base: dict[str, Any]) -> bytes:
    fields = dict(base["fields"])
    body = base["body"]
    if draw(st.booleans()):
        fields["status"] = draw(_statuses)
    if draw(st.booleans()):
        fields["summary"] = draw(_words)
    if draw(st.booleans()):
        fields["workspace"] = draw(st.sampled_from([None, "p--1", "p--2"]))
        fields["host"] = draw(st.sampled_from(["h1", "h2"]))
    if draw(st.booleans()):
        fields["updated_at"] = draw(st.sampled_from(["2026-02", "2026-03"]))
    if draw(st.booleans()):
        fields[draw(st.sampled_from(["extra", "pr_url"]))] = draw(_words)
    if draw(st.booleans()):
        lines = body.splitlines(keepends=True)
        at = draw(st.integers(0, len(lines)))
        new = draw(st.lists(st.sampled_from(["x\n", "## Plan\n", "y\n", "## Notes\n"]), max_size=3))
        cut = draw(st.integers(0, 2))
        body = "".join(lines[:at] + new + lines[at + cut :])
    return task(body, **fields)


_bases = st.fixed_dictionaries(
    {
        "fields": st.fixed_dictionaries({"status": _statuses, "summary": _words}),
        "body": st.just(BASE_BODY),
    }
)


@given(data=st.data(), base=_bases)
def test_the_merge_always_parses_and_is_symmetric(
    data: st.DataObject, base: dict[str, Any]
) -> None:
    old = task(base["body"], **base["fields"])
    ours, theirs = data.draw(edited(base)), data.draw(edited(base))
    assume(not claimed_twice(parsed(old), (parsed(ours), parsed(theirs)), RULES))
    one = merge_task(old, ours, theirs, (OURS, THEIRS), RULES, PATH)
    two = merge_task(old, theirs, ours, (THEIRS, OURS), RULES, PATH)
    assert one.data == two.data
    result = parsed(one.data)
    assert result.id == "t1"
    assert "<<<<<<<" not in (one.data or b"").decode().split("\n---\n", 1)[0]
    if one.conflicts:
        assert "sync merge:" in result.str_field("attention")


@given(data=st.data(), base=_bases)
def test_one_side_changed_is_that_side_and_same_is_idempotent(
    data: st.DataObject, base: dict[str, Any]
) -> None:
    old = task(base["body"], **base["fields"])
    side = data.draw(edited(base))
    assert merge(old, side, old) == side
    assert merge(old, old, side) == side
    assert merge(side, side, side) == side
    assert merge(old, side, side) == side


def test_a_move_into_a_terminal_status_wins_over_a_later_move() -> None:
    old = task(status="working")
    cancelled = task(status="cancelled")  # ours: the earlier commit
    moved = task(status="review", crash_count=2)
    result = parsed(merge(old, cancelled, moved))
    assert result.status == "cancelled"
    assert result.fields["crash_count"] == 0  # the status's bookkeeping comes with it
    attention = result.str_field("attention")
    assert "to cancelled (commit aaaaaaaaaa)" in attention
    assert "to review (commit bbbbbbbbbb)" in attention


def test_otherwise_the_later_commit_moves_and_ties_go_to_the_larger_commit_id() -> None:
    old = task(status="pending")
    result = parsed(merge(old, task(status="working"), task(status="review")))
    assert result.status == "review"  # theirs is the later commit
    tie = merge_task(
        old,
        task(status="working"),
        task(status="review"),
        (Side("c" * 40, 5), Side("b" * 40, 5)),
        RULES,
        PATH,
    )
    assert parsed(tie.data).status == "working"


def test_the_binding_comes_whole_from_the_side_whose_status_stands() -> None:
    old = task(status="working", host="h1", workspace="p--1")
    ours = task(status="cancelled", host="h1", workspace=None, tmux_session=None)
    theirs = task(status="review", host="h1", workspace="p--1", tmux_session="p/b2")
    result = parsed(merge(old, ours, theirs))
    assert (result.fields["workspace"], result.fields["tmux_session"]) == (None, None)


def test_a_section_edited_on_both_sides_merges_by_line_or_keeps_both_versions() -> None:
    clean = merge(
        task(),
        task(BASE_BODY.replace("line 1", "LINE ONE")),
        task(BASE_BODY.replace("line 3", "LINE THREE")),
    )
    assert parsed(clean).body == BASE_BODY.replace("line 1", "LINE ONE").replace(
        "line 3", "LINE THREE"
    )
    assert parsed(clean).str_field("attention") == ""
    clash = parsed(
        merge(task(), task(BASE_BODY.replace("n1", "mine")), task(BASE_BODY.replace("n1", "yours")))
    )
    sections = dict(split_sections(clash.body))
    notes = sections["## Notes"]
    assert notes.index("version of commit bbbbbbbbbb\nyours") < notes.index(
        "version of commit aaaaaaaaaa\nmine"
    )
    assert sections["## Context"] == "## Context\nline 1\nline 2\nline 3\n"
    assert "section ## Notes edited on both sides" in clash.str_field("attention")


def test_other_fields_changed_on_both_sides_take_the_later_with_attention() -> None:
    result = parsed(merge(task(), task(summary="mine"), task(summary="yours", updated_at="2027")))
    assert result.summary == "yours"
    assert result.fields["updated_at"] == "2027"
    assert "summary changed on both sides" in result.str_field("attention")


def test_a_side_that_does_not_parse_loses() -> None:
    good = task(summary="fine")
    assert merge(task(), b"---\nid: [\n---\n", good) == good


def test_line_merge() -> None:
    assert merge_text("a\nb\nc\n", "A\nb\nc\n", "a\nb\nC\n") == "A\nb\nC\n"
    assert merge_text("a\nb\n", "x\nb\n", "y\nb\n") is None


def test_a_task_bound_on_both_sides_keeps_one_binding_and_says_so() -> None:
    old = task(status="pending", host=None, workspace=None, tmux_session=None)
    here = task(status="planning", host="h1", workspace="p--1", tmux_session="p/b")
    there = task(status="planning", host="h2", workspace="p--2", tmux_session="p/b")
    result = parsed(merge(old, here, there))
    assert (result.fields["host"], result.fields["workspace"]) == ("h2", "p--2")
    assert "bound on both sides (h2, h1), kept h2's binding" in result.str_field("attention")


def test_two_claims_of_an_unbound_task_keep_the_one_being_merged_in() -> None:
    """The remote's claim (theirs: the tip merged in) wins even when ours is later, and
    its status comes with it: the first claim pushed stands on every clone."""
    old = task(status="pending", host="h1", workspace=None, tmux_session=None)
    mine = task(status="planning", host="h2", workspace="p--2", tmux_session="p/two")
    remote = task(status="working", host="h3", workspace="p--1", tmux_session="p/one")
    for sides in ((OURS, THEIRS), (THEIRS, OURS)):
        result = parsed(merge_task(old, mine, remote, sides, RULES, PATH).data)
        kept = (result.status, result.fields["host"], result.fields["workspace"])
        assert kept == ("working", "h3", "p--1")
        assert result.fields["tmux_session"] == "p/one"
