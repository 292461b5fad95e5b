"""``orange demo``: two tasks driven through the default workflow by scripted agents.

Everything happens in a temporary directory with its own ``ORANGE_HOME`` and its own
tmux server; nothing of the user's is touched.  The demo agent (`orange.demo_agent`)
plans, implements and commits, a reviewer fails round 1 and passes round 2, the worker
is notified and fixes, and both tasks are merged.  ``--keep`` leaves it all for a look.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from rich.console import Console
from rich.live import Live
from rich.table import Table

from orange import compose
from orange.runtime import watcher as monitor
from orange.runtime.git import git as _git

TIMEOUT = 90.0


def _orange(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "orange", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def _setup(root: Path) -> Path:
    home = root / "orange-home"
    home.mkdir()
    agent = [sys.executable, "-m", "orange.demo_agent"]
    config = {
        "harnesses": {
            "demo": {
                "command": [*agent, "--role", "worker", "{prompt}"],
                "review_command": [
                    *agent,
                    "--role",
                    "reviewer",
                    "--reviews",
                    "FAIL,PASS",
                    "{prompt}",
                ],
            }
        }
    }

    (home / "config.yml").write_text(yaml.safe_dump(config))
    os.environ.update(
        ORANGE_HOME=str(home),
        ORANGE_TMUX_SOCKET=f"orange-demo-{os.getpid()}",
        GIT_AUTHOR_NAME="Orange Demo",
        GIT_AUTHOR_EMAIL="demo@orange.invalid",
        GIT_COMMITTER_NAME="Orange Demo",
        GIT_COMMITTER_EMAIL="demo@orange.invalid",
    )
    project = root / "coffee"
    project.mkdir()
    _git("init", "-q", "-b", "main", cwd=project)
    (project / "README.md").write_text("# coffee\n")
    _git("add", "README.md", cwd=project)
    _git("commit", "-q", "-m", "initial commit", cwd=project)
    return project


def run_demo(*, keep: bool = False) -> None:
    console = Console(highlight=False)
    root = Path(tempfile.mkdtemp(prefix="orange-demo-"))
    started = time.monotonic()
    project = _setup(root)
    try:
        console.rule("[bold orange3]Orange demo")
        console.print(f"throwaway project: {project}")
        for args in (
            ["project", "add", "--pool-size", "2"],
            ["task", "create", "dark-mode", "Add a dark mode toggle", "--harness", "demo"],
            ["task", "create", "fix-login", "Fix the login redirect", "--harness", "demo"],
        ):
            result = _orange(*args, cwd=project)
            console.print(f"$ orange {' '.join(args)}", style="dim", markup=False)
            console.print(result.stdout.strip(), markup=False)
            if result.returncode != 0:
                raise SystemExit(f"demo failed: {result.stderr.strip()}")
        _watch(console, project)
        for task_id in _task_ids(project):
            result = _orange("task", "merge", task_id, "--local", cwd=project)
            console.print(f"$ orange task merge {task_id} --local", style="dim", markup=False)
            console.print(f"{result.stdout.strip()}{result.stderr.strip()}", markup=False)
        console.rule("git log --oneline refs/orange/tasks")
        console.print(
            _git("log", "--oneline", "refs/orange/tasks", cwd=project).rstrip(), markup=False
        )
        console.rule("git log --oneline main (the merged work)")
        console.print(_git("log", "--oneline", "main", cwd=project).rstrip(), markup=False)
        console.print(f"\ndone in {time.monotonic() - started:.1f} s")
    finally:
        # Nothing keeps running after the demo, kept or not: its tasks are merged, and a
        # kept demo is files to look at (the dashboard reads the ref), not live agents.
        monitor.stop()
        compose.tmux().kill_server()
        deadline = time.monotonic() + 5
        while monitor.is_running() and time.monotonic() < deadline:
            time.sleep(0.1)
        if keep:
            console.print(
                f"kept: {root}  (ORANGE_HOME={os.environ['ORANGE_HOME']}; "
                f"remove it with `rm -rf {shlex.quote(str(root))}`)"
            )
            console.print(_look_command(project), markup=False, soft_wrap=True)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _look_command(project: Path) -> str:
    """The line that ends a kept demo: how to look at its tasks in the dashboard."""
    orange = Path(sys.executable).with_name("orange")
    env = " ".join(
        f"{name}={shlex.quote(os.environ[name])}" for name in ("ORANGE_HOME", "ORANGE_TMUX_SOCKET")
    )
    where = shlex.quote(str(project))
    command = shlex.quote(str(orange)) if orange.exists() else "orange"
    return f"To look at the demo's tasks, run `orange` there: cd {where} && {env} {command}"


def _task_ids(project: Path) -> list[str]:

    listed = json.loads(_orange("task", "list", "--all", "--json", cwd=project).stdout)
    return [t["id"] for t in sorted(listed["tasks"], key=lambda t: t["created_at"])]


def _watch(console: object, project: Path) -> None:
    """Show the tasks' statuses live until both wait for a human (reviewing)."""

    deadline = time.monotonic() + TIMEOUT

    def table(tasks: list[dict[str, object]]) -> Table:
        view = Table(title="tasks (refreshing)", title_justify="left")
        for column in ("id", "branch", "status", "round", "latest"):
            view.add_column(column)
        for t in tasks:
            view.add_row(
                str(t["id"]),
                str(t["branch"]),
                str(t["status"]),
                str(t["review_round"]),
                str(t.get("latest", "")),
            )
        return view

    with Live(table([]), refresh_per_second=4, console=console) as live:  # type: ignore[arg-type]
        while True:
            listed = json.loads(_orange("task", "list", "--json", cwd=project).stdout)["tasks"]
            for t in listed:
                log = _git(
                    "log",
                    "-1",
                    "--format=%s",
                    "refs/orange/tasks",
                    "--",
                    f"tasks/*/{t['id']}/TASK.md",
                    cwd=project,
                )
                t["latest"] = log.strip().split(": ", 1)[-1]
            live.update(table(listed))
            if listed and all(t["status"] == "reviewing" for t in listed):
                return
            if any(t["status"] in ("stuck", "cancelled") for t in listed):
                raise SystemExit("demo failed: a task got stuck")
            if time.monotonic() > deadline:
                raise SystemExit("demo failed: the agents took too long")
            time.sleep(0.5)
