"""The store packs its own loose objects as writes pile up (`orange.store.packing`):
the objects of the commits since the last pack go into one pack, only those that were
loose, their loose copies go, and reading them afterwards is unchanged; the packs are
merged geometrically in the background, so neither loose objects nor packs pile up and
nothing is lost."""

from __future__ import annotations

from pathlib import Path

import pygit2
import pytest

from orange.store import commitgraph, layout, packing
from orange.store.lock import exclusive
from orange.store.store import TaskStore
from tests.conftest import git, packs
from tests.helpers import retry_until
from tests.store.helpers import put_task, set_field


def _loose(repo: Path) -> set[str]:
    objects = repo / ".git" / "objects"
    return {f"{d.name}{f.name}" for d in objects.glob("[0-9a-f][0-9a-f]") for f in d.iterdir()}


def _objects(repo: Path, commits: str) -> set[str]:
    """The commits of the range and every object they add (their trees and blobs)."""
    return {line.split()[0] for line in git(repo, "rev-list", "--objects", commits).splitlines()}


def test_writes_pack_the_objects_written_since_the_last_pack(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TaskStore.open(repo)
    put_task(store, "first")  # the first write starts the count
    start = git(repo, "rev-parse", layout.TASKS_REF).strip()
    monkeypatch.setattr(packing, "DUE_BYTES", 2048)  # a dozen writes or so
    assert packs(repo) == {}
    for n in range(60):
        set_field(store, "first", "summary", f"summary {n}")
        if packs(repo):
            break
    (name, packed), *more = packs(repo).items()
    tip = git(repo, "rev-parse", layout.TASKS_REF).strip()
    assert more == [] and packed == _objects(repo, f"{start}..{tip}")
    assert not packed & _loose(repo)  # their loose copies are gone
    assert f"{tip}\n" in (repo / ".git" / "orange" / "packed").read_text().split(" ", 1)[1]

    set_field(store, "first", "summary", "one more")  # not due again yet
    assert list(packs(repo)) == [name]
    assert TaskStore.open(repo).get("first").summary == "one more"
    assert git(repo, "fsck", "--no-dangling").strip() == ""


def test_only_loose_objects_are_packed(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "first")
    start = git(repo, "rev-parse", layout.TASKS_REF).strip()
    for n in range(3):
        set_field(store, "first", "summary", f"summary {n}")
    middle = git(repo, "rev-parse", layout.TASKS_REF).strip()
    git(repo, "repack", "-q", "-d")  # as git gc leaves them: packed, no loose copies
    before = packs(repo)
    set_field(store, "first", "summary", "after the repack")
    tip = git(repo, "rev-parse", layout.TASKS_REF).strip()
    objects = repo / ".git" / "objects"
    count = packing.pack_loose(store.pygit, tip, start, objects)
    new = [objects for name, objects in packs(repo).items() if name not in before]
    assert len(new) == 1 and new[0] == _objects(repo, f"{middle}..{tip}")
    assert count == len(new[0])


def test_a_teammate_s_commits_dated_before_the_base_are_not_walked_past(repo: Path) -> None:
    """The last pack at a line of commits dated before the base it shares with a
    teammate's (a clock behind), then a sync merge: git's walk from the merge with that
    line hidden trusts dates and went on past the base, reading every commit below it.
    What is packed is what the merge reaches and the line does not, as full walks say."""
    store = TaskStore.open(repo)
    pygit = store.pygit

    def commit(date: int, text: str, *parents: pygit2.Oid) -> pygit2.Oid:
        builder = pygit.TreeBuilder()
        builder.insert("f", pygit.create_blob(text.encode()), pygit2.enums.FileMode.BLOB)
        who = pygit2.Signature("t", "t@example.com", date, 0)
        return pygit.create_commit(None, who, who, text, builder.write(), list(parents))

    base = commit(9001, "base", commit(9000, "root"))
    ours = base
    for n in range(8):  # more than git's five steps of slack, all older than theirs
        ours = commit(100, f"ours {n}", ours)
    merge = commit(9003, "sync", ours, commit(500, "theirs", base))
    before = packs(repo)
    packing.pack_loose(pygit, str(merge), str(ours), repo / ".git" / "objects")
    new = [objects for name, objects in packs(repo).items() if name not in before]
    assert new == [_objects(repo, str(merge)) - _objects(repo, str(ours))]


def test_a_marker_that_is_not_ours_starts_the_count_again(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TaskStore.open(repo)
    put_task(store, "first")
    marker = repo / ".git" / "orange" / "packed"
    monkeypatch.setattr(packing, "DUE_BYTES", 2048)
    for written in ("garbage\n", f"0 {'0' * 40}\n"):  # unreadable; a commit not here
        marker.write_text(written)
        for n in range(60):  # until a write near a multiple of DUE_BYTES looks at it
            set_field(store, "first", "summary", f"{written} {n}")
            if marker.read_text() != written:
                break
        tip = git(repo, "rev-parse", layout.TASKS_REF).strip()
        assert marker.read_text().split()[1] == tip and packs(repo) == {}


def _rolled_up(repo: Path) -> None:
    """Wait for a repack `packing.start_rollup` started (git holds the lock)."""
    with exclusive(repo / ".git" / "orange" / packing.ROLLUP_LOCK):
        pass


def test_many_writes_leave_neither_loose_objects_nor_packs_piling_up(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = TaskStore.open(repo)
    for name in ("first", "second", "third"):
        put_task(store, name)
    monkeypatch.setattr(packing, "DUE_BYTES", 1024)  # a pack every six writes or so
    most_loose = most_packs = 0
    for n in range(150):  # 25 packs' worth: 25 packs and 900 loose files before
        set_field(store, ("first", "second", "third")[n % 3], "summary", f"summary {n}")
        if n % 5 == 4:
            _rolled_up(repo)
            most_loose = max(most_loose, len(_loose(repo)))
            most_packs = max(most_packs, len(packs(repo)))
    assert most_loose < 100  # the writes since the last pack (~40 objects), no more
    assert 1 < most_packs <= 8  # a geometric series of ~900 objects in ~40s
    assert git(repo, "fsck", "--no-dangling", "--connectivity-only").strip() == ""
    store = TaskStore.open(repo)
    assert [store.get(name).summary for name in ("first", "second", "third")] == [
        "summary 147",
        "summary 148",
        "summary 149",
    ]
    assert int(git(repo, "rev-list", "--count", layout.TASKS_REF)) == 153


def test_the_background_repack_keeps_unreferenced_objects_and_its_repository(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A concurrent writer's object not yet named by a ref survives the rollup, and a
    git hook's ``GIT_DIR`` or object folder does not point the repack elsewhere."""
    store = TaskStore.open(repo)
    put_task(store, "first")
    for n in range(3):
        set_field(store, "first", "summary", f"summary {n}")
        git(repo, "repack", "-q")  # a pack each, loose copies kept
    (repo / "pending").write_text("written, not committed yet\n")
    pending = git(repo, "hash-object", "-w", "pending").strip()
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    monkeypatch.setenv("GIT_DIR", str(other))
    monkeypatch.setenv("GIT_OBJECT_DIRECTORY", str(other / "objects"))
    assert packing.start_rollup(repo / ".git")
    _rolled_up(repo)
    monkeypatch.delenv("GIT_DIR")
    monkeypatch.delenv("GIT_OBJECT_DIRECTORY")
    assert len(packs(repo)) == 1 and _loose(repo) == set()
    assert git(repo, "cat-file", "blob", pending) == "written, not committed yet\n"
    assert TaskStore.open(repo).get("first").summary == "summary 2"
    assert not list((other / "objects" / "pack").iterdir())


def test_writes_keep_orange_s_commit_graph_current_outside_the_user_s_objects(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once a history is long enough, the store's periodic pack also brings Orange's
    commit-graph up to its tip (in the background); the repository's own objects folder,
    which the user's git reads, gets none."""
    store = TaskStore.open(repo)
    put_task(store, "first")
    monkeypatch.setattr(packing, "DUE_BYTES", 1024)  # a pack every six writes or so
    monkeypatch.setattr(commitgraph, "WORTH", 10)
    orange = repo / ".git" / "orange"
    for n in range(40):
        set_field(store, "first", "summary", f"summary {n}")
    covered = retry_until(lambda: commitgraph.covered_tip(orange), timeout=30, what="a graph")
    assert int(git(repo, "rev-list", "--count", covered)) >= 10
    assert not list((repo / ".git" / "objects" / "info").glob("commit-graph*"))
    _rolled_up(repo)
    with exclusive(orange / commitgraph.LOCK):  # (an update still running: its end)
        pass
