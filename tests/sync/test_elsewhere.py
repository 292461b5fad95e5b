"""A task a teammate's host runs shows as ``running on HOST`` here, and only then."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from orange import compose
from tests.recording import recording_registry
from tests.sync.conftest import Clone


def test_a_task_bound_on_another_host_shows_where_it_runs(
    clones: Callable[[int], list[Clone]], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry, _ = recording_registry()  # no agent starts: the runtime is recorded
    monkeypatch.setattr(compose, "runtime", lambda: compose.Runtime(registry, None, None))
    a, b = clones(2)
    started, waiting = a.create("started on b"), a.create("still pending")
    a.ok("sync")
    b.ok("sync")
    b.ok("task", "update", started, "--status", "planning")
    b.ok("sync")
    a.ok("sync")
    shown = a.ok("task", "show", started, "--json").json()
    assert (shown["status"], shown["host"], shown["running_on"]) == ("planning", "host1", "host1")
    assert "running_on" not in a.ok("task", "show", waiting, "--json").json()
    assert "running on host1 (never started or stopped here)" in a.ok("task", "show", started).out
    rows = {line.split()[0]: line for line in a.ok("task", "list").out.splitlines()[1:]}
    assert "running on host1" in rows[started] and "running on" not in rows[waiting]
    assert "running on" not in b.ok("task", "list").out  # its own host
