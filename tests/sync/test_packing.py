"""A sync with many local commits packs them while it fetches and merges, so the push
reads them from a pack; a small one packs nothing (`orange.sync.packing`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from orange.store import layout
from orange.sync import packing
from tests.conftest import git, packs
from tests.sync.conftest import Clone

Clones = Callable[[int], list[Clone]]


def _made_on(clone: Clone, count: int) -> set[str]:
    """``count`` tasks created on the clone; the commits of its tasks ref that its last
    fetch did not bring."""
    for n in range(count):
        clone.create(f"made on a {n}")
    return set(
        git(clone.path, "rev-list", f"refs/orange/remotes/origin/tasks..{layout.TASKS_REF}").split()
    )


@pytest.fixture
def diverged(clones: Clones, monkeypatch: pytest.MonkeyPatch) -> tuple[Clone, Clone]:
    a, b = clones(2)
    a.create("shared")
    a.ok("sync")
    b.ok("sync")
    b.create("made on b")
    b.ok("sync")
    monkeypatch.setattr(packing, "MIN_COMMITS", 3)
    return a, b


def test_a_sync_of_many_local_commits_pushes_them_from_one_new_pack(
    diverged: tuple[Clone, Clone], hub: Path
) -> None:
    a, _b = diverged
    mine = _made_on(a, 3)
    before = packs(a.path)
    result = a.ok("sync", "--json").json()
    assert result["pushed"] and len(result["merges"]) == 1
    new = [objects for name, objects in packs(a.path).items() if name not in before]
    assert len(new) == 1 and mine <= new[0]  # a's three commits, and their trees and blobs
    trees = {git(a.path, "rev-parse", f"{commit}^{{tree}}").strip() for commit in mine}
    assert trees <= new[0]
    hub_commits = set(git(hub, "rev-list", layout.TASKS_REF).split())
    assert mine | {result["merges"][0]} <= hub_commits


def test_a_sync_of_fewer_local_commits_packs_nothing(diverged: tuple[Clone, Clone]) -> None:
    a, _b = diverged
    _made_on(a, 2)
    before = packs(a.path)
    assert a.ok("sync", "--json").json()["pushed"]
    assert packs(a.path) == before


def test_commits_already_packed_are_not_packed_again(
    diverged: tuple[Clone, Clone], hub: Path
) -> None:
    a, _b = diverged
    mine = _made_on(a, 3)
    git(a.path, "repack", "-q", "-d")  # as `git gc` leaves them: packed, no loose copies
    before = packs(a.path)
    assert a.ok("sync", "--json").json()["pushed"]
    assert packs(a.path) == before
    assert mine <= set(git(hub, "rev-list", layout.TASKS_REF).split())
