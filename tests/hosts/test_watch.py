"""The monitor's look at the hosts (`orange.hosts.watch`): a registered host holding an
active task that stops answering shows "host unreachable since T" in `task list`, and
stops showing it once it answers again; a host holding nothing is not asked."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from orange.home import orange_home
from orange.hosts import roster
from orange.hosts.watch import CHECK_EVERY, watch
from tests.conftest import Cli
from tests.hosts.conftest import make_other
from tests.hosts.test_trust import _forge
from tests.ssh import SshServer


def _point(config: Path) -> None:
    """Point the host's entry at ``config`` (as a person editing hosts.json would)."""
    file = orange_home() / "hosts.json"
    data = json.loads(file.read_text())
    data["hosts"][0]["ssh_config"] = str(config)
    file.write_text(json.dumps(data))


def test_a_host_holding_a_task_that_stops_answering_is_shown_unreachable(
    cli: Cli,
    repo: Path,
    hub: Path,
    tmp_path: Path,
    ssh_server: SshServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the listing's note on one line
    other = make_other(tmp_path, hub)
    cli.ok(*other.add_args(ssh_server), cwd=repo)
    task_id = cli.ok("task", "create", "--no-spawn", "--json", "b1", "Work", cwd=repo).json()["id"]
    _point(ssh_server.unreachable_config(tmp_path))
    said: list[str] = []

    assert watch(said.append) == CHECK_EVERY  # holds nothing: not asked
    assert said == []
    assert roster.get("box").unreachable_since == ""

    _forge(repo, task_id, status="working", host="otherbox", workspace="proj--1")
    watch(said.append, now=time.time() + CHECK_EVERY + 1)
    since = roster.get("box").unreachable_since
    assert since
    assert len(said) == 1
    assert said[0].startswith("host box (other) unreachable: ")
    listed = cli.ok("task", "list", cwd=repo).out
    assert f"running on otherbox; host unreachable since {since}" in listed
    assert watch(said.append) > 0  # not due again yet: nothing asked
    assert len(said) == 1

    _point(ssh_server.config)
    watch(said.append, now=time.time() + CHECK_EVERY + 1)
    assert roster.get("box").unreachable_since == ""
    assert "unreachable" not in cli.ok("task", "list", cwd=repo).out
