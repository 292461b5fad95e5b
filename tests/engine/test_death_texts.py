"""What an agent's death says: event subjects and `attention` read as one sentence,
carry the crash number wherever a crash is counted, and point to a command that works
in the task's status."""

from __future__ import annotations

from orange.engine.catalog import load_named
from orange.engine.monitoring import handle_dead_session
from orange.engine.tasks import create_task
from orange.store import layout
from tests.conftest import git
from tests.engine.conftest import Env
from tests.engine.test_escalation_sequence import _run_sequence


def _subjects(env: Env) -> list[str]:
    out = git(env.repo, "log", "--reverse", "--format=%s", layout.TASKS_REF)
    return out.splitlines()


def test_a_reviewer_crash_names_its_number(env: Env) -> None:
    task_id = _run_sequence(env)  # the reviewer dies twice without a verdict
    crashes = [s for s in _subjects(env) if "agent crashed" in s]
    assert crashes == [
        f"task {task_id}: agent crashed in agent-review (no valid artifact, crash 1)",
        f"task {task_id}: agent crashed in agent-review (no valid artifact, crash 2)",
    ]


def test_a_death_in_stuck_says_it_once(env: Env) -> None:
    task_id = _run_sequence(env)
    assert handle_dead_session(env.engine, task_id) == (
        "marked dead in stuck (the task waits for a human)"
    )
    assert _subjects(env)[-1] == (
        f"task {task_id}: agent exited in stuck (the task waits for a human)"
    )
    assert env.get(task_id).str_field("attention") == (
        f"agent exited in stuck (the task waits for a human); "
        f"respawn with `orange task respawn {task_id}`"
    )


def test_a_worker_dead_in_reviewing_points_to_request_changes(env: Env) -> None:
    """``reviewing`` has no respawn prompt (respawn refuses there): a human's
    request-changes is what starts the worker again."""
    task = create_task(env.store, env.project, load_named("default"), status="reviewing")
    handle_dead_session(env.engine, task.id)
    assert env.get(task.id).str_field("attention") == (
        f"agent exited in reviewing (the task waits for a human); "
        f"send it back to work with `orange task request-changes {task.id}`"
    )
