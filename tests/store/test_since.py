"""`commits_since` answers exactly what one tip reaches and another does not, whatever
the commits' dates: histories of lines and merges with dates in any order, written into
a real repository, against the set difference of two full walks.  Its bounded form
(`commits_since_at_most`) answers the same, or nothing past its limit, having read a few
times that limit of commits at most."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from orange.store import layout, ledgerwalk
from orange.store import since as since_module
from orange.store.since import commits_since, commits_since_at_most
from tests.conftest import examples


def _ancestors(repo: pygit2.Repository, tip: pygit2.Oid) -> set[pygit2.Oid]:
    return {commit.id for commit in repo.walk(tip)}  # no hidden commit: no cut by dates


@st.composite
def histories(draw: st.DrawFn) -> list[tuple[list[int], int]]:
    """Commits as (indexes of earlier commits as parents, date): a root, then each one
    with one or two parents among those before it, mostly the one just before (lines
    longer than git's five steps of slack), dated near its first parent, mostly earlier
    (clocks behind)."""
    size = draw(st.integers(2, 40))
    found: list[tuple[list[int], int]] = [([], 1000)]
    for index in range(1, size):
        back = draw(st.integers(0, index - 1))
        first = draw(st.sampled_from([index - 1, back]))
        parents = [first]
        if index > 2 and draw(st.booleans()):
            other = draw(st.integers(0, index - 1))
            parents += [other] if other != first else []
        found.append((parents, found[first][1] + draw(st.integers(-60, 5))))
    return found


@given(history=histories(), picks=st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)))
@examples(40, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_what_a_tip_has_that_another_has_not_whatever_the_dates(
    tmp_path: Path, history: list[tuple[list[int], int]], picks: tuple[int, int]
) -> None:
    folder = tmp_path / "history"  # one for every example (commits are content-addressed)
    repo = (
        pygit2.Repository(str(folder))
        if folder.exists()
        else pygit2.init_repository(str(folder), bare=True)
    )
    tree = repo.TreeBuilder().write()
    ids: list[pygit2.Oid] = []
    for number, (parents, date) in enumerate(history):
        who = pygit2.Signature("t", "t@example.com", 1000 + date, 0)
        message = f"c{number}"
        ids.append(repo.create_commit(None, who, who, message, tree, [ids[p] for p in parents]))
    tip, since = ids[picks[0] % len(ids)], ids[picks[1] % len(ids)]
    expected = _ancestors(repo, tip) - _ancestors(repo, since)
    found = commits_since(repo, str(tip), str(since))
    _parents_first(found)
    assert {c.id for c in found} == expected
    assert {c.id for c in commits_since(repo, str(tip), None)} == _ancestors(repo, tip)
    bounded = commits_since_at_most(repo, str(tip), str(since), len(history))
    assert bounded is not None
    _parents_first(bounded)
    assert {c.id for c in bounded} == expected
    if expected:
        assert commits_since_at_most(repo, str(tip), str(since), len(expected) - 1) is None


def test_an_octopus_of_unrelated_roots_is_answered_by_one_walk(tmp_path: Path) -> None:
    """A hostile teammate merges more roots of their own than `QUESTIONS`: each question
    about one would read all the history below the hidden commit.  The answer is the
    same, from one walk of that history; the bounded form gives up (walked afresh) past
    `BOUNDED_QUESTIONS`, and answers below them."""
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    tree = repo.TreeBuilder().write()
    who = pygit2.Signature("t", "t@example.com", 1000, 0)
    line = [repo.create_commit(None, who, who, "c0", tree, [])]
    for number in range(1, 50):
        line.append(repo.create_commit(None, who, who, f"c{number}", tree, line[-1:]))
    roots = [
        repo.create_commit(None, who, who, f"root {n}", tree, [])
        for n in range(since_module.QUESTIONS + 8)
    ]
    merge = repo.create_commit(None, who, who, "octopus", tree, [line[-1], *roots])
    found = commits_since(repo, str(merge), str(line[-1]))
    assert {c.id for c in found} == {*roots, merge}
    assert found[-1].id == merge
    assert commits_since_at_most(repo, str(merge), str(line[-1]), 2_000) is None
    few = roots[: since_module.BOUNDED_QUESTIONS]
    fewer = repo.create_commit(None, who, who, "fewer", tree, [line[-1], *few])
    bounded = commits_since_at_most(repo, str(fewer), str(line[-1]), 2_000)
    assert bounded is not None
    assert {c.id for c in bounded} == {*few, fewer}


def _parents_first(found: list[pygit2.Commit]) -> None:
    order = {commit.id: index for index, commit in enumerate(found)}
    assert len(order) == len(found)
    for commit in found:
        assert all(order[p] < order[commit.id] for p in commit.parent_ids if p in order)


@pytest.mark.parametrize("below", [1, 100])
def test_a_line_dated_before_its_base_is_not_walked_past_the_base(
    tmp_path: Path, below: int
) -> None:
    """The case met: a teammate's commits dated before the base both sides share,
    with ``below`` commits below that base."""
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    tree = repo.TreeBuilder().write()

    def commit(date: int, *parents: pygit2.Oid) -> pygit2.Oid:
        who = pygit2.Signature("t", "t@example.com", date, 0)
        return repo.create_commit(None, who, who, "c", tree, list(parents))

    under = commit(8000)
    for step in range(1, below):  # a history below the base, dated after our line
        under = commit(8000 + step, under)
    base = commit(9001, under)
    ours = base
    for _ in range(8):  # more than git's five steps of slack, all older than theirs
        ours = commit(100, ours)
    theirs = commit(500, base)
    merge = commit(9003, ours, theirs)
    walker = repo.walk(merge, pygit2.enums.SortMode.TOPOLOGICAL)
    walker.hide(ours)
    assert base in {c.id for c in walker}  # what git's own walk answers (libgit2's too)
    # (git's walk lists the base and all below it: past `QUESTIONS` of them, the history
    # below ``ours`` is walked once)
    assert [c.id for c in commits_since(repo, str(merge), str(ours))] == [theirs, merge]
    # The bounded walk too, without giving up: its hidden side keeps step with the
    # other and reaches the base before the other side walks far below it (what the
    # other side reached first, the root below a single commit, is asked about).
    bounded = commits_since_at_most(repo, str(merge), str(ours), 20)
    assert bounded is not None
    assert [c.id for c in bounded] == [theirs, merge]


def test_stats_count_each_commit_once_when_a_clock_runs_behind(tmp_path: Path) -> None:
    """The statistics' walk (cached at the tip it read last) goes on from that tip:
    a teammate's commits dated before the base are not counted twice."""
    repo = pygit2.init_repository(str(tmp_path / "r"), bare=True)
    tree = repo.TreeBuilder().write()

    def commit(date: int, task: str, *parents: pygit2.Oid) -> pygit2.Oid:
        who = pygit2.Signature("t", "t@example.com", date, 0)
        message = f"task {task}\n\nOrange-Task: {task}\nOrange-Event: task.updated\n"
        return repo.create_commit(None, who, who, message, tree, list(parents))

    base = commit(9001, "base0001", commit(9000, "root0001"))
    ours = base
    for _ in range(8):  # more than git's five steps of slack, all older than theirs
        ours = commit(100, "ours0001", ours)
    repo.references.create(layout.TASKS_REF, ours)
    cache = tmp_path / "cache"
    cache.mkdir()
    assert len(ledgerwalk.rows(repo, cache)) == 10  # the cache now holds ``ours``
    theirs = commit(500, "their001", base)
    who = pygit2.Signature("t", "t@example.com", 9003, 0)
    merge = repo.create_commit(None, who, who, "sync", tree, [ours, theirs])
    repo.references[layout.TASKS_REF].set_target(merge)
    counted = ledgerwalk.rows(repo, cache)
    assert sorted(row.task for row in counted) == sorted(
        ["root0001", "base0001", *["ours0001"] * 8, "their001"]
    )


class _Counting(pygit2.OdbBackend):
    """The repository's loose objects, each read counted."""

    def __init__(self, objects: Path, seen: set[pygit2.Oid]) -> None:
        super().__init__()
        self.inner, self.seen = pygit2.OdbBackendLoose(str(objects), 0, False), seen

    def read_cb(self, oid: pygit2.Oid) -> tuple[int, bytes]:
        self.seen.add(oid)
        return self.inner.read(oid)

    def read_header_cb(self, oid: pygit2.Oid) -> tuple[int, int]:
        return self.inner.read_header(oid)

    def exists_cb(self, oid: pygit2.Oid) -> bool:
        return self.inner.exists(oid)


def test_the_bounded_walk_reads_a_few_times_its_limit_whatever_the_history(
    tmp_path: Path,
) -> None:
    """Far behind (since the root of a line of 200 commits), asked for at most 5: no
    answer, after reading no more than 3 * (5 + 1) commits, where git's walk with a
    hidden commit reads them all before it answers the first.  Near (10 behind):
    the answer, reading no more either."""
    path = tmp_path / "r"
    made = pygit2.init_repository(str(path), bare=True)
    tree = made.TreeBuilder().write()
    line: list[pygit2.Oid] = []
    for number in range(200):
        who = pygit2.Signature("t", "t@example.com", 1000 + number, 0)
        line.append(made.create_commit(None, who, who, f"c{number}", tree, line[-1:]))

    def counted() -> tuple[pygit2.Repository, set[pygit2.Oid]]:
        read: set[pygit2.Oid] = set()
        odb = pygit2.Odb()
        odb.add_backend(_Counting(path / "objects", read), 1)
        repo = pygit2.Repository()
        repo.set_odb(odb)
        return repo, read

    repo, read = counted()
    assert commits_since_at_most(repo, str(line[-1]), str(line[0]), 5) is None
    assert 0 < len(read) <= 3 * (5 + 1)
    repo, read = counted()
    near = commits_since_at_most(repo, str(line[-1]), str(line[-11]), 20)
    assert near is not None
    assert [c.id for c in near] == line[-10:]
    assert 10 < len(read) <= 3 * (20 + 1)
