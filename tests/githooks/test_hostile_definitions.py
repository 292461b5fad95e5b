"""A workflow definition is untrusted input too: an alias bomb, a deep document or an
oversized one committed in ``meta/workflows/`` (or saved as a local file) is refused by
the one bounded reader at every entry point, each answering with one line or one broken
entry instead of spinning (issue: the bounded parsing covered TASK.md only)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from orange.engine.engine import Engine
from orange.engine.forgery import verify_new
from orange.engine.loader import load_workflow
from orange.engine.trust import trusted_here
from orange.errors import WorkflowError
from orange.store import bounded, layout
from orange.store.task import Task
from tests.conftest import Result, orange_bin
from tests.githooks.test_forgery import engine, forge, planning_task, push, task_text, tip
from tests.hostile import BOMB_DEFINITION, NODE_LIMIT

__all__ = ["engine"]  # the fixture, used by name

# Each a definition named "bomb" that a reader following every alias, or recursing into
# every level, would take long or forever to build; the alias bomb is a valid workflow
# but for its aliases, so only the node limit refuses it.
HOSTILE = {
    "alias-bomb": BOMB_DEFINITION,
    "deep": "name: bomb\nversion: 1\nx: " + "[" * 50_000 + "]" * 50_000 + "\n",
}
SAYS = {"alias-bomb": NODE_LIMIT, "deep": "is nested deeper than 32"}
# A hang is seen as this timeout; a refusal takes well under a second.
HANG = 60


def orange(*args: str, cwd: Path) -> Result:
    done = subprocess.run(
        [orange_bin(), *args], cwd=cwd, capture_output=True, text=True, timeout=HANG, check=False
    )
    return Result(done.returncode, done.stdout, done.stderr)


def bomb_task(repo: Path, template_id: str, definition: str) -> str:
    """A forged commit adding the definition and a task created under it; its id."""
    template = Task.parse(task_text(repo, template_id), where="template")
    task_id = "bombaaaa"
    rev = hashlib.sha1(definition.encode()).hexdigest()[:10]
    task = template.with_fields(id=task_id, workflow="bomb", workflow_rev=rev, status="pending")
    forge(
        repo,
        {layout.workflow_path("bomb"): definition, layout.task_path(task_id): task.render()},
    )
    return task_id


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_the_server_refuses_a_hostile_definition_with_one_line(
    engine: Engine, repo: Path, hub: Path, kind: str
) -> None:
    template = planning_task(engine).id
    assert push(repo).returncode == 0
    landed = tip(hub)
    bomb_task(repo, template, HOSTILE[kind])
    result = subprocess.run(
        ["git", "push", "-q", "hub", f"{layout.TASKS_REF}:{layout.TASKS_REF}"],
        cwd=repo, capture_output=True, text=True, timeout=HANG, check=False,
    )  # fmt: skip
    assert result.returncode != 0
    said = [line.removeprefix("remote: ").strip() for line in result.stderr.splitlines()]
    lines = [line for line in said if line.startswith("task meta/workflows/bomb.yml:")]
    assert len(lines) == 1 and SAYS[kind] in lines[0], said
    assert tip(hub) == landed


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_clone_that_fetched_a_hostile_definition_keeps_working(
    engine: Engine, repo: Path, kind: str
) -> None:
    """As after a sync from a remote without the server hook: the checker names it,
    listing and show answer, the workflow commands refuse it in one line."""
    task_id = bomb_task(repo, planning_task(engine).id, HOSTILE[kind])
    path = repo / "bomb.yml"
    path.write_text(HOSTILE[kind])
    user_workflows = Path(os.environ["ORANGE_HOME"]) / "workflows"
    user_workflows.mkdir(parents=True, exist_ok=True)
    (user_workflows / "bomb.yml").write_text(HOSTILE[kind])  # trusted here: it is read
    # Listing and show hash a definition (trust) and never parse it to answer.
    listed = orange("task", "list", "--all", "--json", cwd=repo)
    assert listed.code == 0, listed.err
    assert task_id in [t["id"] for t in json.loads(listed.out)["tasks"]]
    shown = orange("task", "show", task_id, cwd=repo)
    assert (shown.code, shown.err) == (0, ""), shown
    assert f"task {task_id}" in shown.out

    found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
    reasons = [v.reason for v in found.restored]
    assert any(SAYS[kind] in reason for reason in reasons), reasons
    for args in (("workflow", "validate", str(path)), ("workflow", "show", "bomb")):
        result = orange(*args, cwd=repo)
        assert result.code == 1, result
        lines = result.err.strip().splitlines()
        assert len(lines) == 1 and SAYS[kind] in lines[0], lines


def test_the_bomb_is_valid_but_for_its_aliases(monkeypatch: pytest.MonkeyPatch) -> None:
    """So the tests of each entry point prove the node limit, not another check."""
    with pytest.raises(WorkflowError, match=NODE_LIMIT):
        load_workflow(BOMB_DEFINITION, "bomb.yml")
    monkeypatch.setattr(bounded, "MAX_NODES", 10**9)
    assert load_workflow(BOMB_DEFINITION, "bomb.yml").name == "bomb"
