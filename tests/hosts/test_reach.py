"""A task started on another host with ``--host``, reached from here through SSH:
``task peek``, the dashboard's ``o`` and its Enter key; another started there with the
dashboard's ``h`` (its host dialog); ``--host auto`` and a full pool there; a change
made here reaching it at once (the nudge: that host has no automatic sync here, its
monitor is off), and a nudge of an unreachable host."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import yaml
from textual.widgets import DataTable, OptionList, Static

from orange.dashboard.screens import HostScreen
from orange.dashboard.views import RemoteOutputView
from orange.home import orange_home
from orange.hosts import roster
from orange.store.listing import tasks
from orange.store.store import TaskStore
from tests.conftest import Cli
from tests.dashboard.conftest import app_for, drive
from tests.e2e.conftest import sessions_on
from tests.helpers import retry_until
from tests.hosts.conftest import CLAIM_TIMEOUT, make_other
from tests.hosts.test_watch import _point
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
            [{"project": "proj", "size": 2, "used": 1, "running": {"hold": 1}}]
        ]
        _peeks(cli, repo, made["id"])
        parked = cli.ok(
            "task", "create", "--no-spawn", "--harness", "hold", "b2", "Two", "--json", cwd=repo
        ).json()["id"]
        _dashboard(repo, made["id"], parked)
        assert len(sessions_on(other.socket)) == 2

        # Its two worktrees are taken: auto finds no host, and nothing is created.
        full = cli("task", "create", "--host", "auto", "b3", "More", cwd=repo)
        assert full.code == 1
        assert "every host of project proj has a full pool" in full.err
        assert {t.id for t in tasks(TaskStore.open(repo).snapshot())} == {made["id"], parked}

        # Cancelled here: the command nudges the host, which syncs and stops its agent
        # (nothing else syncs there: its monitor is off).
        cli.ok("task", "cancel", made["id"], "--yes", cwd=repo)
        retry_until(lambda: len(sessions_on(other.socket)) == 1, 60, 0.2, "the nudged host")
        assert roster.get("box").unreachable_since == ""

        # Unreachable: the command still succeeds; the nudge remembers the host as such.
        _point(ssh_server.unreachable_config(tmp_path))
        cli.ok("task", "create", "--no-spawn", "b4", "Later", cwd=repo)
        retry_until(lambda: roster.get("box").unreachable_since, 60, 0.2, "the failed nudge")
        log = orange_home() / "logs" / "nudge.log"
        said = "orange: host box (other) unreachable: "
        retry_until(lambda: said in log.read_text(), 10, 0.1, "the nudge's line")
    finally:
        subprocess.run(["tmux", "-L", other.socket, "kill-server"], capture_output=True)


def _peeks(cli: Cli, repo: Path, task_id: str) -> None:
    deadline = time.monotonic() + 20
    while HELLO not in (shown := cli("task", "peek", task_id, cwd=repo)).out:
        assert time.monotonic() < deadline, shown
        time.sleep(0.2)
    assert shown.code == 0


def _dashboard(repo: Path, remote: str, parked: str) -> None:
    """``o`` shows the remote task's output; ``h`` on the parked one lists the host and
    starts it there."""
    app = app_for(repo)

    def select(task_id: str) -> None:
        at = [row.id for row in app.shown_rows].index(task_id)
        app.query_one("#table", DataTable).move_cursor(row=at)

    async def script(pilot: Any) -> None:
        select(remote)
        await pilot.pause()
        assert [(k.key, k.action) for k in app.offered()] == [
            ("enter", "attach"),
            ("h", "to_host"),
        ]
        await pilot.press("o")
        assert isinstance(app.screen, RemoteOutputView)
        deadline = time.monotonic() + 20
        while HELLO not in str(app.screen.query_one("#body", Static).render()):
            assert time.monotonic() < deadline, "the other host's output did not show"
            await asyncio.sleep(0.1)
            await pilot.pause()
        await pilot.press("escape")

        select(parked)
        await pilot.pause()
        assert ("h", "to_host") in [(k.key, k.action) for k in app.offered()]
        await pilot.press("h")
        assert isinstance(app.screen, HostScreen)
        options = app.screen.query_one("#hosts", OptionList)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert shown == ["box  ready: 1 of 2 worktrees free; agents: demo, hold"]
        await pilot.press("c")  # checked again over SSH: its line replaced
        checked = "box  checked: ready, 1 of 2 worktrees free; agents: demo, hold"
        deadline = time.monotonic() + 60
        while str(options.get_option_at_index(0).prompt) != checked:
            assert time.monotonic() < deadline, options.get_option_at_index(0).prompt
            await asyncio.sleep(0.2)
            await pilot.pause()
        await pilot.press("enter")
        deadline = time.monotonic() + 120
        while "started on host box" not in app.lines.get("message", ""):
            assert time.monotonic() < deadline, app.lines.get("message")
            await asyncio.sleep(0.2)
            await pilot.pause()
        assert TaskStore.open(repo).get(parked).str_field("host") == "otherbox"

    drive(app, script)
