"""The conflict scan (`orange.runtime.conflicts`) at 30 active branches of 20 commits each
over a 5,000-file repository, and what it adds to a monitor pass.

Prints CPU seconds (this process and the git processes it waits for) of: the first scan
(no answers kept yet), a rescan after one branch moved by one commit, a rescan after
nothing moved; then the median CPU of a monitor pass over the same project (its 30
tasks active, nothing moved) with the scan on and off.  Targets (issue 29): first scan
under 3 s, rescan under 0.5 s CPU; a pass with the scan on at most +20% when no branch
moved.  Five of the branches edit one shared file (ten conflicting pairs), one deletes
a file (every pair with it goes to git).  Runs in a throwaway repository with its own
ORANGE_HOME.

    .venv/bin/python bench/conflicts_bench.py
"""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import pygit2

from store_bench import isolate

FOLDERS, FILES = 50, 100  # 5,000 files
BRANCHES, COMMITS = 30, 20
SHARED = "d49/f0.txt"  # edited by the first five branches
RUNS = 7


def cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def timed(action: Callable[[], object]) -> float:
    before = cpu()
    action()
    return cpu() - before


def write(repo: pygit2.Repository, tree: pygit2.Tree, path: str, text: str | None) -> pygit2.Oid:
    """``tree`` with the file at ``path`` (folder/name) set to ``text`` (None: removed)."""
    folder, name = path.split("/")
    inner = repo.TreeBuilder(repo[tree[folder].id])
    if text is None:
        inner.remove(name)
    else:
        inner.insert(name, repo.create_blob(text.encode()), pygit2.GIT_FILEMODE_BLOB)
    outer = repo.TreeBuilder(tree)
    outer.insert(folder, inner.write(), pygit2.GIT_FILEMODE_TREE)
    return outer.write()


def build(path: Path) -> pygit2.Repository:
    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    repo = pygit2.Repository(str(path))
    sig = pygit2.Signature("bench", "bench@example.com")
    root = repo.TreeBuilder()
    for d in range(FOLDERS):
        folder = repo.TreeBuilder()
        for f in range(FILES):
            blob = repo.create_blob(f"folder {d} file {f}\n".encode() * 20)
            folder.insert(f"f{f}.txt", blob, pygit2.GIT_FILEMODE_BLOB)
        root.insert(f"d{d}", folder.write(), pygit2.GIT_FILEMODE_TREE)
    base = repo.create_commit("refs/heads/main", sig, sig, "initial", root.write(), [])
    for b in range(BRANCHES):
        tip = base
        for c in range(COMMITS):
            tree = repo[tip].peel(pygit2.Commit).tree
            if c == 0 and b < 5:
                new = write(repo, tree, SHARED, f"shared, as branch {b} has it\n")
            elif c == 0 and b == 5:
                new = write(repo, tree, "d48/f0.txt", None)
            else:
                new = write(repo, tree, f"d{b}/f{c}.txt", f"branch {b} commit {c}\n")
            tip = repo.create_commit(None, sig, sig, f"b{b} c{c}", new, [tip])
        repo.references.create(f"refs/heads/b{b}", tip)
    return repo


def register(path: Path) -> tuple[object, object, list[object]]:
    """The project, its store, and its 30 active tasks (one a branch) in the ref."""
    from orange import projects
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task
    from orange.store.events import Change
    from orange.store.store import Snapshot, TaskStore
    from orange.store.task import Task

    project = projects.add(path, pool_size=2)
    store = TaskStore.open(path)
    template = create_task(store, project, load_named("default"), summary="t", park=True)
    writes: dict[str, bytes | None] = {template.path: None}
    tasks = []
    for b in range(BRANCHES):
        fields = dict(template.fields, id=f"c{b:07d}", branch=f"b{b}", status="working")
        task = Task(fields=fields, body="\n## Notes\n\nbench\n")
        writes[task.path] = task.render().encode()
        tasks.append(task)

    def compute(snap: Snapshot) -> Change:
        return Change("bench", "bench.populate", "bench: populate", writes)

    store.commit(compute)
    return project, store, tasks


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="orange-conflictbench-"))
    isolate(
        root,
        ORANGE_TMUX_SOCKET=f"orange-conflictbench-{os.getpid()}",
        ORANGE_HOST="bench",
        ORANGE_MONITOR="off",
    )
    try:
        path = root / "proj"
        repo = build(path)
        from orange.monitor import loop as monitor
        from orange.runtime import conflicts

        project, store, _tasks = register(path)

        def scan() -> dict[str, object]:
            return dict(conflicts.predicted(store, store.snapshot(), project))  # type: ignore[arg-type]

        found: dict[str, object] = {}
        first = timed(lambda: found.update(scan()))
        pairs = sum(len(v) for v in found.values()) // 2  # type: ignore[arg-type]
        sig = pygit2.Signature("bench", "bench@example.com")
        moved = repo.references["refs/heads/b7"].peel(pygit2.Commit)
        tree = write(repo, moved.tree, "d7/f99.txt", "moved\n")
        repo.create_commit("refs/heads/b7", sig, sig, "move", tree, [moved.id])
        rescan = timed(scan)
        still = statistics.median(timed(scan) for _ in range(RUNS))
        shape = f"{BRANCHES} branches x {COMMITS} commits, {FOLDERS * FILES:,} files"
        print(f"conflict scan, {shape} ({pairs} pairs, {len(found)} tasks conflict):")
        print(f"  first scan           {first:6.3f} s CPU   (target < 3 s)")
        print(f"  rescan, one moved    {rescan:6.3f} s CPU   (target < 0.5 s)")
        print(f"  rescan, none moved   {still * 1000:6.1f} ms CPU")

        monitor.run_pass()
        with_scan = statistics.median(timed(monitor.run_pass) for _ in range(RUNS))
        monitor.predicted = lambda *args: {}  # type: ignore[attr-defined]
        without = statistics.median(timed(monitor.run_pass) for _ in range(RUNS))
        extra = (with_scan / without - 1) * 100 if without else 0.0
        print(f"monitor pass, {BRANCHES} active tasks, nothing moved (median of {RUNS}):")
        print(f"  scan on              {with_scan * 1000:6.1f} ms CPU")
        print(f"  scan off             {without * 1000:6.1f} ms CPU   ({extra:+.0f}%; target +20%)")
        print(f"load average at the end: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
