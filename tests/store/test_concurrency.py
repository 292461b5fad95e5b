"""Many writers, one ref: nothing lost, nothing doubled, no stale lock."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pygit2
import pytest

from orange.store import layout
from orange.store.listing import all_tasks
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import REPO_ROOT, git
from tests.store.helpers import put_task

WRITER = [sys.executable, str(Path(__file__).with_name("writer.py"))]
PROCS, UPDATES = 8, 50


def _spawn(*args: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    return subprocess.Popen(
        [*WRITER, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )


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
    tasks = {t.id: t for t in all_tasks(store) if isinstance(t, Task)}
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
            assert isinstance(blob, pygit2.Blob)
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


def _lock_is_held(repo: Path) -> bool:
    """Whether some process holds the store's write lock (probed without waiting)."""
    fd = os.open(repo / ".git" / "orange" / "tasks.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases the probe's lock if it got it
    return False


def _stalled_line(proc: subprocess.Popen[bytes], timeout: float = 60) -> str:
    """The writer's ``stalled STAGE`` line (or whatever it printed before exiting)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "the writer never reached its stage"
    return proc.stdout.readline().decode().strip()


@pytest.mark.parametrize(
    ("stage", "landed"),
    [("compute", False), ("ref", False), ("ref-lock", False), ("wake", True)],
    ids=["in-compute", "before-ref-moves", "holding-git-ref-lock", "after-ref-moved"],
)
def test_writer_killed_mid_write_leaves_valid_ref_and_no_stale_lock(
    repo: Path, stage: str, landed: bool
) -> None:
    """The writer stops at a known point of its third update and says so; it is killed
    there, while it provably holds the lock.  The ref is the last complete write (the
    third one only if the ref had moved), and the next writer gets through at once."""
    store = TaskStore.open(repo)
    put_task(store, "victim")
    proc = _spawn(str(repo), "victim", "k", "3", stage)
    try:
        assert _stalled_line(proc) == f"stalled {stage}", proc.stderr
        assert _lock_is_held(repo)  # the kill lands mid-write
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not _lock_is_held(repo)  # the kernel released it with the process
    # the killed write may leave a dangling commit, never a broken one
    assert git(repo, "fsck", "--no-progress", "--no-dangling") == ""
    assert store.get("victim").fields["w_k"] == (2 if landed else 1)
    started = time.monotonic()
    done = _spawn(str(repo), "victim", "after", "3")
    _, err = done.communicate(timeout=60)
    assert done.returncode == 0, err.decode()
    assert time.monotonic() - started < 30
    task = store.get("victim")
    assert (task.fields["w_after"], task.fields["w_k"]) == (2, 2 if landed else 1)
