"""Measure the dashboard at 10,000 tasks (issue 12, "Performance").

Prints four figures beside their targets, each a median of several runs:

1. first paint: from building the app to the moment its table first draws rows,
   headless, with a warm store cache (target <= 1.5 s); the table adds the rows after
   the first screenful after that paint, and the time until it holds every row is
   printed beside it; then the same as a user sees it (issue 27): ``orange dashboard``
   started as a whole process in a tmux window of 160x50, from the start to the first
   screen showing 20 rows of tasks (``capture-pane`` every 20 ms), wall time and the
   process's CPU by then (same target);
2. the CPU a refresh costs after one task changed (one commit by someone else, then the
   dashboard's look at the ref, the re-read of the changed shard and the changed cells;
   target <= 50 ms), and the same with Textual's repaint of the visible rows;
3. live: in a running dashboard, from another process's write to the ref (`orange task
   update ID --summary S`) to the row showing the new summary (target <= 1 s);
4. scrolling: Page Down from the first row to the last, then Up for 100 rows, the CPU
   per step (target <= 40 ms, the interval of a held key's repeat).

Everything happens in a temporary directory (removed at the end) with its own HOME,
ORANGE_HOME and git identity.  ``--tasks N`` changes the size, ``--strict`` exits 1 on
a miss.
"""

from __future__ import annotations

import argparse
import asyncio
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pygit2

sys.path.insert(0, str(Path(__file__).parent))
from store_bench import bulk_create, isolate  # a sibling script

PAINT_TARGET = 1.5
REFRESH_TARGET = 0.050
LIVE_TARGET = 1.0
# A held key repeats 25 times a second (X11's default rate, `xset q`): a step of the
# table within 40 ms keeps up with it, so holding Page Down never queues keys.
STEP_TARGET = 0.040


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
) -> tuple[float, float, float, float]:
    from textual.widgets import DataTable

    from orange.dashboard.app import make_app

    paints: list[float] = []
    fills: list[float] = []
    refreshes: list[float] = []
    repaints: list[float] = []
    for run in range(runs):
        drawn: list[float] = []
        start = time.perf_counter()
        app = make_app([project], poll=False)
        with _noting_first_rows_drawn(drawn):
            async with app.run_test(size=(160, 50)) as pilot:
                table = app.query_one("#table", DataTable)
                await _filled(pilot, app, table)
                fills.append(time.perf_counter() - start)
                paints.append(drawn[0] - start)
                _change(repo, ids[run * 7 % len(ids)], run)
                cpu = time.process_time()
                app.watch_refs()
                refreshes.append(time.process_time() - cpu)
                await pilot.pause()
                repaints.append(time.process_time() - cpu)
    median = statistics.median
    return median(paints), median(fills), median(refreshes), median(repaints)


@contextmanager
def _noting_first_rows_drawn(drawn: list[float]) -> Iterator[None]:
    """The first paint: the moment the task table first draws lines while it holds
    rows (its `render_lines`, which Textual calls to put the table on screen)."""
    from orange.dashboard.table import TaskTable

    def render_lines(table: Any, crop: Any) -> Any:
        if table.row_count and not drawn:
            drawn.append(time.perf_counter())
        return original(table, crop)

    original = TaskTable.render_lines
    TaskTable.render_lines = render_lines  # type: ignore[method-assign]
    try:
        yield
    finally:
        TaskTable.render_lines = original  # type: ignore[method-assign]


async def _filled(pilot: Any, app: Any, table: Any) -> None:
    """Pauses until the table holds every row shown (the dashboard adds rows after
    the first screenful in batches, each after a paint)."""
    await pilot.pause()
    deadline = time.monotonic() + 60
    while table.row_count < len(app.shown_rows) and time.monotonic() < deadline:
        await pilot.pause()
    if table.row_count < len(app.shown_rows):
        raise SystemExit("the table never held every row")


async def _live(project: Any, repo: Path, runs: int) -> tuple[list[float], list[float]]:
    """From another process's write to the tasks ref to the changed row on screen, in a
    running dashboard (its own look at the ref, as `orange dashboard` runs it).  The
    bench looks every 2 ms at the ref (the write's moment, from a thread) and every 5 ms
    at the row's summary cell.
    Returns the delays for the top row (the order stands: changed cells only) and for a
    row further down (its new activity brings it to the top: the rows are placed again).
    """
    from textual.widgets import DataTable

    from orange.dashboard.app import make_app

    top: list[float] = []
    moved: list[float] = []
    app = make_app([project], poll=True)
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.query_one("#table", DataTable)
        await _filled(pilot, app, table)
        for run in range(runs):
            for delays, index in ((top, 0), (moved, 20 + run)):
                row = app.shown_rows[index]
                text = f"live {index} {run}"
                delays.append(await _one_live(repo, table, row, text))
            await pilot.pause()
    return top, moved


async def _one_live(repo: Path, table: Any, row: Any, text: str) -> float:
    before = pygit2.Repository(str(repo)).references["refs/orange/tasks"].target
    written: list[float] = []
    # The ref is watched from a thread: the app's redraw holds the event loop, and a
    # look from the loop would see the write only once the row was drawn.
    watcher = threading.Thread(target=_watch_ref, args=(repo, before, written), daemon=True)
    watcher.start()
    orange = str(Path(sys.executable).parent / "orange")
    proc = await asyncio.create_subprocess_exec(
        orange, "task", "update", row.id, "--summary", text, cwd=repo,
        stdout=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    shown = 0.0
    deadline = time.monotonic() + 30
    while not shown and time.monotonic() < deadline:
        if str(table.get_cell(row.key, "summary")) == text:
            shown = time.perf_counter()
        await asyncio.sleep(0.005)
    watcher.join(30)
    if await proc.wait() != 0 or not shown or not written:
        raise SystemExit(f"task {row.id}: the change never showed")
    return shown - written[0]


def _watch_ref(repo: Path, before: Any, written: list[float]) -> None:
    """Note the moment the tasks ref leaves ``before`` (looked at every 2 ms)."""
    git = pygit2.Repository(str(repo))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if git.references["refs/orange/tasks"].target != before:
            written.append(time.perf_counter())
            return
        time.sleep(0.002)


async def _scroll(project: Any) -> tuple[list[float], list[float], int]:
    """Page Down from the first row to the last, then Up for 100 rows: the CPU each step
    costs (the key, the cursor and scroll moves, the repaint of the rows on screen; the
    pilot's own bookkeeping included, so an upper bound).  Returns the steps' CPU of
    both keys and the number of rows."""
    from textual.widgets import DataTable

    from orange.dashboard.app import make_app

    app = make_app([project], poll=False)
    pages: list[float] = []
    ups: list[float] = []
    async with app.run_test(size=(160, 50)) as pilot:
        table = app.query_one("#table", DataTable)
        await _filled(pilot, app, table)
        while table.cursor_row < table.row_count - 1:
            pages.append(await _step(pilot, "pagedown"))
            if len(pages) > table.row_count:
                raise SystemExit("Page Down never reached the last row")
        for _ in range(min(100, table.row_count - 1)):
            ups.append(await _step(pilot, "up"))
        return pages, ups, table.row_count


async def _step(pilot: Any, key: str) -> float:
    cpu = time.process_time()
    await pilot.press(key)
    await pilot.pause()
    return time.process_time() - cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000, help="How many tasks.")
    parser.add_argument("--runs", type=int, default=5, help="Samples per figure.")
    parser.add_argument("--strict", action="store_true", help="Exit 1 on a missed target.")
    parser.add_argument(
        "--whole-only", action="store_true", help="Only the whole process in tmux (figure 1)."
    )
    parser.add_argument(
        "--code",
        type=Path,
        action="append",
        default=[],
        help="Also run the whole process on the Orange package in DIR (an export of "
        "another commit: git archive COMMIT orange | tar -x -C DIR), interleaved.",
    )
    args = parser.parse_args()
    if args.whole_only:
        return _whole_only(args.tasks, args.runs, args.code)
    with tempfile.TemporaryDirectory(prefix="orange-dash-bench-") as tmp:
        root = Path(tmp)
        # (none of the caller's PYTHON* variables: PYTHONDONTWRITEBYTECODE would make
        # every run of a `--code` copy compile it again)
        isolate(root, ORANGE_MONITOR="off", ORANGE_TMUX_SOCKET=f"orange-dash-bench-{os.getpid()}")
        os.chdir(root)
        project = _project(root, args.tasks)
        ids = sorted(bulk_ids(project))
        from orange.compose import tmux
        from orange.dashboard.source import Source

        Source([project], tmux()).refresh()  # the store's cache, warm (as after `task list`)
        repo = Path(project.path)
        paint, fill, refresh, repaint = asyncio.run(_measure(project, repo, ids, args.runs))
        whole, whole_cpu = _whole_process(repo, set(ids), args.runs)
        top, moved = asyncio.run(_live(project, repo, args.runs))
        steps, ups, rows = asyncio.run(_scroll(project))
    print(f"dashboard at {args.tasks:,} tasks ({args.runs} runs, medians)")
    results = [
        _line("1. first paint, warm cache:", paint, PAINT_TARGET, 0),
    ]
    print(f"   every row in the table:  {fill * 1000:7.0f} ms  (rows after the first screenful"
          " are added after the paint)")  # fmt: skip
    results.append(_line("   whole process in tmux:", statistics.median(whole), PAINT_TARGET, 0))
    print(f"   (each: {_ms(whole)}; its CPU by then: {_ms(whole_cpu)})")
    results.append(_line("2. refresh CPU, one change:", refresh, REFRESH_TARGET, 1))
    print(f"   with Textual's repaint:  {repaint * 1000:7.1f} ms  (the visible rows drawn again)")
    print("3. live: another process's `task update`, from the ref's move to the row shown")
    results.append(_line("   the top row changed:", statistics.median(top), LIVE_TARGET, 0))
    results.append(_line("   a row that moves to top:", statistics.median(moved), LIVE_TARGET, 0))
    print(f"   (each: {_ms(top)}; {_ms(moved)})")
    print(f"4. scrolling {rows:,} rows, CPU per step (median; slowest; first 10 / last 10)")
    results.append(_steps(f"   Page Down x {len(steps)}:", steps))
    results.append(_steps(f"   Up x {len(ups)}:", ups))
    return 1 if args.strict and not all(results) else 0


def _line(label: str, value: float, target: float, digits: int) -> bool:
    ok = value <= target
    print(f"{label:28} {value * 1000:7.{digits}f} ms  (target <= {target * 1000:.0f} ms) "
          f"{'PASS' if ok else 'MISS'}")  # fmt: skip
    return ok


def _steps(label: str, steps: list[float]) -> bool:
    ok = _line(label, statistics.median(steps), STEP_TARGET, 1)
    first, last = statistics.median(steps[:10]), statistics.median(steps[-10:])
    print(f"{'':28} {max(steps) * 1000:7.1f} ms slowest; {first * 1000:.1f} / "
          f"{last * 1000:.1f} ms")  # fmt: skip
    return ok


def _ms(values: list[float]) -> str:
    return " ".join(f"{v * 1000:.0f}" for v in values) + " ms"


def _whole_only(tasks: int, runs: int, codes: list[Path]) -> int:
    """Figure 1's whole process alone, on this Orange and on each ``--code`` copy,
    one run of each in turn (a change in the machine's load hits them alike)."""
    with tempfile.TemporaryDirectory(prefix="orange-dash-bench-") as tmp:
        root = Path(tmp)
        # (none of the caller's PYTHON* variables: PYTHONDONTWRITEBYTECODE would make
        # every run of a `--code` copy compile it again)
        isolate(root, ORANGE_MONITOR="off", ORANGE_TMUX_SOCKET=f"orange-dash-bench-{os.getpid()}")
        os.chdir(root)
        project = _project(root, tasks)
        ids = set(bulk_ids(project))
        from orange.compose import tmux
        from orange.dashboard.source import Source

        Source([project], tmux()).refresh()  # the store's cache, warm
        repo = Path(project.path)
        names = ["this checkout", *map(str, codes)]
        for code in codes:  # compiled once, as an installed Orange is
            compileall.compile_dir(code, quiet=1)
        found: dict[str, tuple[list[float], list[float]]] = {n: ([], []) for n in names}
        for _ in range(runs):
            for name, code in zip(names, [None, *codes], strict=True):
                walls, cpus = _whole_process(repo, ids, 1, code)
                found[name][0].extend(walls)
                found[name][1].extend(cpus)
    print(f"dashboard at {tasks:,} tasks, whole process in tmux ({runs} runs, medians), "
          f"load {os.getloadavg()[0]:.1f}")  # fmt: skip
    for name, (walls, cpus) in found.items():
        print(f"  {name}: wall {statistics.median(walls) * 1000:.0f} ms ({_ms(walls)}); "
              f"CPU {statistics.median(cpus) * 1000:.0f} ms ({_ms(cpus)})")  # fmt: skip
    return 0


def _whole_process(
    repo: Path, ids: set[str], runs: int, code: Path | None = None
) -> tuple[list[float], list[float]]:
    """``orange dashboard`` in a tmux window of 160x50 (a tmux server of its own), from
    its start to the first screen with 20 task rows: wall seconds, and the process's
    CPU seconds by then (from ``/proc``), for each run."""
    import re

    orange = str(Path(sys.executable).with_name("orange"))
    # A server of its own per call: a server killed by the call before may still be
    # exiting on a reused socket ("server exited unexpectedly").
    display = f"orange-dash-display-{os.getpid()}-{os.urandom(3).hex()}"
    tmux = ["tmux", "-L", display, "-f", "/dev/null"]
    walls: list[float] = []
    cpus: list[float] = []
    tick = os.sysconf("SC_CLK_TCK")
    try:
        for _ in range(runs):
            start = time.perf_counter()
            path = f"env PYTHONPATH={code.resolve()} " if code is not None else ""
            subprocess.run(
                [*tmux, "new-session", "-d", "-x", "160", "-y", "50", "-s", "dash",
                 "-c", str(repo), f"exec {path}{orange} dashboard"],
                check=True,
            )  # fmt: skip
            pid = subprocess.run(
                [*tmux, "display", "-p", "-t", "dash", "#{pane_pid}"],
                capture_output=True, text=True, check=True,
            ).stdout.strip()  # fmt: skip
            while True:
                screen = subprocess.run(
                    [*tmux, "capture-pane", "-p", "-t", "dash"], capture_output=True, text=True
                ).stdout
                if len(ids.intersection(re.findall(r"\b[0-9a-z]{8}\b", screen))) >= 20:
                    break
                if time.perf_counter() - start > 120:
                    raise SystemExit(f"bench: no rows after 120 s; the screen:\n{screen}")
                time.sleep(0.02)
            walls.append(time.perf_counter() - start)
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpus.append((int(fields[11]) + int(fields[12])) / tick)  # utime, stime
            subprocess.run([*tmux, "kill-session", "-t", "dash"], check=True)
    finally:
        subprocess.run([*tmux, "kill-server"], capture_output=True, check=False)
    return walls, cpus


def bulk_ids(project: Any) -> list[str]:
    from orange.projects import open_store

    return [name for _, name in open_store(project).snapshot().task_dirs()]


if __name__ == "__main__":
    sys.exit(main())
