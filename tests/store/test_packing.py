"""The store packs its own loose objects as writes pile up (`orange.store.packing`):
the objects of the commits since the last pack go into one pack, only those that were
loose, and reading them afterwards is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from orange.store import layout, packing
from orange.store.store import TaskStore
from tests.conftest import git, packs
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
    assert packed <= _loose(repo)  # the loose copies stay (for git gc to prune)
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
