"""What Orange's writes leave on disk: ``.git`` growth, loose objects and packs over
20,000 transitions, and whether the user's own ``git`` then owes a gc.

A registered project of ``TASKS`` tasks, packed once (``git gc``, as a repository a
user has had for a while), then ``TRANSITIONS`` writes of the store, each a new summary
of one task (what ``orange task update --summary`` commits), in this process so the
figure is the store's and not start-up's.  After every write: the packs in
``.git/objects/pack`` (the most at any point is printed); every 100 writes: the loose
objects.  At the end, once any background repack the writes started has exited:

- ``.git``'s growth in bytes of disk (allocated blocks, not file sizes) per transition;
- loose objects and packs, at most and at the end;
- ``git gc --auto``: whether git finds anything to do (``git count-objects -v`` against
  ``gc.auto`` = 6,700 loose objects and ``gc.autoPackLimit`` = 50 packs, its defaults),
  then the time it takes when run (``gc.autoDetach`` off, so it is timed).

Targets (issue 27): <= 2 KB of disk per transition over 20,000, <= 10 packs at any
point, no automatic gc owed because of Orange's writes.  Run it on another commit's
Orange with ``PYTHONPATH=DIR`` (an export: ``git archive COMMIT orange | tar -x -C DIR``)
for a before/after.

    .venv/bin/python bench/disk_bench.py [--tasks N] [--transitions N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store_bench import QUICK, Bench, machine, summary_change

TASKS = 10_000
TRANSITIONS = 20_000
GC_AUTO, GC_AUTO_PACKS = 6_700, 50  # git's defaults for gc.auto and gc.autoPackLimit


def disk(folder: Path) -> int:
    """Bytes of disk the files under ``folder`` take (their allocated blocks)."""
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_blocks * 512
            except FileNotFoundError:  # a pack a repack just removed
                pass
    return total


def loose(objects: Path) -> int:
    count = 0
    for name in os.listdir(objects):
        if len(name) == 2:
            try:
                count += len(os.listdir(objects / name))
            except FileNotFoundError:  # emptied and removed by a background repack
                pass
    return count


def packs(objects: Path) -> int:
    return sum(name.endswith(".pack") for name in os.listdir(objects / "pack"))


def count_objects(bench: Bench, repo: Path) -> dict[str, int]:
    lines = bench.git(repo, "count-objects", "-v").splitlines()
    return {key: int(value) for key, value in (line.split(": ") for line in lines)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=TASKS)
    parser.add_argument("--transitions", type=int, default=TRANSITIONS)
    options = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="orange-disk-bench-"))
    try:
        bench = Bench(root, QUICK)
        import orange

        print(f"disk bench: {machine()}; Orange from {Path(orange.__file__).parent}")
        run(bench, options.tasks, options.transitions)
        print(f"load average after: {os.getloadavg()[0]:.1f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def run(bench: Bench, tasks: int, transitions: int) -> None:
    from orange.store import layout
    from orange.store.store import TaskStore

    repo, ids = bench.project("disk", tasks)
    bench.git(repo, "gc", "-q")
    git_dir, objects = repo / ".git", repo / ".git" / "objects"
    start = disk(git_dir)
    print(f"{tasks:,} tasks, packed: .git {start / 2**20:.1f} MiB; {transitions:,} transitions")
    store = TaskStore.open(repo)
    most_packs = most_loose = 0
    began = time.perf_counter()
    for number in range(transitions):
        task_id = ids[(number * 7919) % len(ids)]

        store.commit(summary_change(task_id, f"edited {number}"))
        most_packs = max(most_packs, packs(objects))
        if number % 100 == 99:
            most_loose = max(most_loose, loose(objects))
        if number % 5000 == 4999:
            print(f"  {number + 1:,} written, {time.perf_counter() - began:.0f} s", flush=True)
    lock = git_dir / "orange" / "repack.lock"
    if lock.exists():  # wait for a background repack the writes started (git holds it)
        import fcntl

        with lock.open() as held:
            fcntl.flock(held, fcntl.LOCK_EX)
    end = disk(git_dir)
    counts = count_objects(bench, repo)
    owed = counts["count"] > GC_AUTO or counts["packs"] > GC_AUTO_PACKS
    commits = int(bench.git(repo, "rev-list", "--count", layout.TASKS_REF))
    growth = (end - start) / transitions
    print(f"  .git {start / 2**20:.1f} -> {end / 2**20:.1f} MiB:"
          f" {growth / 1024:.2f} KiB a transition"
          f"   target <= 2 KB: {'PASS' if growth <= 2000 else 'MISS'}")  # fmt: skip
    print(f"  packs: at most {most_packs}, at the end {counts['packs']}"
          f"   target <= 10: {'PASS' if most_packs <= 10 else 'MISS'}")  # fmt: skip
    print(f"  loose objects: at most {most_loose:,}, at the end {counts['count']:,}")
    print(f"  git gc --auto owed: {'yes' if owed else 'no'}"
          f"   target no: {'PASS' if not owed else 'MISS'}")  # fmt: skip
    timed = time.perf_counter()
    defaults = ("-c", f"gc.auto={GC_AUTO}", "-c", f"gc.autoPackLimit={GC_AUTO_PACKS}")
    bench.git(repo, *defaults, "-c", "gc.autoDetach=false", "gc", "--auto", "--quiet")
    print(f"  git gc --auto took {time.perf_counter() - timed:.2f} s; commits {commits:,}")


if __name__ == "__main__":
    raise SystemExit(main())
