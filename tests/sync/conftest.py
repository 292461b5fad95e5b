"""Fixtures of the sync tests: a bare hub with the server hook, and clones of it, each
its own host (``ORANGE_HOME``, ``ORANGE_HOST``), driven through the CLI in-process."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from orange.githooks import shims as githooks
from orange.store import layout
from tests.conftest import Cli, Result, git


class Clone:
    """One teammate's clone of the project, with its own Orange home and host name."""

    def __init__(self, cli: Cli, monkeypatch: pytest.MonkeyPatch, path: Path, host: str) -> None:
        self.cli, self.monkeypatch, self.path, self.host = cli, monkeypatch, path, host

    def _enter(self) -> None:
        self.monkeypatch.setenv("ORANGE_HOME", str(self.path.parent / f"home-{self.host}"))
        self.monkeypatch.setenv("ORANGE_HOST", self.host)

    def __call__(self, *args: str, stdin: str | None = None) -> Result:
        self._enter()
        return self.cli(*args, cwd=self.path, stdin=stdin)

    def ok(self, *args: str, stdin: str | None = None) -> Result:
        self._enter()
        return self.cli.ok(*args, cwd=self.path, stdin=stdin)

    def create(self, summary: str) -> str:
        return str(self.ok("task", "create", "--no-spawn", "--json", "", summary).json()["id"])

    def tree(self) -> str:
        return git(self.path, "rev-parse", f"{layout.TASKS_REF}^{{tree}}").strip()

    def commits(self) -> set[str]:
        return set(git(self.path, "rev-list", layout.TASKS_REF, check=False).split())


@pytest.fixture
def hub(tmp_path: Path, repo: Path) -> Path:
    """A bare hub holding the project's main branch, its ``update`` hook installed."""
    path = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(path))
    githooks.install_server_hook(path)
    git(repo, "remote", "add", "origin", str(path))
    git(repo, "push", "-q", "origin", "main")
    return path


@pytest.fixture
def clones(
    tmp_path: Path, hub: Path, cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> Callable[[int], list[Clone]]:
    """``n`` clones of the hub, each registered as the project ``proj`` on its host."""

    def make(n: int) -> list[Clone]:
        made = []
        start = len(list(tmp_path.glob("clone*")))
        for index in range(start, start + n):
            path = tmp_path / f"clone{index}"
            git(tmp_path, "clone", "-q", str(hub), str(path))
            clone = Clone(cli, monkeypatch, path, f"host{index}")
            clone.ok("project", "add", "--name", "proj")
            made.append(clone)
        return made

    monkeypatch.delenv("ORANGE_HOME", raising=False)
    os.environ.pop("ORANGE_TASK_ID", None)
    return make
