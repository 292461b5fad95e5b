from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orange.errors import BrokenTaskFile
from orange.store.task import Task
from orange.store.taskfile import join, split

# Strings YAML 1.1 would read as something else when written bare.
TRAPS = [
    "no",
    "No",
    "on",
    "off",
    "yes",
    "y",
    "n",
    "true",
    "null",
    "~",
    "2024-01-01",
    "2024-01-01T10:00:00Z",
    "007",
    "123",
    "1e3",
    "1.5",
    ".inf",
    "0x1F",
    "1_000",
    "12:30",
    "-",
    "",
    " padded ",
    "#hash",
    "a: b",
    "'quoted'",
    "[list]",
    "{map}",
]


@pytest.mark.parametrize("value", TRAPS, ids=repr)
def test_yaml_traps_round_trip_as_the_strings_they_were(value: str) -> None:
    fm = {"id": "abc", "summary": value, "custom": value}
    parsed, body = split(join(fm, "body"))
    assert parsed == fm
    assert body == "body"


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("no", "no"),
        ("on", "on"),
        ("2024-01-01", "2024-01-01"),
        ("123", "123"),
        ("1.5", "1.5"),
        ("007", "007"),
        ("yes", "yes"),
    ],
    ids=lambda v: str(v),
)
def test_hand_written_bare_traps_read_back_as_strings(written: str, expected: str) -> None:
    task = Task.parse(f"---\nid: abc\nsummary: {written}\n---\n", where="t")
    assert task.fields["summary"] == expected


def test_key_order_is_kept_and_unknown_keys_survive() -> None:
    text = "---\nzeta: 1\nid: abc\nalpha: x\nnested:\n  b: 1\n  a: 2\n---\nbody\n"
    task = Task.parse(text, where="t")
    assert list(task.fields) == ["zeta", "id", "alpha", "nested"]
    again = Task.parse(task.render(), where="t")
    assert list(again.fields) == ["zeta", "id", "alpha", "nested"]
    assert again.fields["nested"] == {"b": 1, "a": 2}
    assert list(again.fields["nested"]) == ["b", "a"]


BODIES = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300)


@settings(max_examples=200, deadline=None)
@given(body=BODIES, summary=st.text(max_size=40))
def test_body_and_summary_survive_byte_for_byte(body: str, summary: str) -> None:
    fm = {"id": "abc", "summary": summary, "review_round": 2, "attention": None}
    text = join(fm, body)
    parsed, parsed_body = split(text)
    assert parsed_body == body
    assert parsed == fm
    assert join(parsed, parsed_body) == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no frontmatter", "does not start"),
        ("---\nid: a\n", "no closing"),
        ("---\nid: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\nsummary: x\n---\n", "has no 'id'"),
        ("---\nid: ../../etc\n---\n", "not a valid task id"),
    ],
    ids=["no-fence", "unclosed", "bad-yaml", "not-mapping", "missing-id", "escaping-id"],
)
def test_broken_files_say_why(text: str, reason: str) -> None:
    with pytest.raises(BrokenTaskFile, match=reason):
        Task.parse(text, where="tasks/ab/x/TASK.md")
