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
from tests.conftest import run_orange
from tests.recording import recording_registry


class Spent:
    """The agent programs' side (their session files), one record: the readers are
    tested on real files in tests/runtime/test_usage.py."""

    def read(self, task: Task, since: str, until: str) -> Usage | None:
        return Usage(1200, 80, 1200, "claude-opus-4-8", Decimal("0.010325"), 125)


def test_cost_in_list_json_and_show(repo: Path) -> None:
    project = projects.add(repo)
    store = TaskStore.open(repo)
    task = create_task(store, project, load_named("default"), summary="Priced work")
    engine = Engine(store, project, registry=recording_registry()[0])
    engine.transition(task.id, "planning")
    engine.usage = Spent()
    engine.transition(task.id, "clarification")

    listed = run_orange("task", "list", cwd=repo)
    assert listed.code == 0, listed.err
    assert "COST" in listed.out and "$0.01" in listed.out
    as_json = json.loads(run_orange("task", "list", "--json", cwd=repo).out)["tasks"][0]
    assert as_json["tokens"] == {"in": 1200, "out": 80, "cache": 1200}
    assert as_json["cost_usd"] == "0.010325"
    shown = run_orange("task", "show", task.id, cwd=repo).out
    assert "usage" in shown
    assert "claude-opus-4-8  1200/80/1200  $0.010325  2 min" in shown


def test_a_budget_set_later_shows_beside_the_cost(repo: Path) -> None:
    project = projects.add(repo)
    store = TaskStore.open(repo)
    task = create_task(store, project, load_named("default"), summary="Budgeted")
    engine = Engine(store, project, registry=recording_registry()[0])
    engine.transition(task.id, "planning")
    engine.usage = Spent()
    engine.transition(task.id, "clarification")
    bad = run_orange("task", "update", task.id, "--budget", "-3", cwd=repo)
    assert bad.code == 1 and "budget '-3' is not an amount of dollars" in bad.err
    ok = run_orange("task", "update", task.id, "--budget", "$5", cwd=repo)
    assert ok.code == 0, ok.err
    assert store.get(task.id).fields["budget_usd"] == "5.00"
    assert "$0.01/5.00" in run_orange("task", "list", cwd=repo).out


def test_the_project_default_budget(repo: Path) -> None:
    projects.add(repo)
    bad = run_orange("project", "update", "--budget", "plenty", cwd=repo)
    assert bad.code == 1 and "budget 'plenty' is not an amount of dollars" in bad.err
    ok = run_orange("project", "update", "--budget", "7.5", cwd=repo)
    assert ok.code == 0 and "budget=$7.50" in ok.out, ok.err
    made = run_orange("task", "create", "b1", "Default", "--no-spawn", "--json", cwd=repo)
    own = run_orange(
        "task", "create", "b2", "Own", "--no-spawn", "--budget", "2", "--json", cwd=repo
    )
    assert json.loads(made.out)["budget_usd"] == "7.50"
    assert json.loads(own.out)["budget_usd"] == "2.00"
    assert run_orange("project", "update", "--budget", "off", cwd=repo).code == 0
    none = run_orange("task", "create", "b3", "None", "--no-spawn", "--json", cwd=repo)
    assert "budget_usd" not in json.loads(none.out)
