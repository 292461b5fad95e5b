"""A task started on another host with ``--host``, reached from here through SSH:
``task peek``, the dashboard's ``o`` and its Enter key; ``--host auto`` and a full
pool there."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml
from textual.widgets import Static

from orange.dashboard.views import RemoteOutputView
from orange.home import orange_home
from orange.store.listing import tasks
from orange.store.store import TaskStore
from tests.conftest import Cli
from tests.dashboard.conftest import app_for, drive
from tests.hosts.conftest import CLAIM_TIMEOUT, make_other
from tests.ssh import SshServer

HELLO = "hello from the other host"
HOLD = {"command": ["sh", "-c", f"echo {HELLO}; sleep 600", "{prompt}"]}


def test_a_task_on_another_host_is_peeked_and_shown_through_ssh(
    cli: Cli, repo: Path, hub: Path, tmp_path: Path, ssh_server: SshServer
) -> None:
    config = yaml.safe_dump({"harnesses": {"hold": HOLD}, "claim_timeout": CLAIM_TIMEOUT})
    (orange_home() / "config.yml").write_text(config)
    other = make_other(tmp_path, hub)
    (Path(other.env["ORANGE_HOME"]) / "config.yml").write_text(config)
    cli.ok("project", "update", "--pool-size", "1", cwd=repo)
    other.orange("project", "update", "--pool-size", "1")
    try:
        cli.ok(*other.add_args(ssh_server), cwd=repo)
        made = cli.ok(
            "task",
            "create",
            "--host",
            "auto",
            "--harness",
            "hold",
            "b1",
            "Hold",
            "--json",
            cwd=repo,
        ).json()
        assert made["on_host"] == "box"
        assert made["host"] == "otherbox"
        listed = cli.ok("host", "list", "--json", cwd=repo).json()["hosts"]
        assert [h["pools"] for h in listed] == [
            [{"project": "proj", "size": 1, "used": 1, "running": {"hold": 1}}]
        ]
        _peeks(cli, repo, made["id"])
        _dashboard(repo, made["id"])

        # Its one worktree is taken: auto finds no host, and nothing is created.
        full = cli("task", "create", "--host", "auto", "b2", "More", cwd=repo)
        assert full.code == 1
        assert "every host of project proj has a full pool" in full.err
        assert [t.id for t in tasks(TaskStore.open(repo).snapshot())] == [made["id"]]
    finally:
        subprocess.run(["tmux", "-L", other.socket, "kill-server"], capture_output=True)


def _peeks(cli: Cli, repo: Path, task_id: str) -> None:
    deadline = time.monotonic() + 20
    while HELLO not in (shown := cli("task", "peek", task_id, cwd=repo)).out:
        assert time.monotonic() < deadline, shown
        time.sleep(0.2)
    assert shown.code == 0


def _dashboard(repo: Path, task_id: str) -> None:
    app = app_for(repo)

    async def script(pilot: Any) -> None:
        assert [(k.key, k.action) for k in app.offered()] == [("enter", "attach")]
        await pilot.press("o")
        assert isinstance(app.screen, RemoteOutputView)
        deadline = time.monotonic() + 20
        while HELLO not in str(app.screen.query_one("#body", Static).render()):
            assert time.monotonic() < deadline, "the other host's output did not show"
            await asyncio.sleep(0.1)
            await pilot.pause()
        await pilot.press("escape")

    drive(app, script)
    assert task_id
