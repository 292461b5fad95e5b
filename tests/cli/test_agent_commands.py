"""Agents are confined to their own task (DESIGN §8, issue 24 finding 4): a process
carrying ``ORANGE_AGENT_ROLE`` (any value, empty included) runs only the commands an
agent needs on its own task; every other command refuses with one line and changes
nothing.  The table covers every command of the real CLI, walked from its click tree,
so a new command is confined the day it is added.  Real CLI, real git, hermetic HOME.
"""

from __future__ import annotations

from collections.abc import Iterator
from importlib.resources import files
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import typer.main
import yaml

from orange.cli.main import build_app
from orange.engine.caller import AGENT_COMMANDS
from orange.home import orange_home
from tests.conftest import Cli, git, run_orange

# What an agent may run, spelled out here: a command added to the table in the core has
# to be added here too, on purpose.
AGENT_MAY_RUN = {
    "task show",
    "task list",
    "task log",
    "task peek",
    "task update",
    "task edit",
    "task complete",
    "task stuck",
    "hook-impl",  # git runs it in the agent's own commits and pushes
}
TASK = "0123abcd"
REFUSED = "an agent may not run"


def refusal(path: str, role: str = "worker") -> str:
    who = (
        f"the {role} agent"
        if role in ("worker", "reviewer")
        else f"the agent of unknown role {role!r}"
    )
    return (
        f"orange: an agent may not run `orange {path}` (ORANGE_AGENT_ROLE is set: "
        f"{who} of task {TASK}); a human must run it\n"
    )


def _paths(command: Any, path: str) -> Iterator[str]:
    """Every command a command line can name: each leaf, and each group that runs
    something of its own (``orange monitor``, the loop)."""
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield path
        return
    if path and getattr(command, "invoke_without_command", False):
        yield path
    for name, sub in subcommands.items():
        yield from _paths(sub, f"{path} {name}".strip())


COMMANDS = sorted(_paths(typer.main.get_command(build_app()), ""))


class Case(NamedTuple):
    path: str
    allowed: bool


CASES = [Case(path, path in AGENT_MAY_RUN) for path in COMMANDS]


def state(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (the hermetic HOME with ``$ORANGE_HOME``, the project's
    repository with its refs and config) and its content."""
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


@pytest.fixture
def agent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ORANGE_AGENT_ROLE", "worker")
    monkeypatch.setenv("ORANGE_TASK_ID", TASK)


@pytest.fixture
def project(cli: Cli, repo: Path) -> Path:
    cli.ok("project", "add", cwd=repo)
    return repo


def test_the_table_names_real_commands_only() -> None:
    assert set(AGENT_COMMANDS) == AGENT_MAY_RUN
    assert set(COMMANDS) >= AGENT_MAY_RUN


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.path.replace(" ", "-"))
def test_an_agent_runs_only_an_agents_commands(
    case: Case, cli: Cli, project: Path, tmp_path: Path, agent: None
) -> None:
    before = state(tmp_path)
    result = cli(*case.path.split(), cwd=project)
    if case.allowed:  # it may fail for other reasons (no arguments), never for this one
        assert REFUSED not in result.err
        return
    assert (result.code, result.err) == (1, refusal(case.path))
    assert result.out == ""
    assert state(tmp_path) == before


@pytest.mark.parametrize("role", ["worker", "reviewer", "", "mystery"], ids=repr)
def test_any_role_even_an_empty_one_is_confined(
    cli: Cli, project: Path, monkeypatch: pytest.MonkeyPatch, role: str
) -> None:
    monkeypatch.setenv("ORANGE_AGENT_ROLE", role)
    monkeypatch.setenv("ORANGE_TASK_ID", TASK)
    result = cli("workspace", "gc", "--json", cwd=project)
    assert result.code == 1
    assert result.err == refusal("workspace gc", role)
    assert result.json() == {"error": refusal("workspace gc", role)[len("orange: ") : -1]}


def trustable_workflow(tmp_path: Path) -> Path:
    """A valid workflow this host does not trust yet: the shipped minimal, reworded."""
    text = files("orange._workflows").joinpath("minimal.yml").read_text()
    path = tmp_path / "mine.yml"
    path.write_text(text.replace("name: minimal", "name: mine", 1))
    return path


def test_an_agent_cannot_make_this_host_trust_a_workflow(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    definition = trustable_workflow(tmp_path)
    before = state(tmp_path)
    monkeypatch.setenv("ORANGE_AGENT_ROLE", "worker")
    monkeypatch.setenv("ORANGE_TASK_ID", TASK)
    refused = cli("workflow", "trust", str(definition), "--yes", cwd=project)
    assert (refused.code, refused.err) == (1, refusal("workflow trust"))
    assert state(tmp_path) == before
    assert not (orange_home() / "trust").exists()
    monkeypatch.delenv("ORANGE_AGENT_ROLE")  # a human may: the refusal was no accident
    cli.ok("workflow", "trust", str(definition), "--yes", cwd=project)
    assert (orange_home() / "trust").exists()


def test_an_agent_cannot_give_a_project_a_setup_command(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: None
) -> None:
    registry = orange_home() / "projects.json"
    before = state(tmp_path)
    for args in (["--setup", "touch pwned"], ["--setup", "--help"]):  # --help is a value
        refused = cli("project", "update", *args, cwd=project)
        assert (refused.code, refused.err) == (1, refusal("project update"))
        assert state(tmp_path) == before
    monkeypatch.delenv("ORANGE_AGENT_ROLE")
    cli.ok("project", "update", "--setup", "touch pwned", cwd=project)
    assert "touch pwned" in registry.read_text()


def test_an_agent_cannot_trust_a_projects_setup_file(
    cli: Cli, project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, agent: None
) -> None:
    (project / ".orange").mkdir()
    (project / ".orange" / "worktree.yml").write_text(yaml.safe_dump({"setup": ["touch x"]}))
    git(project, "add", ".orange")
    git(project, "commit", "-q", "-m", "share the worktree set-up")
    before = state(tmp_path)
    refused = cli("project", "trust-setup", "--yes", cwd=project)
    assert (refused.code, refused.err) == (1, refusal("project trust-setup"))
    assert state(tmp_path) == before
    monkeypatch.delenv("ORANGE_AGENT_ROLE")
    assert (
        cli.ok("project", "trust-setup", "--yes", "--json", cwd=project).json()["already"] is False
    )
    assert state(tmp_path) != before


@pytest.mark.parametrize(
    "args",
    [("--help",), ("task", "--help"), ("workflow", "trust", "--help"), ("monitor", "--help")],
    ids=" ".join,
)
def test_help_is_for_everyone(cli: Cli, tmp_path: Path, agent: None, args: tuple[str, ...]) -> None:
    result = cli(*args, cwd=tmp_path)
    assert result.code == 0
    assert "Usage: orange" in result.out


def test_the_real_process_is_confined_on_the_fast_path_too(project: Path, tmp_path: Path) -> None:
    env = {"ORANGE_AGENT_ROLE": "worker", "ORANGE_TASK_ID": TASK}
    before = state(tmp_path)
    refused = run_orange("sync", "--json", cwd=project, env=env)  # a fast-path command
    assert (refused.code, refused.err) == (1, refusal("sync"))
    assert state(tmp_path) == before
    listed = run_orange("task", "list", "--json", cwd=project, env=env)  # fast, allowed
    assert (listed.code, listed.err) == (0, "")
    assert listed.json()["tasks"] == []
