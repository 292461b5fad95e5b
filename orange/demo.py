"""``orange demo``: Orange's store walked through in a throwaway repository.

Everything happens under a temporary directory with its own ``ORANGE_HOME``; nothing of
the user's is touched.  ``--keep`` leaves the directory for a look.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def _say(text: str) -> None:
    print(f"\n\033[1;33m==> {text}\033[0m", flush=True)


def _orange(*args: str, cwd: Path, stdin: str | None = None) -> None:
    print(f"$ orange {' '.join(args)}", flush=True)
    subprocess.run(
        [sys.executable, "-m", "orange", *args], cwd=cwd, input=stdin, text=True, check=True
    )


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def run_demo(*, keep: bool = False) -> None:
    root = Path(tempfile.mkdtemp(prefix="orange-demo-"))
    os.environ["ORANGE_HOME"] = str(root / "orange-home")
    try:
        project = root / "coffee"
        project.mkdir()
        _git("init", "-q", "-b", "main", cwd=project)
        _git(
            "-c",
            "user.name=Orange Demo",
            "-c",
            "user.email=demo@orange.invalid",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            "initial commit",
            cwd=project,
        )
        _say("Register a project")
        _orange("project", "add", "--pool-size", "2", cwd=project)
        _say("Create tasks (they are TASK.md files committed on refs/orange/tasks)")
        _orange("task", "create", "dark-mode", "Add a dark mode toggle", "--no-spawn", cwd=project)
        _orange(
            "task",
            "create",
            "fix-login",
            "Fix the login redirect loop",
            "--context",
            "-",
            "--no-spawn",
            cwd=project,
            stdin="Users land on /login again after signing in.\n",
        )
        _orange("task", "create", "--no-spawn", cwd=project)
        _say("Change them")
        listing = _git("log", "--format=%s", "refs/orange/tasks", cwd=project)
        first = listing.splitlines()[-1].split()[1].rstrip(":")
        _orange(
            "task", "update", first, "--summary", "Add a dark mode toggle to settings", cwd=project
        )
        _orange(
            "task",
            "edit",
            first,
            "--section",
            "Notes",
            "--file",
            "-",
            cwd=project,
            stdin="Follow the system theme by default.\n",
        )
        _orange("task", "cancel", first, "--yes", cwd=project)
        _say("The audit trail is plain git")
        print("$ git log --oneline refs/orange/tasks")
        print(_git("log", "--oneline", "refs/orange/tasks", cwd=project), end="")
        _say("And the task list")
        _orange("task", "list", "--all", cwd=project)
        status = _git("status", "--short", cwd=project)
        print(f"\nThe working tree is untouched: `git status --short` prints {status!r}")
    finally:
        if keep:
            print(f"\nkept: {root} (ORANGE_HOME={root / 'orange-home'})")
        else:
            shutil.rmtree(root, ignore_errors=True)
