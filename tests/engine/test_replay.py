from __future__ import annotations

from collections.abc import Mapping

import pygit2
import pytest

from orange.engine.merging import plan_merge
from orange.engine.replay import check_history
from orange.engine.trust import trusting
from orange.errors import OrangeError
from orange.store import layout
from orange.store.events import Change
from orange.store.store import Snapshot
from orange.store.syncmerge import Plan, Walked
from orange.store.task import Task
from orange.store.tree import Content, Subtree, apply_writes
from orange.store.treediff import Listings
from tests.engine.conftest import Env
from tests.engine.test_seed000_table import FAIL, HANDOFF, PASS, PLAN

Writes = Mapping[str, Content | Subtree]
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


def _summary_commit(
    repo: pygit2.Repository, parent: pygit2.Commit, task_id: str, summary: str, when: int
) -> pygit2.Commit:
    """A commit of ``parent`` with the task's summary changed (as `task update` writes
    it), at time ``when``."""
    path = layout.task_path(task_id)
    task = Task.parse(parent.tree[path].read_raw().decode(), where=path)
    tree = apply_writes(
        repo, parent.tree, {path: task.with_fields(summary=summary).render().encode()}
    )
    assert tree is not None
    who = pygit2.Signature("t", "t@example.com", when, 0)
    return repo[repo.create_commit(None, who, who, "c", tree, [parent.id])].peel(pygit2.Commit)


def _merge_commit(
    repo: pygit2.Repository, ours: pygit2.Commit, theirs: pygit2.Commit, made: Plan
) -> str:
    tree = apply_writes(repo, ours.tree, made.tree_writes())
    assert tree is not None
    who = pygit2.Signature("t", "t@example.com", 5000, 0)
    return str(repo.create_commit(None, who, who, "merge", tree, [ours.id, theirs.id]))


def test_a_merge_is_judged_by_the_walk_of_their_side_just_made(env: Env) -> None:
    """The merge commit's check plans the merge from what the walk of their commits
    found (which commit last changed each task): Orange's merge passes; a merge naming
    another commit as the last to change the task on their side (what the plan makes
    if their tip had changed it) is refused."""
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task

    shared = create_task(env.store, env.project, load_named("default"), summary="shared").id
    other = create_task(env.store, env.project, load_named("default"), summary="other").id
    repo = env.store.pygit
    base = repo[_tip(env)].peel(pygit2.Commit)
    ours = _summary_commit(repo, base, shared, "ours", 2000)
    touched = _summary_commit(repo, base, shared, "theirs", 3000)  # their last change of it
    theirs = _summary_commit(repo, touched, other, "later", 4000)
    made = plan_merge(repo, ours, theirs)
    merged = made.writes[layout.task_path(shared)]
    assert isinstance(merged, bytes) and str(touched.id)[:10].encode() in merged
    merge = _merge_commit(repo, ours, theirs, made)
    assert check_history(repo, merge, str(ours.id), trusted=SHIPPED) == []

    walked = Walked(Listings(repo))
    walked.tasks[theirs.id.raw] = (shared,)  # (their tip did not change it)
    wrong = plan_merge(repo, ours, theirs, walked)
    assert wrong.writes != made.writes
    forged = _merge_commit(repo, ours, theirs, wrong)
    found = check_history(repo, forged, str(ours.id), trusted=SHIPPED)
    path = layout.task_path(shared)
    assert [(v.task_id, v.reason) for v in found] == [
        (shared, f"merge commit differs from Orange's merge of its parents at {path}")
    ]


def test_a_catch_up_replays_nothing_the_verified_tip_holds_whatever_the_dates(
    env: Env,
) -> None:
    """Their commits dated before the base both sides share (a clock behind) do not take
    the replay past that base: history the verified tip holds is not judged again (here
    an illegal move made before verification started, which today's rules refuse)."""
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task

    made = [
        create_task(env.store, env.project, load_named("default"), summary=name).id
        for name in ("old", "ours", "theirs")
    ]
    _force(env, made[0], status="reviewing")  # accepted before this host verified
    repo = env.store.pygit
    base = repo[_tip(env)].peel(pygit2.Commit)
    ours = base
    for number in range(8):  # more than git's five steps of slack, all dated long ago
        ours = _summary_commit(repo, ours, made[1], f"ours {number}", 100 + number)
    theirs = _summary_commit(repo, base, made[2], "theirs", 500)
    merge = _merge_commit(repo, ours, theirs, plan_merge(repo, ours, theirs))
    assert check_history(repo, str(base.id), trusted=SHIPPED) != []  # (what it holds)
    assert check_history(repo, merge, str(ours.id), trusted=SHIPPED) == []


def _on(repo: pygit2.Repository, parent: pygit2.Commit, writes: Writes, when: int) -> pygit2.Commit:
    tree = apply_writes(repo, parent.tree, writes)
    assert tree is not None
    who = pygit2.Signature("t", "t@example.com", when, 0)
    return repo[repo.create_commit(None, who, who, "c", tree, [parent.id])].peel(pygit2.Commit)


def test_a_merge_is_held_to_the_plan_folder_by_folder(env: Env) -> None:
    """The plan takes a task folder changed on their side only as their tree (its files
    never read) and merges a folder changed on both sides file by file: a merge that
    keeps our folder where theirs was planned, adds a file to their folder, keeps a
    folder they deleted, or takes their whole folder where both sides changed it, is
    refused at each file that differs; Orange's merge passes."""
    from orange.engine.catalog import load_named
    from orange.engine.tasks import create_task

    made = [
        create_task(env.store, env.project, load_named("default"), summary=name).id
        for name in ("ours", "theirs", "both")
    ]
    ended = env.make_task("done").id  # theirs deletes it (legal: an ended task)
    _, yours, both = (layout.task_path(task_id) for task_id in made)
    gone = layout.task_path(ended)
    repo = env.store.pygit
    base = repo[_tip(env)].peel(pygit2.Commit)
    ours = _summary_commit(repo, base, made[0], "ours, changed", 2000)
    ours = _summary_commit(repo, ours, made[2], "ours too", 2001)
    theirs = _summary_commit(repo, base, made[1], "theirs, changed", 3000)
    theirs = _summary_commit(repo, theirs, made[2], "theirs too", 3001)
    theirs = _on(repo, theirs, {gone: None}, 3002)
    plan = plan_merge(repo, ours, theirs)
    folder, gone_folder = (path.rpartition("/")[0] for path in (yours, gone))
    assert plan.folders == {folder: theirs.tree[folder].id, gone_folder: None}
    assert set(plan.writes) == {both}  # their folders' files are not read

    def merged(writes: Writes) -> str:
        tree = apply_writes(repo, ours.tree, writes)
        assert tree is not None
        who = pygit2.Signature("t", "t@example.com", 5000, 0)
        return str(repo.create_commit(None, who, who, "merge", tree, [ours.id, theirs.id]))

    def refused_at(writes: Writes) -> list[str]:
        found = check_history(repo, merged(writes), str(ours.id), trusted=SHIPPED)
        assert all("differs from Orange's merge" in v.reason for v in found)
        return [v.path for v in found]

    orange = plan.tree_writes()
    assert refused_at(orange) == []
    kept_ours = {p: w for p, w in orange.items() if p != folder}
    assert refused_at(kept_ours) == [yours]
    extra = f"{folder}/notes.md"
    added: Writes = {yours: theirs.tree[yours].id, extra: b"added by the merge\n"}
    assert refused_at({**kept_ours, **added}) == [extra]
    assert refused_at({p: w for p, w in orange.items() if p != gone_folder}) == [gone]
    shared = both.rpartition("/")[0]
    taken = {
        **{p: w for p, w in orange.items() if p != both},
        shared: Subtree(theirs.tree[shared].id),
    }
    assert refused_at(taken) == [both]
