"""A concurrent writer process for the concurrency tests (run as a script)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from orange.engine.edits import update_fields
from orange.store.events import Change
from orange.store.store import Snapshot, TaskStore


def main() -> None:
    repo, task_id, who, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    store = TaskStore.open(repo)
    if count < 0:  # hold the lock mid-write forever, to be killed
        ready = Path(sys.argv[5])

        def stall(snap: Snapshot) -> Change:
            ready.write_text("holding")
            time.sleep(600)
            raise AssertionError("not reached")

        store.commit(stall)
        return
    for n in range(count):
        update_fields(store, task_id, {f"w_{who}": n})


if __name__ == "__main__":
    main()
