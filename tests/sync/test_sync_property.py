"""Property: three clones working on the same tasks at random (creates, legal moves,
edits, cancels, syncs), then syncing in a random order each round until a round is
quiet, end identical; every commit of every clone is in the hub, whose ``update`` hook
ran on every push and accepted it; every task parses, and the replay checker passes on
the final history."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from orange import compose
from orange.engine.catalog import load_named
from orange.engine.replay import check_history
from orange.engine.trust import trusted_here
from orange.store import layout, listing
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import Cli, git
from tests.githooks.test_replay_property import _content
from tests.recording import recording_registry
from tests.sync.conftest import Clone

KINDS = ("create", "move", "move", "move", "edit", "summary", "cancel", "sync")
# Step n is (KINDS[(kind + n) % 8], clone (which + n) % 3, choice): drawn as offsets
# from a cycle, so even the simplest example (all zeros, which Hypothesis tries first)
# creates, moves, edits, cancels and syncs on every clone.
STEPS = st.lists(
    st.tuples(st.integers(0, len(KINDS) - 1), st.integers(0, 2), st.integers(0, 9)),
    min_size=6,
    max_size=8,
)
# The order the clones sync in, one per round of the syncs until quiet (three rounds
# always suffice: the last clone of the first round holds everything); round r's order
# is shifted by r, so the simplest example's rounds differ too.
ROUNDS = 4
ORDERS = st.lists(st.permutations(range(3)), min_size=ROUNDS, max_size=ROUNDS)
# Each example builds a hub and three clones and syncs through the hook: few of them.
_PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
EXAMPLES = _PROFILE.max_examples if _PROFILE.max_examples > 15 else 2
WORKFLOW = load_named("default")


def _step(clone: Clone, kind: str, choice: int, n: int) -> int:
    """One step on ``clone``; how many pushes it made (a sync's: 0 or 1)."""
    ids = [t.id for t in listing.all_tasks(TaskStore.open(clone.path))]
    if kind == "create" or (not ids and kind != "sync"):
        clone.create(f"task {n}")
        return 0
    if kind == "sync":
        return int(clone.ok("sync", "--json").json()["pushed"])
    task_id = sorted(ids)[choice % len(ids)]
    if kind == "move":
        status = TaskStore.open(clone.path).get(task_id).status
        targets = WORKFLOW.targets_from(status)
        if not targets:
            return 0
        target = targets[0 if choice < 6 else choice % len(targets)]
        for t in WORKFLOW.transitions_between(status, target):
            if t.gate is not None:
                name = t.gate.section.removeprefix("## ")
                text = _content(t.gate.section, target, n)
                clone("task", "edit", task_id, "--section", name, "--file", "-", stdin=text)
        clone("task", "update", task_id, "--status", target)
    elif kind == "edit":
        clone("task", "edit", task_id, "--section", "Notes", "--file", "-", stdin=f"{n}\n")
    elif kind == "summary":
        clone("task", "update", task_id, "--summary", f"summary {n}")
    else:
        clone("task", "cancel", "--yes", task_id)
    return 0


@settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS, orders=ORDERS)
def test_three_clones_converge(
    cli: Cli,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    steps: list[tuple[int, int, int]],
    orders: list[list[int]],
) -> None:
    registry, _ = recording_registry()
    monkeypatch.setattr(compose, "runtime", lambda: compose.Runtime(registry, None, None))
    clones, hub = _world(cli, monkeypatch, tmp_path)
    pushes = 0
    for n, (kind, which, choice) in enumerate(steps):
        pushes += _step(clones[(which + n) % 3], KINDS[(kind + n) % len(KINDS)], choice, n)
    quiet, shifted = False, [[(i + r) % 3 for i in order] for r, order in enumerate(orders)]
    for order in shifted:  # until quiet: a round in which no sync wrote anything
        tips = [c.commits() for c in clones]
        for which in order:
            pushes += int(clones[which].ok("sync", "--json").json()["pushed"])
        if [c.commits() for c in clones] == tips:
            quiet = True
            break
    event(f"first sync order: {shifted[0]}")
    assert quiet and len({c.tree() for c in clones}) == 1
    hub_commits = set(git(hub, "rev-list", layout.TASKS_REF).split())
    assert set().union(*(c.commits() for c in clones)) <= hub_commits
    # The hook ran on every push that moved the tasks (each sync above exited 0: none
    # was refused), and the hub's tip is the last one it let through.
    checked = (hub / "checked").read_text().split()
    tip = git(hub, "rev-parse", layout.TASKS_REF).strip()
    assert len(checked) == pushes and checked[-1] == tip
    store = TaskStore.open(hub)
    assert all(isinstance(task, Task) for task in listing.all_tasks(store))
    for task in listing.all_tasks(store):
        store.get(task.id)  # body and all
    merges = git(hub, "rev-list", "--merges", "--count", layout.TASKS_REF).strip()
    event(f"merge commits: {merges}")
    assert check_history(store.pygit, tip, trusted=trusted_here) == []


def _world(cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[list[Clone], Path]:
    """Three clones of a fresh hub with the server hook, and the hub, where a hook
    chained before Orange's (``update.orange-chained``) notes each new tip pushed."""
    import tempfile  # a fresh folder per example (the fixtures are per test)

    from orange.githooks import shims as githooks
    from tests.conftest import make_repo

    base = Path(tempfile.mkdtemp(dir=tmp_path))
    repo = make_repo(base / "origin")
    hub = base / "hub.git"
    git(base, "init", "-q", "--bare", str(hub))
    githooks.install_server_hook(hub)
    noting = hub / "hooks" / "update.orange-chained"
    noting.write_text(f'#!/bin/sh\n[ "$1" != {layout.TASKS_REF} ] || echo "$3" >> "$PWD/checked"\n')
    noting.chmod(0o755)
    git(repo, "push", "-q", str(hub), "main")
    clones = []
    for index in range(3):
        path = base / f"clone{index}"
        git(base, "clone", "-q", str(hub), str(path))
        clone = Clone(cli, monkeypatch, path, f"host{index}")
        clone.ok("project", "add", "--name", "proj")
        clones.append(clone)
    return clones, hub
