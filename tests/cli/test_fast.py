"""The typer-free fast path for `task update` / `task list` means what typer means."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from orange.cli.fast import fast_command
from tests.conftest import Cli


@pytest.mark.parametrize(
    ("args", "fast"),
    [
        (["task", "update", "abc", "--summary", "x"], True),
        (["task", "update", "--status", "working", "--json"], True),
        (["task", "update", "abc", "--branch="], True),
        (["task", "list", "--json", "--all"], True),
        (["task", "update", "abc", "--help"], False),
        (["task", "update", "abc", "--summary"], False),
        (["task", "update", "abc", "--summary", "a", "--summary", "b"], False),
        (["task", "update", "a", "b", "--summary", "x"], False),
        (["task", "list", "--bogus"], False),
        (["task", "show", "abc"], False),
    ],
    ids=[
        "update-summary",
        "update-status",
        "adopt-branch",
        "list",
        "help",
        "missing-value",
        "repeated",
        "two-ids",
        "unknown-option",
        "other-command",
    ],
)
def test_fast_path_takes_only_what_it_fully_understands(args: list[str], fast: bool) -> None:
    assert (fast_command(args) is not None) is fast


def test_fast_and_typer_paths_agree(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    task_id = cli.ok("task", "create", "b", "first", "--no-spawn", "--json").json()["id"]  # type: ignore[index]
    fast = cli.ok("task", "update", task_id, "--summary", "via fast", "--json").json()
    typer_path = cli.ok(
        "task", "update", task_id, "--summary=via typer", "--project", "proj", "--json"
    ).json()
    assert fast["summary"] == "via fast" and typer_path["summary"] == "via typer"  # type: ignore[index]
    bad = cli("task", "update", task_id, "--summary", "x", "--bogus")
    assert bad.code == 2  # typer's usage error, not a silent fast-path guess
    listed = cli.ok("task", "list", "--json").json()
    assert [t["summary"] for t in listed["tasks"]] == ["via typer"]  # type: ignore[index]


def test_fast_path_does_not_import_typer(repo: Path, cli: Cli) -> None:
    cli.ok("project", "add", cwd=repo)
    code = (
        "import sys; from orange.cli.main import run\n"
        "code = run(['task', 'list', '--json'])\n"
        "print(json.dumps({'code': code, 'typer': 'typer' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json\n" + code],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "typer": False}
