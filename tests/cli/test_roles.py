"""A workflow whose states have other names works the same: the CLI and the engine
find the queue, the finished states and the human's states by their roles."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from orange.home import orange_home
from tests.conftest import Cli

SHIP = {
    "name": "ship",
    "version": 1,
    "states": {
        "backlog": {"role": "queue"},
        "doing": None,
        "shipped": {"terminal": True, "role": "done"},
        "dropped": {"terminal": True, "role": "cancelled"},
    },
    "transitions": [
        {"from": "backlog", "to": "doing"},
        {"from": "doing", "to": "shipped"},
        {"from": "backlog", "to": "dropped"},
        {"from": "doing", "to": "dropped"},
    ],
}


@pytest.fixture
def project(cli: Cli, repo: Path) -> Path:
    folder = orange_home() / "workflows"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ship.yml").write_text(yaml.safe_dump(SHIP, sort_keys=False))
    cli.ok("project", "add", cwd=repo)
    cli.ok("project", "update", "proj", "--workflow", "ship")
    return repo


def _create(cli: Cli, branch: str) -> str:
    data = cli.ok("task", "create", branch, f"do {branch}", "--no-spawn", "--json").json()
    assert data["status"] == "backlog"
    return str(data["id"])


def _listed(cli: Cli, *args: str) -> set[str]:
    return {t["id"] for t in cli.ok("task", "list", "--json", *args).json()["tasks"]}


def test_listing_hides_what_the_workflow_ends(cli: Cli, project: Path) -> None:
    shipped, dropped, doing = (_create(cli, b) for b in ("a", "b", "c"))
    cli.ok("task", "update", shipped, "--status", "doing")
    cli.ok("task", "update", shipped, "--status", "shipped")
    cli.ok("task", "cancel", dropped, "--yes")  # to the state with role: cancelled
    cli.ok("task", "update", doing, "--status", "doing")
    assert _listed(cli) == {doing}  # the fast path, from the cache
    assert _listed(cli, "--body") == {doing}  # built from the tasks themselves
    assert _listed(cli, "--all") == {shipped, dropped, doing}
    assert _listed(cli, "--status", "dropped") == {dropped}
    table = cli.ok("task", "list").out
    assert doing in table and shipped not in table and dropped not in table


def test_delete_takes_a_task_in_any_state_its_workflow_ends(cli: Cli, project: Path) -> None:
    active, dropped = _create(cli, "a"), _create(cli, "b")
    refused = cli("task", "delete", active, "--yes")
    assert refused.code == 1
    assert "is backlog; only a dropped or shipped task can be deleted" in refused.err
    cli.ok("task", "cancel", dropped, "--yes")
    cli.ok("task", "delete", dropped, "--yes")
    assert _listed(cli, "--all") == {active}
