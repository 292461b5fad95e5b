"""Property: three clones working on the same tasks at random (creates, legal moves,
edits, cancels), syncing in random order and then until quiet, end identical; every
commit of every clone is in the hub, whose ``update`` hook took every push; every task
parses, and the replay checker passes on the final history."""

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
STEPS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.integers(0, 2), st.integers(0, 9)),
    min_size=6,
    max_size=10,
)
# Each example builds a hub and three clones and syncs through the hook: few of them.
_PROFILE = settings.get_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
EXAMPLES = _PROFILE.max_examples if _PROFILE.max_examples > 15 else 2
WORKFLOW = load_named("default")


def _step(clone: Clone, kind: str, choice: int, n: int) -> None:
    ids = [t.id for t in listing.all_tasks(TaskStore.open(clone.path))]
    if kind == "create" or (not ids and kind != "sync"):
        clone.create(f"task {n}")
        return
    if kind == "sync":
        clone.ok("sync")
        return
    task_id = sorted(ids)[choice % len(ids)]
    if kind == "move":
        status = TaskStore.open(clone.path).get(task_id).status
        targets = WORKFLOW.targets_from(status)
        if not targets:
            return
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


@settings(
    max_examples=EXAMPLES,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=STEPS)
def test_three_clones_converge(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, steps: list[tuple[str, int, int]]
) -> None:
    registry, _ = recording_registry()
    monkeypatch.setattr(compose, "runtime", lambda: compose.Runtime(registry, None, None))
    clones = _world(cli, monkeypatch, tmp_path)
    for n, (kind, which, choice) in enumerate(steps):
        _step(clones[which], kind, choice, n)
    for _round in range(4):  # until quiet: a round in which no sync wrote anything
        tips = [c.commits() for c in clones]
        for clone in clones:
            clone.ok("sync")
        if [c.commits() for c in clones] == tips and len({c.tree() for c in clones}) == 1:
            break
    hub = clones[0].path.parent / "hub.git"
    assert len({c.tree() for c in clones}) == 1
    hub_commits = set(git(hub, "rev-list", layout.TASKS_REF).split())
    assert set().union(*(c.commits() for c in clones)) <= hub_commits
    store = TaskStore.open(hub)
    assert all(isinstance(task, Task) for task in listing.all_tasks(store))
    for task in listing.all_tasks(store):
        store.get(task.id)  # body and all
    tip = git(hub, "rev-parse", layout.TASKS_REF).strip()
    merges = git(hub, "rev-list", "--merges", "--count", layout.TASKS_REF).strip()
    event(f"merge commits: {merges}")
    assert check_history(store.pygit, tip, trusted=trusted_here) == []


def _world(cli: Cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Clone]:
    import tempfile  # a fresh folder per example (the fixtures are per test)

    from orange.githooks import shims as githooks
    from tests.conftest import make_repo

    base = Path(tempfile.mkdtemp(dir=tmp_path))
    repo = make_repo(base / "origin")
    hub = base / "hub.git"
    git(base, "init", "-q", "--bare", str(hub))
    githooks.install_server_hook(hub)
    git(repo, "push", "-q", str(hub), "main")
    clones = []
    for index in range(3):
        path = base / f"clone{index}"
        git(base, "clone", "-q", str(hub), str(path))
        clone = Clone(cli, monkeypatch, path, f"host{index}")
        clone.ok("project", "add", "--name", "proj")
        clones.append(clone)
    return clones
