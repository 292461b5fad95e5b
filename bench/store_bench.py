"""Measure the task store the way agents use it: whole `orange` processes.

Run with ``make bench``.  Prints four figures, each a median of several runs, beside
its target (DESIGN §2) and PASS/MISS:

1. ``orange task update ID --summary S`` against a bare ``python -c "import pygit2"``;
2. ``orange task list --json`` at 10, 1,000 and 10,000 tasks, cold and warm cache;
3. bytes one update adds at 10,000 tasks: loose objects, and packed after ``git gc``
   (plus the time of one update inside an already running process);
4. eight concurrent CLI writers against one sequential writer: rate and lost updates.

Everything happens in a temporary directory (removed at the end) with its own HOME,
ORANGE_HOME, git identity and host name, and without the caller's ``PYTHON*`` variables
(``PYTHONDONTWRITEBYTECODE`` would make every process recompile Orange).  ``--quick``
takes fewer samples, ``--only N`` runs one figure, ``--strict`` exits 1 on a miss.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from orange.store.events import Change
    from orange.store.store import Snapshot

HOST = "benchhost"
LIST_SIZES = (10, 1_000, 10_000)
BIG = 10_000
WRITERS = 8


@dataclass(frozen=True)
class Plan:
    """How many samples each figure takes."""

    startup_runs: int = 11
    cold_runs: int = 3
    warm_runs: int = 7
    loose_runs: int = 7
    packed_updates: int = 200
    updates_per_writer: int = 5
    throughput_rounds: int = 3


QUICK = Plan(
    startup_runs=5,
    cold_runs=3,
    warm_runs=3,
    loose_runs=3,
    packed_updates=50,
    updates_per_writer=3,
    throughput_rounds=1,
)


@dataclass(frozen=True)
class Row:
    figure: str
    value: str
    target: str
    ok: bool | None  # None: informational, no target


# Environment -------------------------------------------------------------------------


def hermetic_env(root: Path) -> dict[str, str]:
    """The environment of every process the bench starts (and of the bench itself)."""
    home = root / "home"
    home.mkdir()
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Orange Bench\n\temail = bench@example.com\n"
        "[init]\n\tdefaultBranch = main\n[gc]\n\tauto = 0\n"
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GIT_", "ORANGE_", "PYTHON"))
    }
    env.update(
        HOME=str(home),
        ORANGE_HOME=str(home / "orange"),
        ORANGE_HOST=HOST,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
        GIT_AUTHOR_NAME="Orange Bench",
        GIT_AUTHOR_EMAIL="bench@example.com",
        GIT_COMMITTER_NAME="Orange Bench",
        GIT_COMMITTER_EMAIL="bench@example.com",
    )
    return env


def isolate(root: Path, **extra: str) -> dict[str, str]:
    """Make this process's environment `hermetic_env` plus ``extra`` (a bench's in-process
    work then uses the same home as the processes it starts); returns it."""
    env = hermetic_env(root) | extra
    os.environ.clear()
    os.environ.update(env)
    return env


def summary_change(task_id: str, summary: str) -> Callable[[Snapshot], Change]:
    """A store write as ``orange task update ID --summary S`` makes it, for `commit`."""
    from orange.store.events import Change

    def compute(snap: Snapshot) -> Change:
        task = snap.task(task_id)
        assert task is not None
        new = task.with_fields(summary=summary)
        return Change(
            task_id=task_id,
            event="task.updated",
            subject=f"task {task_id}: summary",
            writes={new.path: new.render().encode()},
        )

    return compute


class Bench:
    def __init__(self, root: Path, plan: Plan) -> None:
        self.root = root
        self.plan = plan
        self.env = isolate(root)  # the in-process bulk writes use the same home
        self.python = sys.executable
        self.orange = str(Path(sys.executable).with_name("orange"))
        if not Path(self.orange).is_file():
            raise SystemExit(f"bench: no {self.orange}; run it as `make bench`")
        self.rows: list[Row] = []

    # Processes ---------------------------------------------------------------------
    def run(self, args: Sequence[str], cwd: Path, *, out: bool = False) -> str:
        result = subprocess.run(
            list(args),
            cwd=cwd,
            env=self.env,
            stdout=subprocess.PIPE if out else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            raise SystemExit(
                f"bench: {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}"
            )
        return result.stdout if out else ""

    def timed(self, args: Sequence[str], cwd: Path) -> float:
        start = time.perf_counter()
        self.run(args, cwd)
        return time.perf_counter() - start

    def git(self, repo: Path, *args: str) -> str:
        """The bench's own git commands, without the hooks `orange project add` installs
        (``git gc`` would wake Orange's reference-transaction hook in the background, to
        outlive the bench).  Orange's own writes go through libgit2, which runs no hooks.
        """
        no_hooks = self.root / "no-hooks"
        no_hooks.mkdir(exist_ok=True)
        command = ["git", "-c", f"core.hooksPath={no_hooks}", *args]
        return self.run(command, repo, out=True).strip()

    # Fixtures ------------------------------------------------------------------------
    def project(self, name: str, tasks: int) -> tuple[Path, list[str]]:
        """A registered repository with ``tasks`` pending tasks; returns it and the ids."""
        repo = self.root / name
        repo.mkdir()
        self.git(repo, "init", "-q", "-b", "main")
        (repo / "README.md").write_text(f"# {name}\n")
        self.git(repo, "add", "README.md")
        self.git(repo, "commit", "-q", "-m", "initial commit")
        self.run([self.orange, "project", "add", "--name", name], repo)
        ids = bulk_create(repo, tasks)
        return repo, ids

    def import_commits(
        self,
        repo: Path,
        commits: Iterable[tuple[str, Mapping[str, bytes], int]],
        *,
        committer: str = "Orange Bench <bench@example.com>",
    ) -> str:
        """Commits on the tasks ref after its tip, each ``(message, files, time)``, by one
        ``git fast-import`` (one pack): seconds for 10,000 commits, where the store's own
        writes (a lock, a snapshot, loose objects, a pack every 200) take half an hour on
        a loaded machine.  Git builds the same trees from the same files, so a commit of
        a `TaskStore.commit` write's message, files and committer is that write.  Run
        without Orange's hooks, as `git`.  Returns the new tip."""
        from orange.store import layout

        tip = self.git(repo, "rev-parse", layout.TASKS_REF)  # (makes the folder "no-hooks")
        chunks: list[bytes] = []
        for number, (message, files, when) in enumerate(commits):
            text = message.encode()
            chunks += [
                f"commit {layout.TASKS_REF}\n".encode(),
                f"committer {committer} {when} +0000\n".encode(),
                f"data {len(text)}\n".encode() + text,
                f"from {tip}\n".encode() if number == 0 else b"",
            ]
            for path, data in files.items():
                chunks += [f"M 100644 inline {path}\ndata {len(data)}\n".encode(), data, b"\n"]
        subprocess.run(
            ["git", "-c", f"core.hooksPath={self.root / 'no-hooks'}", "fast-import", "--quiet",
             "--force"], cwd=repo, env=self.env, input=b"".join(chunks), check=True,
        )  # fmt: skip
        return self.git(repo, "rev-parse", layout.TASKS_REF)

    def cache_files(self, repo: Path) -> list[Path]:
        return sorted((repo / ".git" / "orange").glob("cache*.sqlite3*"))


def bulk_create(repo: Path, count: int) -> list[str]:
    """``count`` pending tasks: one made by ``create_task``, the rest cloned in one commit.

    The clones are what ``create_task`` writes (same field set, the workflow committed
    with the first), with fresh ids, branches, summaries and staggered timestamps.
    """
    from orange import projects
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task
    from orange.store import layout
    from orange.store.events import Change
    from orange.store.store import TaskStore

    store = TaskStore.open(repo)
    project = projects.infer(repo)
    first = create_task(
        store, project, load_named(project.workflow), summary="first task", branch="bench/first"
    )
    ids = {first.id}
    while len(ids) < count:
        ids.add(layout.new_task_id())
    new_ids = sorted(ids - {first.id})
    start = datetime(2026, 1, 1, tzinfo=UTC)
    writes: dict[str, bytes | None] = {}
    for number, task_id in enumerate(new_ids):
        stamp = (start + timedelta(seconds=number)).isoformat(timespec="milliseconds")
        stamp = stamp.replace("+00:00", "Z")
        clone = first.with_fields(
            id=task_id,
            branch=f"bench/{task_id}",
            summary=f"bench task {number}",
            created_at=stamp,
            updated_at=stamp,
        )
        writes[layout.task_path(task_id)] = clone.render().encode()

    def compute(snap: Snapshot) -> Change:
        return Change(
            task_id=first.id,
            event="bench.created",
            subject=f"bench: {len(writes)} tasks cloned from task {first.id}",
            writes=writes,
        )

    if writes:
        store.commit(compute)
    return [first.id, *new_ids]


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def loose_objects(repo: Path) -> dict[str, int]:
    objects = repo / ".git" / "objects"
    return {
        str(path.relative_to(objects)): path.stat().st_size
        for path in objects.glob("[0-9a-f][0-9a-f]/*")
    }


def pack_bytes(repo: Path) -> int:
    return sum(path.stat().st_size for path in (repo / ".git/objects/pack").glob("*.pack"))


# Figures -----------------------------------------------------------------------------


def startup(bench: Bench, repo: Path, ids: list[str]) -> None:
    """Figure 1: one `task update` process beside a bare `import pygit2` process."""
    runs = bench.plan.startup_runs
    task_id = ids[len(ids) // 2]
    update = [bench.orange, "task", "update", task_id, "--summary"]
    bare = [bench.python, "-c", "import pygit2"]
    for warm in range(2):  # compile bytecode, fill the page cache
        bench.timed([*update, f"warm-up {warm}"], repo)
        bench.timed(bare, repo)
    orange_times, bare_times = [], []
    for number in range(runs):  # interleaved, so drift in machine load hits both
        orange_times.append(bench.timed([*update, f"startup run {number}"], repo))
        bare_times.append(bench.timed(bare, repo))
    upd, imp = median(orange_times), median(bare_times)
    ratio = upd / imp
    bench.rows += [
        Row("1. `task update --summary` (whole process)", ms(upd), "", None),
        Row('1. `python -c "import pygit2"`', ms(imp), "", None),
        Row("1. ratio update / import pygit2", f"{ratio:.2f}x", "<= 2", ratio <= 2),
    ]


def listing(bench: Bench, repos: dict[int, Path]) -> None:
    """Figure 2: `task list --json` at each size, cold cache then warm."""
    for size, repo in sorted(repos.items()):
        command = [bench.orange, "task", "list", "--json"]
        listed = bench.run(command, repo, out=True).count('"id": ')
        if listed != size:
            raise SystemExit(f"bench: `task list --json` showed {listed} tasks, expected {size}")
        cold = []
        for _ in range(bench.plan.cold_runs):
            for path in bench.cache_files(repo):
                path.unlink()
            cold.append(bench.timed(command, repo))
        warm = [bench.timed(command, repo) for _ in range(bench.plan.warm_runs)]
        target = size == BIG
        bench.rows += [
            Row(f"2. `task list --json`, {size:,} tasks, cold cache", ms(median(cold)), "", None),
            Row(
                f"2. `task list --json`, {size:,} tasks, warm cache",
                ms(median(warm)),
                "<= 300 ms" if target else "",
                median(warm) <= 0.3 if target else None,
            ),
        ]


def bytes_written(bench: Bench, repo: Path, ids: list[str]) -> None:
    """Figure 3: loose bytes of one CLI update, packed bytes per update after gc."""
    from orange.engine.edits import update_fields
    from orange.store.store import TaskStore

    loose = []
    objects = []
    for number in range(bench.plan.loose_runs):
        before = loose_objects(repo)
        task_id = ids[(number * 997) % len(ids)]
        bench.run([bench.orange, "task", "update", task_id, "--summary", f"x{number}"], repo)
        after = loose_objects(repo)
        new = {name: size for name, size in after.items() if name not in before}
        loose.append(sum(new.values()))
        objects.append(len(new))

    bench.git(repo, "gc", "--quiet")
    baseline = pack_bytes(repo)
    store = TaskStore.open(repo)
    updates = bench.plan.packed_updates
    commits_before = int(bench.git(repo, "rev-list", "--count", "refs/orange/tasks"))
    in_process = []
    for number in range(updates):  # the function `task update --summary` calls
        task_id = ids[(number * 7919 + 13) % len(ids)]
        start = time.perf_counter()
        update_fields(store, task_id, {"summary": f"packed update {number}"})
        in_process.append(time.perf_counter() - start)
    added = int(bench.git(repo, "rev-list", "--count", "refs/orange/tasks")) - commits_before
    if added != updates:
        raise SystemExit(f"bench: {updates} updates made {added} commits")
    bench.git(repo, "gc", "--quiet")
    packed = (pack_bytes(repo) - baseline) / updates
    bench.rows += [
        Row(
            f"3. one update inside a process at {BIG:,} tasks (no startup)",
            f"{median(in_process) * 1000:.1f} ms",
            "",
            None,
        ),
        Row(
            f"3. loose bytes per update at {BIG:,} tasks ({median(objects):.0f} objects)",
            f"{median(loose) / 1024:.1f} KB",
            "<= 12 KB",
            median(loose) <= 12 * 1024,
        ),
        Row(
            f"3. packed bytes per update after `git gc` ({updates} updates)",
            f"{packed / 1024:.2f} KB",
            "<= 2 KB",
            packed <= 2 * 1024,
        ),
    ]


def throughput(bench: Bench, repo: Path, ids: list[str]) -> None:
    """Figure 4: WRITERS concurrent CLI writers against one doing the same work alone."""
    per_writer = bench.plan.updates_per_writer
    total = WRITERS * per_writer
    tasks = ids[:WRITERS]

    def commits() -> int:
        return int(bench.git(repo, "rev-list", "--count", "refs/orange/tasks"))

    def update(task_id: str, label: str) -> None:
        bench.run([bench.orange, "task", "update", task_id, "--summary", label], repo)

    def children_cpu() -> float:
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime

    def concurrent(round_: int) -> float:
        errors: list[BaseException] = []

        def writer(task_id: str) -> None:
            try:
                for number in range(per_writer):
                    update(task_id, f"parallel {round_}.{number}")
            except BaseException as exc:  # reported below, in the main thread
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(task_id,)) for task_id in tasks]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.perf_counter() - start
        if errors:
            raise SystemExit(f"bench: a concurrent writer failed: {errors[0]}")
        return elapsed

    def sequential(round_: int) -> float:
        start = time.perf_counter()
        for number in range(per_writer):
            for task_id in tasks:
                update(task_id, f"sequential {round_}.{number}")
        return time.perf_counter() - start

    update(tasks[0], "warm-up")
    par_times, seq_times, par_cpu, seq_cpu, lost = [], [], [], [], 0
    rounds = bench.plan.throughput_rounds
    for round_ in range(rounds):
        before, cpu_before = commits(), children_cpu()
        par_times.append(concurrent(round_))
        par_cpu.append((children_cpu() - cpu_before) / total)
        lost += total - (commits() - before)
        lost += sum(
            1
            for task_id in tasks
            if _summary(repo, task_id) != f"parallel {round_}.{per_writer - 1}"
        )
        cpu_before = children_cpu()
        seq_times.append(sequential(round_))
        seq_cpu.append((children_cpu() - cpu_before) / total)
    par_rate, seq_rate = total / median(par_times), total / median(seq_times)
    cores = os.cpu_count() or 1
    bench.rows += [
        Row(
            f"4. {WRITERS} writers x {per_writer} CLI updates, concurrent",
            f"{par_rate:.1f} updates/s",
            ">= sequential",
            par_rate >= seq_rate,
        ),
        Row(
            f"4. 1 writer x {total} CLI updates, sequential", f"{seq_rate:.1f} updates/s", "", None
        ),
        Row(
            f"4. CPU per CLI update, sequential (bound on {cores} cores: "
            f"{cores / median(seq_cpu):.1f}/s)",
            ms(median(seq_cpu)),
            "",
            None,
        ),
        Row("4. CPU per CLI update, concurrent", ms(median(par_cpu)), "", None),
        Row(
            f"4. updates lost by the concurrent writers ({rounds} round{'s' * (rounds > 1)})",
            str(lost),
            "0",
            lost == 0,
        ),
    ]


def _summary(repo: Path, task_id: str) -> str:
    from orange.store.store import TaskStore

    return TaskStore.open(repo).get(task_id).summary


# Report ------------------------------------------------------------------------------


def machine() -> str:
    git = subprocess.run(["git", "--version"], capture_output=True, text=True, check=False)
    import pygit2

    return (
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, "
        f"{platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, pygit2 {pygit2.__version__} "
        f"(libgit2 {pygit2.LIBGIT2_VERSION}), {git.stdout.strip()}"
    )


def table(rows: Sequence[Row]) -> str:
    header = ("figure", "median", "target", "result")
    cells = [
        (row.figure, row.value, row.target or "-", "-" if row.ok is None else _verdict(row.ok))
        for row in rows
    ]
    widths = [max(len(line[col]) for line in [header, *cells]) for col in range(4)]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(cell) for cell in cells)])


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def step(label: str, action: Callable[[], None]) -> None:
    start = time.perf_counter()
    print(f"  {label} ...", end="", flush=True)
    action()
    took = time.perf_counter() - start
    print(f" {took:.0f} s (load average {os.getloadavg()[0]:.1f})", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples (a smoke run)")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--only", type=int, choices=(1, 2, 3, 4), action="append", help="run only this figure"
    )
    args = parser.parse_args(argv)
    plan = QUICK if args.quick else Plan()
    figures = set(args.only or (1, 2, 3, 4))
    sizes = {10} if figures & {1, 4} else set()
    sizes |= set(LIST_SIZES) if 2 in figures else set()
    sizes |= {BIG} if 3 in figures else set()

    root = Path(tempfile.mkdtemp(prefix="orange-bench-"))
    saved_env = dict(os.environ)
    try:
        bench = Bench(root, plan)
        print(f"orange store bench: {machine()}", flush=True)
        repos: dict[int, Path] = {}
        ids: dict[int, list[str]] = {}

        def setup() -> None:
            for size in sorted(sizes):
                repos[size], ids[size] = bench.project(f"list{size}", size)

        step(f"creating projects of {', '.join(f'{n:,}' for n in sorted(sizes))} tasks", setup)
        if 1 in figures:
            step("1. task update vs import pygit2", lambda: startup(bench, repos[10], ids[10]))
        if 2 in figures:
            step("2. task list --json", lambda: listing(bench, repos))
        if 3 in figures:
            step("3. bytes per update", lambda: bytes_written(bench, repos[BIG], ids[BIG]))
        if 4 in figures:
            step("4. concurrent writers", lambda: throughput(bench, repos[10], ids[10]))
        print()
        print(table(bench.rows))
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
        missed = [row.figure for row in bench.rows if row.ok is False]
        print(f"{len(missed)} target(s) missed" if missed else "all targets met")
        return 1 if missed and args.strict else 0
    finally:
        os.environ.clear()
        os.environ.update(saved_env)
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
