"""What ``orange stats`` costs on a long tasks history (issue 30's target: 10,000
tasks and 100,000 commits answered in under 2 s warm).

A history is generated straight with pygit2 (`tests/ledger_history.py`): ``TASKS``
tasks, each created, moved through planning, working and agent review (with a usage
record), some sent back once, most done, the rest cancelled, until ``COMMITS`` commits.
Printed: the cold answer (no cache: every message read) and the warm one (the cache
keyed by the tip), wall and CPU time in this process, with the machine's load.

    .venv/bin/python bench/stats_bench.py [--tasks 10000] [--commits 100000]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import pygit2

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from orange.ops.stats import collect
from orange.store.store import TaskStore
from tests.ledger_history import Event, write

STEPS = (
    ("task.created", None),
    ("status.changed", ("pending", "planning")),
    ("status.changed", ("planning", "working")),
    ("status.changed", ("working", "agent-review")),
    ("status.changed", ("agent-review", "working")),
    ("status.changed", ("working", "agent-review")),
    ("status.changed", ("agent-review", "reviewing")),
    ("status.changed", ("reviewing", "done")),
    ("agent.crashed", None),
    ("task.updated", None),
)


def history(tasks: int, commits: int) -> tuple[list[tuple[str, dict[str, str]]], list[Event]]:
    ids = [f"t{n:07d}" for n in range(tasks)]
    fields = [
        (i, {"harness": ("claude", "codex", "pi")[n % 3], "summary": f"task {n}"})
        for n, i in enumerate(ids)
    ]
    events: list[Event] = []
    for n in range(commits):
        task = ids[n % tasks]
        step = (n // tasks) % len(STEPS)
        event, move = STEPS[step]
        usage = (
            (1200, 80, 900, "0.010325", "claude-opus-4-8", 60)
            if move and move[1] == "agent-review"
            else None
        )
        events.append(Event(n, task, event, move, usage))
    return fields, events


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--commits", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "repo"
        repo = pygit2.init_repository(str(path))
        started = time.perf_counter()
        write(repo, *history(args.tasks, args.commits))
        took = time.perf_counter() - started
        print(f"generated {args.tasks} tasks, {args.commits} commits in {took:.1f} s")
        store = TaskStore.open(path)
        for label in ("cold", "warm", "warm"):
            started, cpu = time.perf_counter(), time.process_time()
            report = collect([("bench", store)]).report()
            took, used = time.perf_counter() - started, time.process_time() - cpu
            print(f"{label}: {took:.2f} s wall, {used:.2f} s CPU ({report['tasks']['done']} done)")
        print(f"load average after: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
