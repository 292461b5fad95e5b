"""Many writers, one ref: nothing lost, nothing doubled, no stale lock."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from orange.store import layout
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import REPO_ROOT, git
from tests.store.helpers import put_task

WRITER = [sys.executable, str(Path(__file__).with_name("writer.py"))]
PROCS, UPDATES = 8, 50


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen([*WRITER, *args], env=env, stderr=subprocess.PIPE)


def _updates_in_history(repo: Path) -> list[str]:
    log = git(repo, "log", "--format=%s", layout.TASKS_REF)
    return [line for line in log.splitlines() if ": updated w_" in line]


@pytest.mark.parametrize("same_task", [False, True], ids=["eight-tasks", "one-task"])
def test_eight_writers_fifty_updates_each_lose_nothing(repo: Path, same_task: bool) -> None:
    store = TaskStore.open(repo)
    ids = ["shared"] if same_task else [f"task{p}" for p in range(PROCS)]
    for task_id in ids:
        put_task(store, task_id)
    procs = [
        _spawn(str(repo), ids[0] if same_task else ids[p], f"p{p}", str(UPDATES))
        for p in range(PROCS)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()
    updates = _updates_in_history(repo)
    assert len(updates) == PROCS * UPDATES
    # Walk the history: each update commit introduces exactly one new (writer, n) value,
    # and together they are every one of the 400 updates.
    introduced = _values_introduced(store, ids)
    assert sorted(introduced) == sorted(
        (f"w_p{p}", n) for p in range(PROCS) for n in range(UPDATES)
    )
    tasks = {t.id: t for t in store.tasks() if isinstance(t, Task)}
    for p in range(PROCS):
        task = tasks[ids[0] if same_task else ids[p]]
        assert task.fields[f"w_p{p}"] == UPDATES - 1  # no lost field
    assert git(repo, "fsck", "--no-progress", "--connectivity-only") == ""


def _values_introduced(store: TaskStore, ids: list[str]) -> list[tuple[str, int]]:
    repo = store.pygit
    commits = list(repo.walk(repo.references[layout.TASKS_REF].target))
    commits.reverse()
    previous: dict[str, dict[str, object]] = {}
    introduced: list[tuple[str, int]] = []
    for commit in commits:
        new_values = []
        for task_id in ids:
            path = layout.task_path(task_id)
            try:
                blob = commit.tree[path]
            except KeyError:
                continue
            fields = Task.parse(blob.data.decode(), where=path).fields
            old = previous.get(task_id, {})
            new_values += [
                (k, v) for k, v in fields.items() if k.startswith("w_") and old.get(k) != v
            ]
            previous[task_id] = dict(fields)
        if "Orange-Fields: w_" in commit.message:
            assert len(new_values) == 1, (commit.message, new_values)
        introduced += new_values
    return introduced


def test_writer_killed_mid_write_leaves_valid_ref_and_no_stale_lock(
    repo: Path, tmp_path: Path
) -> None:
    store = TaskStore.open(repo)
    put_task(store, "victim")
    before = git(repo, "rev-parse", layout.TASKS_REF)
    ready = tmp_path / "ready"
    proc = _spawn(str(repo), "victim", "k", "-1", str(ready))
    deadline = time.monotonic() + 30
    while not ready.exists():
        assert time.monotonic() < deadline, "writer never took the lock"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert git(repo, "rev-parse", layout.TASKS_REF) == before
    started = time.monotonic()
    done = _spawn(str(repo), "victim", "after", "3")
    _, err = done.communicate(timeout=60)
    assert done.returncode == 0, err.decode()
    assert time.monotonic() - started < 30
    task = store.get("victim")
    assert task.fields["w_after"] == 2


def test_random_kills_during_a_write_loop_keep_the_ref_valid(repo: Path) -> None:
    store = TaskStore.open(repo)
    put_task(store, "loop")
    for delay in (0.35, 0.5, 0.65):
        proc = _spawn(str(repo), "loop", "r", "1000")
        time.sleep(delay)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        git(repo, "cat-file", "-e", f"{layout.TASKS_REF}^{{tree}}")
        assert isinstance(store.get("loop"), Task)
    after = _spawn(str(repo), "loop", "final", "2")
    _, err = after.communicate(timeout=60)
    assert after.returncode == 0, err.decode()
    assert store.get("loop").fields["w_final"] == 1
