"""What one monitor pass costs at 1,000 tasks, 50 of them active with live agents.

Prints the median wall time of `orange.monitor.loop.run_pass()` and how many tmux and
git processes one pass starts (the goal: O(1), whatever the number of tasks).  Runs in
a throwaway repository with its own ORANGE_HOME and tmux server.

    .venv/bin/python bench/monitor_bench.py
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TASKS, ACTIVE, RUNS = 1000, 50, 7


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="orange-monbench-"))
    socket = f"orange-monbench-{os.getpid()}"
    os.environ.update(
        HOME=str(root),
        ORANGE_HOME=str(root / "home"),
        ORANGE_TMUX_SOCKET=socket,
        ORANGE_HOST="bench",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_NAME="b",
        GIT_AUTHOR_EMAIL="b@b",
        GIT_COMMITTER_NAME="b",
        GIT_COMMITTER_EMAIL="b@b",
        ORANGE_MONITOR="off",
    )
    try:
        repo = root / "proj"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        subprocess.run(
            ["git", "-C", str(repo), "commit", "-q", "--allow-empty", "-m", "i"], check=True
        )
        _populate(repo, socket)
        from orange.monitor import loop as monitor

        monitor.run_pass()  # warm the listing cache
        calls = _count_processes(monitor.run_pass)
        times = []
        for _ in range(RUNS):
            started = time.perf_counter()
            report = monitor.run_pass()
            times.append(time.perf_counter() - started)
        print(f"monitor pass at {TASKS} tasks ({ACTIVE} active, agents alive):")
        print(f"  median wall time  {statistics.median(times) * 1000:8.1f} ms  ({RUNS} runs)")
        print(f"  tasks checked     {report.checked:8d}")
        print(f"  tmux processes    {calls.get('tmux', 0):8d} per pass")
        print(f"  git processes     {calls.get('git', 0):8d} per pass")
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
        shutil.rmtree(root, ignore_errors=True)


def _populate(repo: Path, socket: str) -> None:
    from orange import projects
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task
    from orange.store.events import Change
    from orange.store.store import Snapshot, TaskStore
    from orange.store.task import Task

    project = projects.add(repo, pool_size=ACTIVE)
    store = TaskStore.open(repo)
    template = create_task(store, project, load_named("default"), summary="template")
    writes: dict[str, bytes | None] = {template.path: None}
    for n in range(TASKS):
        task_id = f"t{n:07d}"
        active = n < ACTIVE
        session = f"proj/b{n}"
        fields = dict(
            template.fields,
            id=task_id,
            branch=f"b{n}",
            status="working" if active else "done",
            summary=f"task {n}",
            tmux_session=session if active else None,
            workspace=f"proj--{n + 1}" if active else None,
        )
        task = Task(fields=fields, body="\n## Notes\n\nbench\n")
        writes[task.path] = task.render().encode()
        if active:
            window = [
                "tmux",
                "-L",
                socket,
                "new-session",
                "-d",
                "-s",
                session,
                "-n",
                "worker",
                "sleep 600",
            ]
            subprocess.run(window, check=True)

    def compute(snap: Snapshot) -> Change:
        return Change("bench", "bench.populate", "bench: populate", writes)

    store.commit(compute)


def _count_processes(fn: object) -> dict[str, int]:
    counts: dict[str, int] = {}
    original = subprocess.Popen.__init__

    def counting(self: subprocess.Popen[bytes], args: object, *a: object, **k: object) -> None:
        argv = args if isinstance(args, list | tuple) else [args]
        name = Path(str(argv[0])).name
        counts[name] = counts.get(name, 0) + 1
        original(self, args, *a, **k)  # type: ignore[arg-type]

    subprocess.Popen.__init__ = counting  # type: ignore[method-assign,assignment]
    try:
        fn()  # type: ignore[operator]
    finally:
        subprocess.Popen.__init__ = original  # type: ignore[method-assign]
    return counts


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    main()
