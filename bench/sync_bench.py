"""Figures of `orange sync` (bench/README.md, "What `sync_bench.py` measures").

1. a sync of two clones that each changed 1,000 tasks, one commit per change, 100 of
   them the same tasks (summaries changed on both sides: 100 conflicts): a whole
   ``orange sync`` process against a bare hub (fetch, merge commit, push), then the
   merge alone (in-process, of the merge commit's parents); target <= 2 s;
2. bytes one transition sends to a hub holding 10,000 tasks: the thin pack ``git push``
   builds for it (``git pack-objects --thin`` over the new objects); target <= 4 KB;
3. the catch-up after that sync: the forgery check of everything it brought in (their
   commits and the merge, `orange.engine.forgery.verify_new` from our side's tip, as
   the sync and the monitor run it), CPU in-process; target (issue 27, at 5,000 per
   side: ``--per-side 5000``) <= 3 s.

    .venv/bin/python bench/sync_bench.py [--quick] [--per-side N] [--no-wire]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from store_bench import QUICK, Bench, Plan, machine, summary_change


def _changes(bench: Bench, repo: Path, ids: list[str], tag: str) -> None:
    """One commit per task: its summary set to ``tag``, each commit what `task update
    --summary` writes (`summary_change`'s files and message, made from the tip as the
    store would: no task changes twice), written by one ``git fast-import`` (the store's
    own writes took 25 minutes for 10,000 commits at load 15).  Then recorded as
    verified, as this host's monitor verifies its own writes as they come: the catch-up
    measured is what the sync brings in."""
    from orange.engine.forgery import RECORD
    from orange.store import events
    from orange.store.store import TaskStore, _signature

    store = TaskStore.open(repo)
    snap = store.snapshot()
    signature = _signature(store.pygit)  # the store's committer
    # A second apart, the last one now, but never before the tip: dated before the base
    # the two sides share, git's walk from the merge (ours hidden) went on past that base
    # and the catch-up replayed the creation of every task too (`orange.store.since`).
    assert snap.commit is not None
    start = max(int(time.time()) - len(ids), snap.commit.commit_time + 1)

    def commits() -> Iterator[tuple[str, Mapping[str, bytes], int]]:
        for number, task_id in enumerate(ids):
            change = summary_change(task_id, f"{tag} {task_id}")(snap)
            writes = {path: data for path, data in change.writes.items() if data is not None}
            yield events.message(change), writes, start + number

    committer = f"{signature.name} <{signature.email}>"
    tip = bench.import_commits(repo, commits(), committer=committer)
    (store.repo.orange_dir() / RECORD).write_text(f"{tip}\n")


def sync_figure(
    bench: Bench, per_side: int, shared: int
) -> tuple[float, float, float, int, float, int]:
    hub = bench.root / "hub.git"
    bench.git(bench.root, "init", "-q", "--bare", str(hub))
    repo, ids = bench.project("syncbench", 2 * per_side)
    _pack_as_written(repo)
    bench.git(repo, "remote", "add", "origin", str(hub))
    bench.git(repo, "push", "-q", "origin", "main")
    bench.run([bench.orange, "sync", "--setup"], repo)
    bench.run([bench.orange, "sync"], repo)
    other = bench.root / "other"
    bench.git(bench.root, "clone", "-q", str(hub), str(other))
    bench.run([bench.orange, "project", "add", "--name", "syncbench-2"], other)
    _changes(bench, repo, ids[:per_side], "ours")
    _changes(bench, other, ids[per_side - shared : 2 * per_side - shared], "theirs")
    bench.run([bench.orange, "sync"], other)
    # Timed as a teammate runs it: the fetch of B's 1,000 commits is part of the sync.
    start, cpu = time.perf_counter(), _children_cpu()
    bench.run([bench.orange, "sync"], repo)
    whole, cpu = time.perf_counter() - start, _children_cpu() - cpu

    import pygit2

    from orange.engine.merging import plan_merge

    git = pygit2.Repository(str(repo))
    merge = git.references["refs/orange/tasks"].peel(pygit2.Commit)
    ours, theirs = merge.parents  # the merge alone, again, in-process
    start = time.perf_counter()
    plan = plan_merge(git, ours, theirs)
    in_process = time.perf_counter() - start
    catch_up, replayed = catch_up_figure(bench, repo, str(ours.id), str(merge.id))
    return in_process, whole, cpu, len(plan.conflicts), catch_up, replayed


def _pack_as_written(repo: Path) -> None:
    """Pack what `bulk_create`'s one commit left loose (20,000 objects at 10,000 tasks),
    with Orange's own packing: tasks made one write at a time are packed every ~200
    writes (`orange.store.packing`), so a user's base history is in packs.  Left loose,
    the catch-up read the base's trees and blobs from loose files at twice the cost."""
    import pygit2

    from orange.store import layout
    from orange.store.packing import pack_loose

    git = pygit2.Repository(str(repo))
    tip = str(git.references[layout.TASKS_REF].target)
    pack_loose(git, tip, None, repo / ".git" / "objects")


def catch_up_figure(bench: Bench, repo: Path, ours: str, merge: str) -> tuple[float, int]:
    """CPU of verifying what the sync brought in, again: the record put back at our
    side's tip, then `verify_new` to the merge, in a process of its own (as the monitor
    or the next `orange sync` runs it: not in the bench's heap of the set-up's writes);
    (seconds, commits replayed)."""
    from orange.engine.forgery import RECORD
    from orange.store.store import TaskStore

    store = TaskStore.open(repo)
    replayed = int(bench.git(repo, "rev-list", "--count", merge, f"^{ours}"))
    samples = []
    for _ in range(CATCH_UP_RUNS):
        (store.repo.orange_dir() / RECORD).write_text(f"{ours}\n")
        used = subprocess.run(
            [sys.executable, "-c", _CATCH_UP, str(repo), merge],
            env=bench.env,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        samples.append(float(used))
    print(f"catch-up samples, CPU: {', '.join(f'{s:.2f} s' for s in samples)}", flush=True)
    return statistics.median(samples), replayed


CATCH_UP_RUNS = 3


# The child: the catch-up's own CPU, imports left out.
_CATCH_UP = """
import resource, sys
from orange.engine.forgery import verify_new
from orange.engine.trust import trusted_here
from orange.store.store import TaskStore

def cpu():
    used = resource.getrusage(resource.RUSAGE_SELF)
    return used.ru_utime + used.ru_stime

store = TaskStore.open(sys.argv[1])
start = cpu()
found = verify_new(store, trusted=trusted_here, actor="monitor")
used = cpu() - start
assert found.tip == sys.argv[2] and not found.restored, "bench: the catch-up did not end clean"
print(used)
"""


def _children_cpu() -> float:
    """User + system time of the processes the bench waited for (git's too)."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def wire_figure(bench: Bench, tasks: int) -> int:
    hub = bench.root / "hub-big.git"
    bench.git(bench.root, "init", "-q", "--bare", str(hub))
    repo, ids = bench.project("wirebench", tasks)
    bench.git(repo, "remote", "add", "origin", str(hub))
    bench.run([bench.orange, "sync"], repo)
    old = bench.git(repo, "rev-parse", "refs/orange/tasks")
    bench.run([bench.orange, "task", "update", ids[-1], "--summary", "one transition"], repo)
    new = bench.git(repo, "rev-parse", "refs/orange/tasks")
    pack = subprocess.run(
        ["git", "pack-objects", "--stdout", "--thin", "-q", "--revs"],
        cwd=repo, input=f"{new}\n^{old}\n".encode(), capture_output=True, check=True,
        env=bench.env,
    ).stdout  # fmt: skip
    return len(pack)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 tasks per side, 1,000 in the hub")
    parser.add_argument("--per-side", type=int, help="tasks changed on each side (1,000)")
    parser.add_argument("--no-wire", action="store_true", help="leave out figure 2")
    args = parser.parse_args(argv)
    per_side, shared, hub_tasks = (100, 10, 1000) if args.quick else (1000, 100, 10_000)
    if args.per_side:
        per_side, shared = args.per_side, args.per_side // 10
    print(f"sync bench: {machine()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="orange-sync-bench-") as tmp:
        bench = Bench(Path(tmp), QUICK if args.quick else Plan())
        bench.env["ORANGE_MONITOR"] = "off"  # no monitor catching up in the background
        merge_s, sync_s, sync_cpu, conflicts, catch_up, replayed = sync_figure(
            bench, per_side, shared
        )
        wire = None if args.no_wire else wire_figure(bench, hub_tasks)
    rows = [
        (f"merge of {per_side} changed tasks per side ({conflicts} conflicts), in-process",
         f"{merge_s:.2f} s", ""),
        ("`orange sync` of the same, whole process", f"{sync_s:.2f} s",
         f"<= 2 s {_verdict(sync_s <= 2)}"),
        ("the same: CPU (user + system, with git's)", f"{sync_cpu:.2f} s", ""),
        (f"catch-up after it: {replayed} commits verified, CPU", f"{catch_up:.2f} s",
         f"<= 3 s at 5,000 per side {_verdict(catch_up <= 3)}"),
    ]  # fmt: skip
    if wire is not None:
        rows.append((f"bytes pushed for one transition, hub of {hub_tasks} tasks", f"{wire} B",
                     f"<= 4096 B {_verdict(wire <= 4096)}"))  # fmt: skip
    print("| figure | value | target |\n| --- | --- | --- |")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


def _verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


if __name__ == "__main__":
    raise SystemExit(main())
