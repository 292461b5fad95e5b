from __future__ import annotations

import pytest

from orange.engine.replay import check_history
from orange.engine.trust import trusting
from orange.errors import OrangeError
from orange.store import layout
from orange.store.events import Change
from orange.store.store import Snapshot
from tests.engine.conftest import Env
from tests.engine.test_seed000_table import FAIL, HANDOFF, PASS, PLAN

SHIPPED = trusting(frozenset())  # what a server trusts with no directory of its own


def _tip(env: Env) -> str:
    return str(env.store.pygit.references[layout.TASKS_REF].target)


def _edit(env: Env, task_id: str, text: str) -> None:
    from orange.engine.edits import edit_body

    edit_body(env.store, task_id, lambda t: t.body + text, what="body")


def test_a_full_engine_history_replays_clean(env: Env) -> None:
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task

    task = create_task(env.store, env.project, load_named("default"), summary="replay me")
    env.engine.transition(task.id, "planning")
    _edit(env, task.id, PLAN)
    env.engine.transition(task.id, "working")
    _edit(env, task.id, HANDOFF)
    env.engine.transition(task.id, "agent-review")
    _edit(env, task.id, FAIL)
    env.engine.transition(task.id, "working")
    _edit(env, task.id, HANDOFF.replace("the feature", "the fix"))
    env.engine.transition(task.id, "agent-review")
    _edit(env, task.id, PASS)
    env.engine.transition(task.id, "reviewing")
    env.engine.transition(task.id, "done")
    assert check_history(env.store.pygit, _tip(env), trusted=SHIPPED) == []


def _force(env: Env, task_id: str, **fields: object) -> None:
    def compute(snap: Snapshot) -> Change:
        task = snap.task(task_id)
        assert task is not None
        new = task.with_fields(**fields)
        return Change(task_id, "status.changed", "forged", {task.path: new.render().encode()})

    env.store.commit(compute)


def test_an_illegal_move_made_behind_the_engine_is_caught(env: Env) -> None:
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task

    task = create_task(env.store, env.project, load_named("default"), summary="x")
    good = _tip(env)
    _force(env, task.id, status="reviewing")
    problems = check_history(env.store.pygit, _tip(env), good, trusted=SHIPPED)
    assert len(problems) == 1
    assert problems[0].task_id == task.id
    assert "illegal transition pending -> reviewing" in problems[0].reason


def test_a_gated_move_without_its_artifact_is_caught(env: Env) -> None:
    task = env.make_task("working", body="\n## Notes\n\nno handoff\n")
    good = _tip(env)
    _force(env, task.id, status="agent-review", crash_count=0)
    problems = check_history(env.store.pygit, _tip(env), good, trusted=SHIPPED)
    assert [p.task_id for p in problems] == [task.id]
    assert "## Handoff" in problems[0].reason


def test_a_guard_violation_is_caught(env: Env) -> None:
    task = env.make_task("agent-review", body=FAIL, review_round=2)
    good = _tip(env)
    _force(env, task.id, status="working")
    problems = check_history(env.store.pygit, _tip(env), good, trusted=SHIPPED)
    assert problems and "review_round < 2" in problems[0].reason


def test_each_commit_is_judged_by_the_definition_its_own_tree_holds(env: Env) -> None:
    """The replay reads a task's committed definition from each commit's tree (kept by
    the blobs it comes from, not by its name): two trees holding two texts under one
    name give two definitions."""
    import pygit2

    from orange.engine.catalog import load_named
    from orange.engine.replay import Checker
    from orange.engine.tasks import create_task

    task = create_task(env.store, env.project, load_named("default"), summary="x")
    repo = env.store.pygit
    first = repo[_tip(env)].peel(pygit2.Commit).tree
    path = layout.workflow_path(task.workflow)
    text = bytes(first[path].read_raw()).decode()
    edited = f"{text}# edited by hand\n"
    env.store.commit(lambda snap: Change(task.id, "edited", "edited", {path: edited.encode()}))
    second = repo[_tip(env)].peel(pygit2.Commit).tree
    checker = Checker(repo, SHIPPED)
    named = task.with_fields(workflow_rev=None)  # (as an older Orange wrote it: any text)
    assert checker.workflow(first, named)[0].source_text == text
    assert checker.workflow(second, named)[0].source_text == edited
    assert checker.workflow(first, named)[0].source_text == text
    with pytest.raises(OrangeError, match="not committed"):  # the task's own revision
        checker.workflow(second, task)
