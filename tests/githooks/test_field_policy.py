"""The field policy (`orange.engine.policy`) at the server and on this host: a pushed
change of a field is judged by the one table (its value's check, its owner, a field
no one writes), and a rewind of the engine's agent run is refused."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.forgery import verify_new
from orange.engine.tasks import create_task
from orange.engine.trust import trusted_here
from orange.store import layout
from orange.store.task import Task
from tests.conftest import Cli, git
from tests.githooks.test_forgery import (
    Landed,
    engine,
    forge,
    forge_fields,
    landed,
    landing,
    planning_task,
    push,
    task_text,
    tip,
)

__all__ = ["engine", "landed", "landing"]  # the fixtures, used by name


class Change(NamedTuple):
    field: str
    value: object
    says: str


REFUSED = {
    # Each a name git or Orange would never take, which a later `git push origin
    # --delete <branch>` or checkout would read as something else.
    "branch @": Change("branch", "@", "branch '@' is not a valid branch name"),
    "branch HEAD": Change("branch", "HEAD", "is not a valid branch name"),
    "branch -x": Change("branch", "-x", "is not a valid branch name"),
    "branch option": Change("branch", "--receive-pack=/x", "is not a valid branch name"),
    "branch range": Change("branch", "a..b", "is not a valid branch name"),
    "branch :main": Change("branch", ":main", "is not a valid branch name"),
    "branch +main": Change("branch", "+main", "is not a valid branch name"),
    "branch refs/": Change("branch", "refs/heads/main", "is not a valid branch name"),
    # git reads a bare name as refs/<name> first: the user's main, the tasks ref.
    "branch heads/": Change("branch", "heads/main", "is not a valid branch name"),
    "branch orange/": Change("branch", "orange/tasks", "is not a valid branch name"),
    "branch ORIG_HEAD": Change("branch", "ORIG_HEAD", "is not a valid branch name"),
    "branch long": Change("branch", "b" * 5000, "branch the branch name is 5000 characters"),
    # The branch a task merges into (no base: the repository's default branch): merge,
    # cancel and the worktree code would act on the user's main.
    "branch main": Change("branch", "main", "branch 'main' is the branch this task merges into"),
    "harness": Change("harness", "$(touch /tmp/x)", "harness must be a name of letters"),
    "created_at": Change("created_at", "2000-01-01T00:00:00Z", "created_at cannot change"),
    "unknown": Change("priority", "high", "unknown field 'priority'"),
    "count as text": Change("review_round", "many", "review_round must be a whole number"),
    # The ledger (`orange.engine.ledger`): totals change only with a usage record.
    "tokens": Change(
        "tokens", {"in": 1, "out": 2, "cache": 3}, "tokens changed without a usage record"
    ),
    "cost": Change("cost_usd", "0.01", "cost_usd changed without a usage record"),
    "cost negative": Change("cost_usd", "-5", "cost_usd must be an amount of dollars"),
    "tokens as text": Change("tokens", "many", "tokens must be a mapping of in, out"),
    "usage_through": Change("usage_through", "2026-01-01T00:00:00Z", "usage_through changed"),
    "budget": Change("budget_usd", "lots", "budget_usd must be an amount of dollars"),
    # A text field holds text: a list or a number is not read as its text (one per
    # owner whose fields are text: a person's, this host's, the engine's).
    "summary list": Change("summary", ["a", "b"], "summary must be text"),
    "attention number": Change("attention", 42, "attention must be text"),
    "pr_url mapping": Change("pr_url", {"url": "x"}, "pr_url must be text"),
    "effort bool": Change("effort", True, "effort must be text"),
}


@pytest.mark.parametrize("change", REFUSED.values(), ids=REFUSED.keys())
def test_the_server_refuses_a_change_the_policy_forbids(landed: Landed, change: Change) -> None:
    repo, hub, task = landed.repo, landed.hub, landed.task
    forge_fields(repo, task.id, **{change.field: change.value})
    result = push(repo)
    assert result.returncode != 0
    said = [line.removeprefix("remote: ").strip() for line in result.stderr.splitlines()]
    lines = [line for line in said if line.startswith(f"task {task.id}:")]
    assert len(lines) == 1 and change.says in lines[0], said
    assert tip(hub) == landed.tip


@pytest.mark.parametrize(
    "change",
    [
        REFUSED["branch option"],
        REFUSED["branch main"],
        REFUSED["created_at"],
        REFUSED["unknown"],
        REFUSED["cost"],
        REFUSED["summary list"],
        REFUSED["pr_url mapping"],
    ],
    ids=["branch", "branch main", "created_at", "unknown", "cost", "summary list", "pr_url"],
)
def test_a_clone_that_fetched_it_restores_the_field(
    engine: Engine, repo: Path, change: Change
) -> None:
    task = planning_task(engine)
    forge_fields(repo, task.id, **{change.field: change.value})
    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    assert [change.says in v.reason for v in found.restored] == [True]
    restored = Task.parse(task_text(repo, task.id), where="restored")
    assert restored.fields.get(change.field) == task.fields.get(change.field)


@pytest.mark.parametrize(
    "field, value", [("project", 7), ("summary", ["x"])], ids=["identity", "human"]
)
def test_the_server_refuses_a_new_task_whose_text_field_is_no_text(
    landed: Landed, field: str, value: object
) -> None:
    """A task pushed new with a list or a number where text is owed: refused, not read
    as the text ``str()`` would make of it."""
    repo, hub = landed.repo, landed.hub
    copy = Task.parse(task_text(repo, landed.task.id), where="copy")
    new = copy.with_fields(id="zz0text", branch="zz0text", **{field: value})
    forge(repo, {layout.task_path("zz0text"): new.render()})
    result = push(repo)
    assert result.returncode != 0
    assert f"task zz0text: {field} must be " in result.stderr
    assert tip(hub) == landed.tip


@pytest.mark.parametrize(
    "fields, says",
    [
        ({"branch": "main"}, "branch 'main' is the branch this task merges into"),
        (
            {"branch": "release", "base": "release"},
            "branch 'release' is the branch this task merges",
        ),
        ({"branch": "main", "base": "release"}, "branch 'main' is the repository's default branch"),
    ],
    ids=["default", "its base", "default with a base"],
)
def test_the_server_refuses_a_new_task_on_the_branch_it_merges_into(
    engine: Engine, repo: Path, hub: Path, fields: dict[str, str], says: str
) -> None:
    assert engine.project is not None
    task = create_task(engine.store, engine.project, load_named("default"), summary="new")
    assert push(repo).returncode == 0
    landed = tip(hub)
    copy = Task.parse(task_text(repo, task.id), where="copy").with_fields(id="zz0main", **fields)
    forge(repo, {layout.task_path("zz0main"): copy.render()})
    result = push(repo)
    assert result.returncode != 0
    assert f"task zz0main: {says}" in result.stderr
    assert tip(hub) == landed


def test_the_servers_default_branch_is_its_head(engine: Engine, repo: Path, hub: Path) -> None:
    """The hub knows its default branch from its own HEAD, not from the pushing clone."""
    git(hub, "symbolic-ref", "HEAD", "refs/heads/trunk")
    task = planning_task(engine)
    assert push(repo).returncode == 0
    forge_fields(repo, task.id, branch="trunk")
    result = push(repo)
    assert result.returncode != 0
    assert f"task {task.id}: branch 'trunk' is the branch this task merges into" in result.stderr


def test_a_later_commit_that_keeps_the_forged_field_repairs_nothing(landed: Landed) -> None:
    repo, task = landed.repo, landed.task
    forge_fields(repo, task.id, branch="--receive-pack=/x")
    forge_fields(repo, task.id, summary="just a summary")
    result = push(repo)
    assert result.returncode != 0
    assert f"task {task.id}: branch '--receive-pack=/x' is not a valid" in result.stderr


ACCEPTED = {
    "branch": Change("branch", "feature/login-form", ""),
    "harness": Change("harness", "codex", ""),
    "summary": Change("summary", "a better summary", ""),
    "budget": Change("budget_usd", "20.00", ""),
}


@pytest.mark.parametrize("change", ACCEPTED.values(), ids=ACCEPTED.keys())
def test_the_server_takes_a_change_a_person_may_make(landed: Landed, change: Change) -> None:
    repo, hub, task = landed.repo, landed.hub, landed.task
    forge_fields(repo, task.id, **{change.field: change.value})
    result = push(repo)
    assert result.returncode == 0, result.stderr
    assert tip(hub) == tip(repo)


def test_a_rewind_of_the_agent_run_to_the_one_that_died_is_refused(landed: Landed) -> None:
    """The monitor handles each run's death once (``dead_run``): an ``agent_run`` put
    back to the run whose death is recorded would make it ignore the next death."""
    repo, hub, task = landed.repo, landed.hub, landed.task
    died = task.str_field("agent_run")
    forge_fields(repo, task.id, crash_count=1, dead_run=f"{died}@planning")
    forge_fields(repo, task.id, agent_run="2026-11-27T12:00:00Z-a1b2c3")  # the respawn
    assert push(repo).returncode == 0, "a death and a respawn are legal"
    respawned = tip(hub)
    forge_fields(repo, task.id, agent_run=died)
    result = push(repo)
    assert result.returncode != 0
    assert f"task {task.id}: agent_run changed in planning without a move" in result.stderr
    assert tip(hub) == respawned


def test_a_branch_name_past_the_bound_is_refused_at_create(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", str(repo))
    result = cli("task", "create", "b" * 5000, "long", "--no-spawn", cwd=repo)
    assert result.code == 1
    lines = result.err.strip().splitlines()
    assert lines == [
        "orange: the branch name is 5000 characters long; at most 200 "
        "(choose a shorter branch name)"
    ]
    assert len(result.err) < 300


def test_a_summary_the_policy_refuses_is_refused_by_the_cli(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", str(repo))
    task_id = cli.ok("task", "create", "--no-spawn", "--json", "short", cwd=repo).json()["id"]
    before = task_text(repo, task_id)
    result = cli("task", "update", task_id, "--summary", "s" * 70_000, cwd=repo)
    assert result.code == 1
    assert result.err.strip().splitlines() == ["orange: summary is longer than 65536 characters"]
    assert task_text(repo, task_id) == before


RUN = """\
---
id: runaaaaa
project: proj
host: elsewhere
status: running
branch: run/feature
subtasks: []
---
"""


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (("branch: run/feature", "branch: --upload-pack=/x"), "branch cannot change"),
        (("status: running", "status: running\ncommand: rm -rf ~"), "unknown field 'command'"),
        (("host: elsewhere", "host: here"), "host cannot change"),
    ],
    ids=["bad branch", "unknown field", "identity"],
)
def test_a_run_record_is_held_to_its_table(
    landed: Landed, change: tuple[str, str], says: str
) -> None:
    repo, hub = landed.repo, landed.hub
    forge(repo, {"runs/runaaaaa/RUN.md": RUN})
    assert push(repo).returncode == 0, "a run record as `orange run` writes it"
    recorded = tip(hub)
    forge(repo, {"runs/runaaaaa/RUN.md": RUN.replace(*change)})
    result = push(repo)
    assert result.returncode != 0
    assert f"task runs/runaaaaa/RUN.md: {says}" in result.stderr
    assert tip(hub) == recorded
