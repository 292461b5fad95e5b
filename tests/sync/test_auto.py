"""Automatic sync: ``--sync-interval`` kept per project, and the monitor's pass syncing
on that interval and shortly after a local write."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from orange.store import layout
from tests.conftest import git
from tests.helpers import retry_until
from tests.sync.conftest import Clone


def _hub_has(hub: Path, task_id: str) -> bool:
    listing = git(hub, "ls-tree", "-r", "--name-only", layout.TASKS_REF, check=False)
    return layout.task_path(task_id) in listing.split()


def test_the_interval_is_kept_and_bad_values_are_refused(
    clones: Callable[[int], list[Clone]],
) -> None:
    (a,) = clones(1)
    assert (
        a.ok("project", "update", "--sync-interval", "2m", "--json").json()["sync_interval"] == 120
    )
    registry = json.loads((a.path.parent / "home-host0" / "projects.json").read_text())
    assert registry["projects"][0]["sync_interval"] == 120
    bad = a("project", "update", "--sync-interval", "soon")
    assert bad.code == 1 and "sync interval 'soon' is not Ns, Nm or off" in bad.err
    assert (
        a.ok("project", "update", "--sync-interval", "off", "--json").json()["sync_interval"] == 0
    )


def test_the_monitor_syncs_on_its_interval_and_after_a_local_write(
    clones: Callable[[int], list[Clone]], hub: Path
) -> None:
    a, b = clones(2)
    first = a.create("pushed by the monitor")
    a.ok("monitor", "--once")  # interval off: nothing leaves
    assert not _hub_has(hub, first)
    for clone in (a, b):
        clone.ok("project", "update", "--sync-interval", "60m")
    a.ok("monitor", "--once")  # never synced: due at once
    assert _hub_has(hub, first)
    b.ok("monitor", "--once")
    assert b.ok("task", "show", first, "--json").json()["summary"] == "pushed by the monitor"
    second = a.create("a local write")  # well before the interval: pushed once settled
    a.ok("monitor", "--once")
    assert not _hub_has(hub, second)  # a write is pushed after the debounce, not during it
    retry_until(
        lambda: a.ok("monitor", "--once") and _hub_has(hub, second), timeout=20, interval=0.5
    )
