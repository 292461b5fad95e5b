"""The field policy as a property: from a legal history, one commit that changes one
field of the task in a way the policy forbids (any field of the table, or one it does
not name: an illegal value, an identity field changed or removed, an unknown key) is
refused by the server hook, and a clone that fetched it restores the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from orange.engine.engine import Engine
from orange.engine.forgery import start_record, verify_new
from orange.engine.policy import IDENTITY, POLICY
from orange.engine.trust import trusted_here
from orange.store.task import STRING_FIELDS, Task
from tests.conftest import git
from tests.githooks.test_forgery import engine, forge, planning_task, push, task_text, tip

__all__ = ["engine"]  # the fixture, used by name

# Values no check of the table accepts: not text, not a count, not a list of ids.  A
# known text field reads back as text whatever was written (the store's normalisation),
# so it gets a text its check refuses; text fields bound only by length (64 Ki, the
# frontmatter's own size) have no illegal value a TASK.md can hold, and are left out.
ILLEGAL: list[Any] = [[1, 2], {"a": [1]}, -3]
ILLEGAL_TEXT = {
    "branch": "--x",
    "harness": "a b",
    "review_harness": "a b",
    "updated_at": "yesterday",
    "status": "",
}


def _illegal(name: str) -> list[Any]:
    if name not in STRING_FIELDS:
        return ILLEGAL
    return [ILLEGAL_TEXT[name]] if name in ILLEGAL_TEXT else []


# A value each field may legally hold, other than a new task's: for identity fields.
OTHER = {
    "id": "zzzz9999",
    "project": "elsewhere",
    "workflow": "minimal",
    "workflow_rev": "0123456789",
    "base": "release",
    "created_at": "2000-01-01T00:00:00Z",
    "run": "runaaaaa",
    "subtask": "s1",
}
assert set(OTHER) == IDENTITY, "an identity field the property does not change"


def _changes() -> st.SearchStrategy[tuple[str, str, Any]]:
    """(what, field, value): the value ``None`` with ``absent`` removes the field."""
    names = sorted(n for n in POLICY if n not in IDENTITY and _illegal(n))
    illegal = st.sampled_from(names).flatmap(
        lambda name: st.tuples(st.just("illegal"), st.just(name), st.sampled_from(_illegal(name)))
    )
    identity = st.tuples(st.just("identity"), st.sampled_from(sorted(OTHER)), st.none()).map(
        lambda c: (c[0], c[1], OTHER[c[1]])
    )
    absent = st.tuples(
        st.just("absent"), st.sampled_from(["id", "project", "workflow", "created_at"]), st.none()
    )
    unknown = st.tuples(
        st.just("unknown"),
        st.sampled_from(["priority", "owner", "hooks", "x-y"]),
        st.sampled_from(["high", 3, [1]]),  # null: the same as no field
    )
    return st.one_of(illegal, identity, absent, unknown)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(change=_changes())
def test_a_forbidden_change_of_one_field_is_refused_and_restored(
    engine: Engine, repo: Path, hub: Path, change: tuple[str, str, Any]
) -> None:
    what, name, value = change
    task_id = _the_task(engine, repo)
    assert push(repo).returncode == 0
    legal, legal_text = tip(repo), task_text(repo, task_id)
    fields = dict(Task.parse(legal_text, where="legal").fields)
    if what == "absent":
        del fields[name]
    else:
        fields[name] = value
    path = f"tasks/{_shard(repo, task_id)}/{task_id}/TASK.md"
    forge(repo, {path: Task(fields=fields, body="").render()})
    try:
        result = push(repo)
        assert result.returncode != 0, (change, "accepted by the server")
        assert tip(hub) == legal
        found = verify_new(engine.store, trusted=trusted_here, actor="monitor")
        assert found.restored, (change, "not restored")
        restored = Task.parse(task_text(repo, task_id), where="restored")
        was = Task.parse(legal_text, where="legal")
        assert _set(restored) == _set(was)  # the restore's own note aside
    finally:
        git(repo, "update-ref", "refs/orange/tasks", legal)
        start_record(engine.store)


def _set(task: Task) -> dict[str, Any]:
    """The fields that hold a value (null and absent are one), but the two a restore
    writes itself."""
    skip = ("attention", "updated_at")
    return {k: v for k, v in task.fields.items() if v is not None and k not in skip}


def _the_task(engine: Engine, repo: Path) -> str:
    """The one task of the history (made by the first example)."""
    listed = git(repo, "ls-tree", "-r", "--name-only", "refs/orange/tasks", "tasks", check=False)
    found = [line.split("/")[2] for line in listed.splitlines() if line.endswith("/TASK.md")]
    return found[0] if found else planning_task(engine).id


def _shard(repo: Path, task_id: str) -> str:
    listed = git(repo, "ls-tree", "-r", "--name-only", "refs/orange/tasks", "tasks")
    return next(line.split("/")[1] for line in listed.splitlines() if f"/{task_id}/" in line)
