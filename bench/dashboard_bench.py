"""Measure the dashboard at 10,000 tasks (issue 12, "Performance").

Prints two figures beside their targets, each a median of several runs:

1. first paint: from building the app to its first drawn table, headless, with a warm
   store cache (target <= 1.5 s);
2. the CPU a refresh costs after one task changed (one commit by someone else, then the
   dashboard's look at the ref, the re-read of the changed shard and the changed cells;
   target <= 50 ms), and the same with Textual's repaint of the visible rows.

Everything happens in a temporary directory (removed at the end) with its own HOME,
ORANGE_HOME and git identity.  ``--tasks N`` changes the size, ``--strict`` exits 1 on
a miss.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from store_bench import bulk_create, hermetic_env  # a sibling script

PAINT_TARGET = 1.5
REFRESH_TARGET = 0.050


def _project(root: Path, tasks: int) -> Any:
    from orange import projects

    repo = root / "proj"
    repo.mkdir()
    for args in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *args], cwd=repo, check=True)
    project = projects.add(repo, name="proj", pool_size=3, workflow="default")
    bulk_create(repo, tasks)
    return project


def _change(repo: Path, task_id: str, number: int) -> None:
    """One task changed by someone else (a plain write to the ref)."""
    from orange.store.events import Change
    from orange.store.layout import task_path
    from orange.store.store import Snapshot, TaskStore

    store = TaskStore.open(repo)
    task = store.get(task_id).with_fields(summary=f"changed {number}")
    text = task.with_body(store.get(task_id).body).render().encode()

    def compute(snap: Snapshot) -> Change:
        return Change(task_id, "task.updated", "bench change", {task_path(task_id): text})

    store.commit(compute)


async def _measure(
    project: Any, repo: Path, ids: list[str], runs: int
) -> tuple[float, float, float]:
    from orange.dashboard.app import make_app

    paints: list[float] = []
    refreshes: list[float] = []
    repaints: list[float] = []
    for run in range(runs):
        start = time.perf_counter()
        app = make_app([project], poll=False)
        async with app.run_test(size=(160, 50)) as pilot:
            await pilot.pause()
            paints.append(time.perf_counter() - start)
            _change(repo, ids[run * 7 % len(ids)], run)
            cpu = time.process_time()
            app.watch_refs()
            refreshes.append(time.process_time() - cpu)
            await pilot.pause()
            repaints.append(time.process_time() - cpu)
    return statistics.median(paints), statistics.median(refreshes), statistics.median(repaints)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="How many tasks.")
    parser.add_argument("--runs", type=int, default=5, help="Samples per figure.")
    parser.add_argument("--strict", action="store_true", help="Exit 1 on a missed target.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="orange-dash-bench-") as tmp:
        root = Path(tmp)
        os.environ.update(hermetic_env(root), ORANGE_MONITOR="off")
        os.chdir(root)
        project = _project(root, args.tasks)
        ids = sorted(bulk_ids(project))
        from orange.dashboard.source import Source

        Source([project]).refresh()  # the store's cache, warm (as after any `task list`)
        paint, refresh, repaint = asyncio.run(_measure(project, Path(project.path), ids, args.runs))
    ok_paint, ok_refresh = paint <= PAINT_TARGET, refresh <= REFRESH_TARGET
    print(f"dashboard at {args.tasks:,} tasks ({args.runs} runs, medians)")
    print(f"1. first paint, warm cache: {paint * 1000:7.0f} ms  (target <= 1500 ms) "
          f"{'PASS' if ok_paint else 'MISS'}")  # fmt: skip
    print(f"2. refresh CPU, one change: {refresh * 1000:7.1f} ms  (target <= 50 ms) "
          f"{'PASS' if ok_refresh else 'MISS'}")  # fmt: skip
    print(f"   with Textual's repaint:  {repaint * 1000:7.1f} ms  (the visible rows drawn again)")
    return 1 if args.strict and not (ok_paint and ok_refresh) else 0


def bulk_ids(project: Any) -> list[str]:
    from orange.projects import open_store

    return [entry.task_dir.rsplit("/", 1)[-1] for entry in open_store(project).snapshot().entries()]


if __name__ == "__main__":
    sys.exit(main())
