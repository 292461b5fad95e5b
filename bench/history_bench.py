"""What ``orange task log`` costs on a long history, with and without its cache.

A task's history is found by git's path-limited walk over every commit of the tasks ref
(`orange.store.history`) and kept per task in a cache.  A fresh clone, a rewritten ref
or a deleted cache has none, and the first ``task log`` walks.  For each size: a
registered project of ``TASKS`` tasks, then that many commits each changing one
task's summary as ``orange task update --summary`` would (written with ``git
fast-import``, then packed as a clone receives them, and recorded as verified, as
``orange project add`` records a clone's tip: the forgery check's
catch-up is not what is measured here).  Printed:

- ``git log refs/orange/tasks -- tasks/<shard>/<id>`` for one task (the reference: what
  git pays to find one path's commits), wall time;
- ``orange task log ID`` without its cache (``history.sqlite3`` deleted): wall, CPU
  (user + system, with git's) and peak memory (the larger of Orange's and git's);
- the same with the cache (warm), and after ``EXTRA`` more commits (the cache extended
  by what is new);
- the extension alone (`history._extension`, in a process of its own, each run on a
  fresh repository object): the commits 100 and 2,000 behind the tip, and the whole
  history behind it (more than `EXTEND`: it gives up, and the task is walked afresh);
- Orange's commit-graph with changed-path filters (`orange.store.commitgraph`: in a
  folder of Orange's own, as a clone's first sync starts it in the background), its
  cost, the cold ``task log`` again with it, and the cost of its next layer after
  1,000 more commits.

Target (issue 27): at 100,000 commits, the cold ``task log`` <= 2 s wall and <= 150 MiB.

    .venv/bin/python bench/history_bench.py [--sizes 10000 100000] [--runs N] [--code DIR]

``--code DIR`` runs the ``orange`` processes on the Orange package in DIR (an export of
another commit: ``git archive COMMIT orange | tar -x -C DIR``), for a before/after.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_bench import QUICK, Bench, machine

SIZES = (10_000, 100_000)
TASKS = 1_000
RUNS = 3
EXTRA = 100


def fast_import(bench: Bench, repo: Path, ids: list[str], count: int, start: int = 0) -> None:
    """``count`` commits on the tasks ref, commit ``n`` a new summary of one task."""
    from orange.store import layout
    from orange.store.store import TaskStore

    store = TaskStore.open(repo)
    texts = {task_id: store.body_of(store.get(task_id)) for task_id in ids[:200]}
    stamp = 1_780_000_000

    def commits() -> Iterator[tuple[str, dict[str, bytes], int]]:
        for number in range(start, start + count):
            task_id = ids[(number * 7919) % len(texts)]
            head, _, rest = texts[task_id].partition("\nsummary: ")
            body = f"{head}\nsummary: edited {number}\n{rest.partition(chr(10))[2]}".encode()
            message = (
                f"task {task_id}: summary\n\nOrange-Task: {task_id}\n"
                "Orange-Event: task.updated\nOrange-Actor: bench\nOrange-Fields: summary\n"
            )
            yield message, {layout.task_path(task_id): body}, stamp + number

    tip = bench.import_commits(repo, commits())
    (repo / ".git" / "orange" / "verified").write_text(f"{tip}\n")  # (the catch-up: not here)


def timed_process(
    bench: Bench,
    args: Sequence[str],
    cwd: Path,
    *,
    stdin: str | None = None,
    env: dict[str, str] | None = None,
) -> tuple[float, float, float]:
    """(wall s, CPU s, peak MiB) of one process.  The peak is GNU time's ``%M``: a child
    forked from this process keeps this process's peak across ``exec`` in its own
    ``ru_maxrss`` (Linux), and this one holds 100,000 commits' import text."""
    report = bench.root / "peak"
    start = time.perf_counter()
    process = subprocess.Popen(
        ["/usr/bin/time", "-f", "%M", "-o", str(report), *args],
        cwd=cwd,
        env={**bench.env, **(env or {})},
        stdin=subprocess.PIPE if stdin is not None else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    if stdin is not None:
        assert process.stdin is not None
        process.stdin.write(stdin.encode())
        process.stdin.close()
    _pid, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        assert process.stderr is not None
        raise SystemExit(f"bench: {' '.join(args)} failed: {process.stderr.read().decode()}")
    return wall, usage.ru_utime + usage.ru_stime, int(report.read_text().split()[-1]) / 1024


EXTENSION = """
import statistics, sys, time
import pygit2
from orange.store import history
path, tip, task, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
for since in sys.argv[5:]:
    times = []
    for _ in range(runs):
        repo = pygit2.Repository(path)
        start = time.process_time()
        found = history._extension(repo, tip, since, task)
        times.append(time.process_time() - start)
    print("-" if found is None else len(found), statistics.median(times))
"""


def extension(bench: Bench, repo: Path, task_id: str, behind: list[int], runs: int) -> list[str]:
    """CPU ms of `history._extension` from ``behind`` commits back to the tip (median of
    ``runs``), and the rows it found ("-": more than `EXTEND`, walked afresh)."""
    from orange.store import layout

    tip = bench.git(repo, "rev-parse", layout.TASKS_REF)
    sinces = [bench.git(repo, "rev-parse", f"{tip}~{n}") for n in behind]
    args = [sys.executable, "-c", EXTENSION, str(repo / ".git"), tip, task_id, str(runs)]
    return bench.run([*args, *sinces], repo, out=True).splitlines()


def no_graph(repo: Path) -> None:
    """Wait for a graph update `task log` started in the background, and drop the
    graph: the figures before it are without one."""
    import fcntl

    from orange.store import commitgraph

    orange_dir = repo / ".git" / "orange"
    with open(orange_dir / commitgraph.LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
    commitgraph.remove(orange_dir)


def one_size(bench: Bench, commits: int, runs: int) -> list[str]:
    from orange.store import commitgraph, layout

    repo, ids = bench.project(f"history{commits}", TASKS)
    fast_import(bench, repo, ids, commits)
    bench.git(repo, "repack", "-a", "-d", "-q")  # as a clone receives it: one pack
    task_id = ids[(7 * 7919) % 200]
    index = repo / ".git" / "orange" / "history.sqlite3"
    git_log = ["git", "log", "--format=%H", layout.TASKS_REF, "--", layout.task_dir(task_id)]
    log = [bench.orange, "task", "log", task_id]
    reference, cold, warm = [], [], []
    for _ in range(runs):
        reference.append(timed_process(bench, git_log, repo))
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        cold.append(timed_process(bench, log, repo))
        no_graph(repo)  # (the cold walk started one in the background)
        warm.append(timed_process(bench, log, repo))
    fast_import(bench, repo, ids, EXTRA, start=commits)
    extended = timed_process(bench, log, repo)
    no_graph(repo)
    behind = [100, 2_000, commits]
    walks = [line.split() for line in extension(bench, repo, task_id, behind, max(runs, 3))]
    shown = bench.run(log, repo, out=True).count("\n")
    listed = len(bench.git(repo, *git_log[1:]).splitlines())
    # Orange's own commit-graph (`orange.store.commitgraph`), written as a clone's first
    # sync or the store's packing starts it in the background, here in the foreground.
    orange_dir = repo / ".git" / "orange"
    graph_update = commitgraph.command(str(repo / ".git"), orange_dir)
    tip = bench.git(repo, "rev-parse", layout.TASKS_REF)
    env = commitgraph._write_env(orange_dir)
    assert env is not None
    graph = timed_process(bench, graph_update, repo, stdin=f"{tip}\n", env=env)
    (commitgraph.folder(orange_dir) / commitgraph.TIP).write_text(f"{tip}\n")
    filtered = []
    for _ in range(runs):
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
        filtered.append(timed_process(bench, log, repo))
    fast_import(bench, repo, ids, 1_000, start=commits + EXTRA)
    tip = bench.git(repo, "rev-parse", layout.TASKS_REF)
    layer = timed_process(bench, graph_update, repo, stdin=f"{tip}\n", env=env)

    def med(samples: list[tuple[float, float, float]], at: int) -> float:
        return statistics.median(sample[at] for sample in samples)

    ok = med(cold, 0) <= 2.0 and med(cold, 2) <= 150
    verdict = "PASS" if ok else "MISS"
    return [
        f"{commits:,} commits, {TASKS:,} tasks; task {task_id}: {shown} entries"
        f" (git log: {listed})",
        f"  git log -- <path>           wall {med(reference, 0):6.2f} s",
        f"  task log, no cache (cold)   wall {med(cold, 0):6.2f} s  CPU {med(cold, 1):6.2f} s"
        f"  peak {med(cold, 2):5.0f} MiB   target <= 2 s, <= 150 MiB: {verdict}",
        f"  task log, cache built       wall {med(warm, 0):6.2f} s  CPU {med(warm, 1):6.2f} s"
        f"  peak {med(warm, 2):5.0f} MiB",
        f"  after {EXTRA} more commits     wall {extended[0]:6.2f} s  CPU {extended[1]:6.2f} s"
        f"  peak {extended[2]:5.0f} MiB",
        "  the extension alone, CPU    "
        + ", ".join(
            f"{n:,} behind {float(cpu) * 1000:.1f} ms ({rows} rows)"
            for n, (rows, cpu) in zip(behind, walks, strict=True)
        ),
        f"  Orange's commit-graph       wall {graph[0]:6.2f} s  CPU {graph[1]:6.2f} s"
        f"  peak {graph[2]:5.0f} MiB  (once; in the background)",
        f"  then task log, no cache     wall {med(filtered, 0):6.2f} s"
        f"  CPU {med(filtered, 1):6.2f} s  peak {med(filtered, 2):5.0f} MiB",
        f"  graph layer, 1,000 commits  wall {layer[0]:6.2f} s  CPU {layer[1]:6.2f} s"
        f"  peak {layer[2]:5.0f} MiB",
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--code", type=Path, help="run the orange processes on this copy")
    options = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="orange-history-bench-"))
    try:
        bench = Bench(root, QUICK)
        bench.env["ORANGE_MONITOR"] = "off"  # no monitor catching up in the background
        if options.code is not None:
            bench.env["PYTHONPATH"] = str(options.code.resolve())
        print(f"history bench: {machine()}" + (f", code {options.code}" if options.code else ""))
        for size in options.sizes:
            for line in one_size(bench, size, options.runs):
                print(line, flush=True)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
