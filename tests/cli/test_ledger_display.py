"""The ledger where people look: a COST column in `task list`, tokens and cost in
`--json`, the usage records in `task show`."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

from orange import projects
from orange.engine.catalog import load_named
from orange.engine.engine import Engine
from orange.engine.ledger import Usage
from orange.engine.tasks import create_task
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import orange_here
from tests.recording import recording_registry


class Spent:
    """The agent programs' side (their session files), one record: the readers are
    tested on real files in tests/runtime/test_usage.py."""

    def read(self, task: Task, since: str, until: str) -> Usage | None:
        return Usage(1200, 80, 1200, "claude-opus-4-8", Decimal("0.010325"), 125)


def _planning(repo: Path, summary: str) -> tuple[TaskStore, Task, Engine]:
    """A task of a new project in planning, and the engine that moved it there."""
    project = projects.add(repo)
    store = TaskStore.open(repo)
    task = create_task(store, project, load_named("default"), summary=summary)
    engine = Engine(store, project, registry=recording_registry()[0])
    engine.transition(task.id, "planning")
    return store, task, engine


def test_cost_in_list_json_and_show(repo: Path) -> None:
    _, task, engine = _planning(repo, "Priced work")
    engine.usage = Spent()
    engine.transition(task.id, "clarification")

    listed = orange_here("task", "list", cwd=repo)
    assert listed.code == 0, listed.err
    assert "COST" in listed.out and "$0.01" in listed.out
    as_json = json.loads(orange_here("task", "list", "--json", cwd=repo).out)["tasks"][0]
    assert as_json["tokens"] == {"in": 1200, "out": 80, "cache": 1200}
    assert as_json["cost_usd"] == "0.010325"
    shown = orange_here("task", "show", task.id, cwd=repo).out
    assert "usage" in shown
    assert "claude-opus-4-8  1200/80/1200  $0.010325  2 min" in shown


def test_a_budget_set_later_shows_beside_the_cost(repo: Path) -> None:
    store, task, engine = _planning(repo, "Budgeted")
    engine.usage = Spent()
    engine.transition(task.id, "clarification")
    bad = orange_here("task", "update", task.id, "--budget", "-3", cwd=repo)
    assert bad.code == 1 and "budget '-3' is not an amount of dollars" in bad.err
    ok = orange_here("task", "update", task.id, "--budget", "$5", cwd=repo)
    assert ok.code == 0, ok.err
    assert store.get(task.id).fields["budget_usd"] == "5.00"
    assert "$0.01/5.00" in orange_here("task", "list", cwd=repo).out


def test_the_project_default_budget(repo: Path) -> None:
    projects.add(repo)
    bad = orange_here("project", "update", "--budget", "plenty", cwd=repo)
    assert bad.code == 1 and "budget 'plenty' is not an amount of dollars" in bad.err
    ok = orange_here("project", "update", "--budget", "7.5", cwd=repo)
    assert ok.code == 0 and "budget=$7.50" in ok.out, ok.err
    made = orange_here("task", "create", "b1", "Default", "--no-spawn", "--json", cwd=repo)
    own = orange_here(
        "task", "create", "b2", "Own", "--no-spawn", "--budget", "2", "--json", cwd=repo
    )
    assert json.loads(made.out)["budget_usd"] == "7.50"
    assert json.loads(own.out)["budget_usd"] == "2.00"
    assert orange_here("project", "update", "--budget", "off", cwd=repo).code == 0
    none = orange_here("task", "create", "b3", "None", "--no-spawn", "--json", cwd=repo)
    assert "budget_usd" not in json.loads(none.out)


class Unread:
    """A task whose harness names no usage reader (`orange.runtime.usage.readers_of`),
    then, once, a priced record."""

    def __init__(self) -> None:
        self.priced = False

    def read(self, task: Task, since: str, until: str) -> Usage | None:
        if self.priced:
            return Usage(1200, 80, 0, "claude-opus-4-8", Decimal("0.25"), 60, unread=("mine",))
        return Usage(cost=None, unread=("mine",))


def test_a_cost_that_cannot_be_known_is_said_once_and_shown_unknown(repo: Path) -> None:
    _, task, engine = _planning(repo, "Unread")
    engine.usage = source = Unread()
    first = engine.transition(task.id, "clarification")
    said = [m for m in first.messages if "names no usage reader" in m]
    assert said == [
        "warning: harness mine names no usage reader: its tokens are not recorded and the "
        "task's cost is unknown (give it `usage: claude`, codex, pi or opencode under "
        "harnesses: in config.yml, or `usage: none` if it calls no model)"
    ]
    assert first.task.fields["cost_unknown"] is True
    again = engine.transition(task.id, "planning")  # known to be unknown: nothing to say
    assert not [m for m in again.messages if "usage" in m]
    assert again.task.fields["usage_through"] == first.task.fields["usage_through"]
    listed = orange_here("task", "list", cwd=repo).out
    assert "unknown" in listed and "$0.00" not in listed
    as_json = json.loads(orange_here("task", "list", "--json", cwd=repo).out)["tasks"][0]
    assert as_json["cost_unknown"] is True
    source.priced = True
    engine.transition(task.id, "clarification")
    assert "$0.25+?" in orange_here("task", "list", cwd=repo).out
