"""A concurrent writer process for the concurrency tests (run as a script).

``writer.py REPO TASK WHO COUNT [STAGE]`` makes COUNT field updates.  With STAGE, the
last update stops at that point of the store's write, prints ``stalled STAGE`` on
stdout and waits there to be killed (test-only hooks wrapped around the store's steps):

- ``compute``: inside the lock, while the mutation is computed (nothing written yet);
- ``ref``: the new tree and commit are written, the ref has not moved;
- ``ref-lock``: as libgit2 is when killed inside its ref update: holding git's
  ``<ref>.lock`` (created here as libgit2 creates it), the ref not moved;
- ``wake``: the ref has moved, the monitor is not woken and the lock not yet released.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Any

from orange.engine.edits import update_fields
from orange.store import layout
from orange.store import store as store_module
from orange.store.events import Change
from orange.store.store import Snapshot, TaskStore

STAGES = ("compute", "ref", "ref-lock", "wake")


def stall(stage: str) -> None:
    print(f"stalled {stage}", flush=True)
    time.sleep(600)
    raise AssertionError("not killed")


def arm(store: TaskStore, stage: str) -> None:
    """Make the next write stop at ``stage``."""
    if stage == "compute":
        real_commit = store.commit

        def commit(compute: Callable[[Snapshot], Change | None]) -> Change | None:
            def stalling(snap: Snapshot) -> Change | None:
                change = compute(snap)
                stall(stage)
                return change

            return real_commit(stalling)

        store.commit = commit  # type: ignore[method-assign, assignment]
    elif stage in ("ref", "ref-lock"):

        def move_ref(*args: Any) -> bool:
            if stage == "ref-lock":
                lock = store.repo.common_dir / f"{layout.TASKS_REF}.lock"
                os.close(os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            stall(stage)
            return False

        store_module._move_ref = move_ref  # type: ignore[assignment]
    elif stage == "wake":
        store._wake = lambda: stall(stage)  # type: ignore[method-assign]
    else:
        raise SystemExit(f"unknown stage {stage!r} (known: {', '.join(STAGES)})")


def main() -> None:
    repo, task_id, who, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    stage = sys.argv[5] if len(sys.argv) > 5 else None
    store = TaskStore.open(repo)
    for n in range(count):
        if stage is not None and n == count - 1:
            arm(store, stage)
        update_fields(store, task_id, {f"w_{who}": n})


if __name__ == "__main__":
    main()
