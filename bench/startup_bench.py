"""What an `orange` process costs beyond its floor: CPU time ratios, in one run.

Run with ``make bench`` (or ``.venv/bin/python bench/startup_bench.py``).  Prints three
ratios of CPU time (user + system of the child process), each of medians over
interleaved runs, beside its target and PASS/MISS:

1. ``orange task update ID --summary S`` against ``python -c "import pygit2, yaml"``
   (the floor: the interpreter and the two libraries every command needs);
2. ``orange task update ID --status S``, a legal move with no hooks (a user workflow,
   ``bench-moves``, moving the task between ``pending`` and ``planning``), against the
   same floor;
3. ``orange task list --json`` at 10,000 tasks with a cold listing cache
   (``<git-common-dir>/orange/cache*.sqlite3*`` deleted first) against a warm one;
4. ``orange task log ID --json``, a command typer parses, with Orange's plain option
   converters (`orange.cli.coercion`, on typer's private ``_runtime_param``) against
   typer's own (pydantic): they stay while they save at least 5%.

Every command is a whole process of the real console script, ``.venv/bin/orange``, run
from the project's checkout (not a workspace), with no monitor (``ORANGE_MONITOR=off``)
and the hermetic environment of ``store_bench.py`` (own HOME, ORANGE_HOME, git identity,
no ``PYTHON*`` variables), in a temporary directory removed at the end.  ``--quick``
takes fewer runs, ``--strict`` exits 1 on a miss, ``--importtime N`` also prints the N
imports that cost ``task update --summary`` the most (``python -X importtime``).
``--code DIR`` (repeatable) also runs figures 1 and 2 on another copy of Orange's code
(``DIR/orange``, say ``git archive REV orange | tar -x -C DIR``, put first on
``PYTHONPATH``) in the same interleaving: an A/B of a change on a loaded machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from store_bench import bulk_create, hermetic_env, machine

BIG = 10_000
RUNS, QUICK_RUNS, WARM_UPS = 20, 5, 2

# A user workflow whose measured moves run no hooks, so figure 2 measures the engine
# alone.  (Its move to `working`, never taken here, starts an agent: a project's
# workflow must have one.)
MOVES_WORKFLOW = """\
name: bench-moves
version: 1
description: Two states and hook-free moves between them (bench/startup_bench.py).
initial_statuses: [pending]
states:
  pending:
    terminal: false
  planning:
    terminal: false
  working:
    terminal: false
  cancelled:
    terminal: true
transitions:
  - {from: pending, to: planning, hooks: []}
  - {from: planning, to: pending, hooks: []}
  - {from: pending, to: cancelled, hooks: []}
  - {from: planning, to: cancelled, hooks: []}
  - {from: working, to: cancelled, hooks: []}
  - from: pending
    to: working
    hooks: [{action: acquire_workspace}, {action: spawn_agent, prompt: worker}]
prompts:
  worker: "{summary}"
"""


@dataclass(frozen=True)
class Sample:
    cpu: float  # user + system seconds of the child
    wall: float


@dataclass(frozen=True)
class Ratio:
    figure: str
    measured: str
    floor: str
    cpu: tuple[float, float]  # medians: measured, floor
    wall: tuple[float, float]
    target: float

    @property
    def value(self) -> float:
        return self.cpu[0] / self.cpu[1]

    @property
    def ok(self) -> bool:
        return self.value <= self.target


class Runner:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.env = hermetic_env(root)
        self.env["ORANGE_MONITOR"] = "off"
        self.python = sys.executable
        self.orange = str(Path(sys.executable).with_name("orange"))
        if not Path(self.orange).is_file():
            raise SystemExit(f"bench: no {self.orange}; run it as `make bench`")

    def run(
        self, args: Sequence[str], cwd: Path, *, stderr: bool = False, code: Path | None = None
    ) -> Sample | str:
        """Run one process; its CPU time (children's rusage delta) and wall time."""
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        result = subprocess.run(
            list(args),
            cwd=cwd,
            env=self.env if code is None else {**self.env, "PYTHONPATH": str(code)},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
        wall = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if result.returncode != 0:
            raise SystemExit(
                f"bench: {' '.join(args)} exited {result.returncode}: {result.stderr.strip()}"
            )
        if stderr:
            return result.stderr
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return Sample(cpu=cpu, wall=wall)

    def sample(self, args: Sequence[str], cwd: Path, code: Path | None = None) -> Sample:
        out = self.run(args, cwd, code=code)
        assert isinstance(out, Sample)
        return out

    def project(self, name: str, tasks: int, workflow: str | None = None) -> tuple[Path, str]:
        """A registered repository with ``tasks`` pending tasks; returns it and one id."""
        repo = self.root / name
        repo.mkdir()
        for args in (
            ["init", "-q", "-b", "main"],
            ["commit", "-q", "--allow-empty", "-m", "initial commit"],
        ):
            subprocess.run(["git", *args], cwd=repo, env=self.env, check=True)
        add = [self.orange, "project", "add", "--name", name]
        self.sample([*add, *(["--workflow", workflow] if workflow else [])], repo)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(self.env)  # bulk_create writes in this process
        try:
            ids = bulk_create(repo, tasks)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return repo, ids[0]


def ratio(
    figure: str,
    measured: tuple[str, Sequence[Sample]],
    floor: tuple[str, Sequence[Sample]],
    target: float,
) -> Ratio:
    """The ratio of the CPU medians of two interleaved series of samples."""
    (name, mine), (floor_name, base) = measured, floor
    return Ratio(
        figure,
        name,
        floor_name,
        cpu=(statistics.median(s.cpu for s in mine), statistics.median(s.cpu for s in base)),
        wall=(statistics.median(s.wall for s in mine), statistics.median(s.wall for s in base)),
        target=target,
    )


def startup(runner: Runner, runs: int, codes: Sequence[Path] = ()) -> list[Ratio]:
    """Figures 1 and 2: two `task update` processes against the import floor (and the
    same two on each copy of ``codes``, in the same rounds)."""
    workflows = Path(runner.env["ORANGE_HOME"]) / "workflows"
    workflows.mkdir(parents=True, exist_ok=True)
    (workflows / "bench-moves.yml").write_text(MOVES_WORKFLOW)
    repo, task_id = runner.project("startup", 1, workflow="bench-moves")
    floor = [runner.python, "-c", "import pygit2, yaml"]
    summary = [runner.orange, "task", "update", task_id, "--summary"]
    status = [runner.orange, "task", "update", task_id, "--status"]
    moves = ("planning", "pending")  # back and forth: every run is a legal move
    floors: list[Sample] = []
    copies: list[Path | None] = [None, *codes]
    summaries: dict[Path | None, list[Sample]] = {code: [] for code in copies}
    statuses: dict[Path | None, list[Sample]] = {code: [] for code in copies}
    step = 0
    for number in range(WARM_UPS + runs):  # interleaved: load drift hits them all
        floor_sample = runner.sample(floor, repo)
        for code in copies:
            samples = (
                runner.sample([*summary, f"run {number}"], repo, code),
                runner.sample([*status, moves[step % 2]], repo, code),
            )
            step += 1
            if number >= WARM_UPS:  # the first compile bytecode and fill the page cache
                summaries[code].append(samples[0])
                statuses[code].append(samples[1])
        if number >= WARM_UPS:
            floors.append(floor_sample)
    base = ("import", floors)
    found = []
    for code in copies:
        of = "" if code is None else f" ({code})"
        found += [
            ratio(f"1. `task update --summary`{of}", ("update", summaries[code]), base, 1.15),
            ratio(f"2. `task update --status`, no hooks{of}", ("move", statuses[code]), base, 1.4),
        ]
    return found


def listing(runner: Runner, runs: int) -> list[Ratio]:
    """Figure 3: `task list --json` at 10,000 tasks, cold cache against warm."""
    repo, _task_id = runner.project("list10k", BIG)
    # As a teammate's clone has them after fetching the ref: in a pack, not loose.
    repack = ["git", "-c", "core.hooksPath=/dev/null", "repack", "-a", "-d", "-q"]
    subprocess.run(repack, cwd=repo, env=runner.env, check=True)
    command = [runner.orange, "task", "list", "--json"]
    cache = repo / ".git" / "orange"
    colds, warms = [], []
    for number in range(WARM_UPS + runs):
        for path in cache.glob("cache*.sqlite3*"):
            path.unlink()
        cold = runner.sample(command, repo)
        warm = runner.sample(command, repo)
        if number >= WARM_UPS:
            colds.append(cold)
            warms.append(warm)
    figure = f"3. `task list --json`, {BIG:,} tasks"
    return [ratio(figure, ("cold", colds), ("warm", warms), target=2.5)]


# `orange` as its console script runs, with or without the plain converters.
TYPER_RUN = "import sys; import orange.cli.main as m; {patch}sys.exit(m.run(sys.argv[1:]))"


def converters(runner: Runner, runs: int) -> list[Ratio]:
    """Figure 4: a command typer parses, with the plain converters and without."""
    repo, task_id = runner.project("typer", 1)
    plain = [runner.python, "-c", TYPER_RUN.format(patch="")]
    own = [runner.python, "-c", TYPER_RUN.format(patch="m.plain = lambda command: command; ")]
    log = ["task", "log", task_id, "--json"]  # `task show` takes the fast path
    plains, owns = [], []
    for number in range(WARM_UPS + runs):
        samples = runner.sample([*plain, *log], repo), runner.sample([*own, *log], repo)
        if number >= WARM_UPS:
            plains.append(samples[0])
            owns.append(samples[1])
    figure = "4. `task log --json` (typer)"
    return [ratio(figure, ("plain", plains), ("typer's own", owns), target=0.95)]


def importtime(runner: Runner, top: int) -> str:
    """The imports `task update --summary` spends most on (self and cumulative)."""
    repo, task_id = runner.project("imports", 1)
    command = [runner.python, "-X", "importtime", runner.orange, "task", "update", task_id]
    for number in range(3):  # the last of three, so bytecode is compiled
        report = runner.run([*command, "--summary", f"imports {number}"], repo, stderr=True)
    assert isinstance(report, str)
    rows = []
    for line in report.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, cumulative, name = line.removeprefix("import time:").split("|")
        rows.append((int(own), int(cumulative), name.rstrip()))
    total = sum(own for own, _, _ in rows)
    out = [f"imports of `task update --summary`: {len(rows)} modules, {total / 1000:.0f} ms"]
    out.append(f"  top {top} by cumulative time (ms, self / cumulative):")
    out += [
        f"    {own / 1000:6.1f} {cum / 1000:6.1f}  {name}"
        for own, cum, name in sorted(rows, key=lambda r: -r[1])[:top]
    ]
    out.append(f"  top {top} by own time:")
    out += [
        f"    {own / 1000:6.1f} {cum / 1000:6.1f}  {name.strip()}"
        for own, cum, name in sorted(rows, key=lambda r: -r[0])[:top]
    ]
    return "\n".join(out)


def table(ratios: Sequence[Ratio]) -> str:
    header = ("figure", "CPU median", "floor / base", "ratio", "target", "result", "wall")
    cells = [
        (
            r.figure,
            f"{r.cpu[0] * 1000:.0f} ms ({r.measured})",
            f"{r.cpu[1] * 1000:.0f} ms ({r.floor})",
            f"{r.value:.2f}x",
            f"<= {r.target}x",
            "PASS" if r.ok else "MISS",
            f"{r.wall[0] * 1000:.0f} / {r.wall[1] * 1000:.0f} ms",
        )
        for r in ratios
    ]
    widths = [max(len(line[col]) for line in [header, *cells]) for col in range(len(header))]

    def line(values: Sequence[str]) -> str:
        return "| " + " | ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), rule, *(line(cell) for cell in cells)])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_RUNS} runs, not {RUNS}")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--importtime", type=int, default=0, metavar="N", help="print the N costliest imports"
    )
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="also run figures 1 and 2 on the Orange in DIR/orange (repeatable)",
    )
    args = parser.parse_args(argv)
    runs = QUICK_RUNS if args.quick else RUNS
    root = Path(tempfile.mkdtemp(prefix="orange-startup-bench-"))
    try:
        runner = Runner(root)
        print(f"orange start-up bench: {machine()}", flush=True)
        print(f"  {runs} interleaved runs per figure (after {WARM_UPS} warm-ups)", flush=True)
        ratios = startup(runner, runs, [code.resolve() for code in args.code])
        ratios += listing(runner, runs)
        ratios += converters(runner, runs)
        print()
        print(table(ratios))
        print(
            "\nCPU: user + system time of the child.  Floor of 1 and 2 (import): "
            '`python -c "import pygit2, yaml"`.  Wall times are for information.'
        )
        if args.importtime:
            print()
            print(importtime(runner, args.importtime))
        print(f"\nload average at the end: {os.getloadavg()[0]:.1f} (on {os.cpu_count()} CPUs)")
        missed = [r.figure for r in ratios if not r.ok]
        print(f"{len(missed)} target(s) missed" if missed else "all targets met")
        return 1 if missed and args.strict else 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
