from __future__ import annotations

import json
from pathlib import Path

import pytest

from orange.home import orange_home
from tests.conftest import Cli, git, make_repo


def _registry() -> list[dict[str, object]]:
    path = orange_home() / "projects.json"
    return json.loads(path.read_text())["projects"] if path.exists() else []


def test_add_list_update_remove(cli: Cli, repo: Path) -> None:
    out = cli.ok("project", "add", "--pool-size", "3", "--json", cwd=repo).json()
    assert out == {"name": "proj", "path": str(repo), "default_branch": "main",
                   "pool_size": 3, "workflow": "default", "copy": [], "setup": [],
                   "teardown": [], "port_base": None, "port_stride": 10,
                   "sync_interval": 0, "check": "", "budget": ""}  # fmt: skip
    listed = cli.ok("project", "list", "--json").json()
    assert listed == {"projects": [out]}
    cli.ok("project", "update", "--pool-size", "5", "--workflow", "minimal", cwd=repo / ".")
    assert _registry()[0]["pool_size"] == 5
    assert _registry()[0]["workflow"] == "minimal"
    shown = cli.ok("project", "update", "--check", "make test", cwd=repo).out
    assert "check: make test" in shown and _registry()[0]["check"] == "make test"
    cli.ok("project", "update", "--check", "", cwd=repo)
    assert _registry()[0]["check"] == ""
    cli.ok("project", "remove", "proj")
    assert _registry() == []


def test_default_branch_prefers_origin_head(cli: Cli, repo: Path, tmp_path: Path) -> None:
    git(repo, "branch", "trunk")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "-b", "trunk", str(repo), str(clone))
    git(clone, "remote", "set-head", "origin", "main")
    git(clone, "checkout", "-q", "-b", "feature")
    out = cli.ok("project", "add", str(clone), "--json").json()
    assert out["default_branch"] == "main"  # origin/HEAD, not the current branch


def test_default_branch_falls_back_to_current_branch(cli: Cli, repo: Path) -> None:
    git(repo, "checkout", "-q", "-b", "develop")
    assert cli.ok("project", "add", "--json", cwd=repo).json()["default_branch"] == "develop"


@pytest.mark.parametrize(
    ("setup", "args", "message"),
    [
        ("none", ["project", "add", "{tmp}"], "not inside a git repository"),
        ("added", ["project", "add", "{repo}", "--name", "other"], "already registered"),
        ("added", ["project", "add", "{other}", "--name", "proj"], "already registered"),
        ("none", ["project", "add", "{repo}", "--pool-size", "0"], "at least 1"),
        ("added", ["project", "update", "proj", "--pool-size", "0"], "at least 1"),
        ("none", ["project", "add", "{repo}", "--workflow", "nope"], "unknown workflow"),
        ("none", ["project", "add", "{repo}", "--workflow", "run-subtask"], "stays planned"),
        ("added", ["project", "update", "proj", "--workflow", "run-subtask"], "stays planned"),
        ("none", ["project", "remove", "ghost"], "no project named"),
        ("none", ["project", "add", "{repo}", "--name", "bad name"], "not allowed"),
    ],
    ids=["not-a-repo", "path-twice", "name-twice", "pool-zero", "update-pool-zero",
         "unknown-workflow", "never-starting-workflow", "update-never-starting-workflow",
         "remove-unknown", "bad-name"],
)  # fmt: skip
def test_errors_are_one_line_exit_1_and_write_nothing(
    cli: Cli, repo: Path, tmp_path: Path, setup: str, args: list[str], message: str
) -> None:
    other = make_repo(tmp_path / "other")
    plain = tmp_path / "plain"
    plain.mkdir()
    if setup == "added":
        cli.ok("project", "add", str(repo))
    before = _registry()
    argv = [a.format(tmp=plain, repo=repo, other=other) for a in args]
    result = cli(*argv, cwd=plain)
    assert result.code == 1
    assert message in result.err
    assert len(result.err.strip().splitlines()) == 1
    assert "Traceback" not in result.err
    assert _registry() == before


def test_commands_infer_the_project_from_worktree_and_subdirectory(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    cli.ok("project", "add", "--name", "coffee", cwd=repo)
    wt = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "side", str(wt))
    (repo / "src" / "deep").mkdir(parents=True)
    a = cli.ok("task", "create", "a-branch", "from worktree", "--no-spawn", "--json", cwd=wt).json()
    b = cli.ok("task", "create", "b-branch", "from subdir", "--no-spawn", "--json",
               cwd=repo / "src" / "deep").json()  # fmt: skip
    assert a["project"] == b["project"] == "coffee"
    listed = cli.ok("task", "list", "--json", cwd=wt).json()
    assert {t["id"] for t in listed["tasks"]} == {a["id"], b["id"]}


def test_update_without_options_says_what_can_be_updated(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    result = cli("project", "update")
    assert result.code == 1 and result.err.count("\n") == 1
    assert "nothing to update" in result.err and "--pool-size" in result.err


def test_add_outside_a_repository_points_to_a_checkout(cli: Cli, tmp_path: Path) -> None:
    result = cli("project", "add", str(tmp_path))
    assert result.code == 1 and "is not inside a git repository" in result.err
    assert "--project" not in result.err and "inside a git checkout" in result.err
