"""The field policy: every frontmatter field of a TASK.md (and of a RUN.md,
`RUN_POLICY`), named once (DESIGN §8).

Each field has an owner and a check of its value:

- ``identity``: set when the task is created, never changed after (not by a push, not
  by the engine);
- ``engine``: only the engine's moves and records change it (`orange.engine.steps`
  says which event may change which);
- ``host``: the runtime facts of the machine the task runs on (host, workspace, tmux
  session), changed only where the engine changes them;
- ``human``: people and the plain commands change it (`task update`, `task edit`, an
  edit in a tasks checkout), agents included for their own task where the CLI lets them.

The replay checker (through `orange.engine.steps`: the server hook, the local replay,
the forgery restore, a tasks checkout's pre-commit) and the CLI's field writes
(`orange.engine.edits`) read this table: a value that fails its check, an identity field
that changes and a field neither this table nor the task's workflow names (the fields
its hook actions count or set) are refused.  Branch names go through one function,
`orange.store.branches.check_branch_name`, before any git command sees one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping
from typing import Any, Literal, NamedTuple

from orange.engine.fields import BASELINE_FIELD, DEAD_FIELD, RUN_FIELD
from orange.engine.ledger import (
    BUDGET,
    COST,
    THROUGH,
    TOKENS,
    UNKNOWN_COST,
    check_flag,
    check_money,
    check_tokens,
)
from orange.errors import InvalidInput
from orange.store.branches import check_branch_name
from orange.store.layout import valid_task_id

Owner = Literal["identity", "engine", "host", "human"]
Check = Callable[[Any], "str | None"]

# Characters of a text field (a summary, an attention note, a url): no more than the
# frontmatter that holds it may be (`orange.store.taskfile.MAX_FRONTMATTER`).
MAX_TEXT = 64 * 1024
MAX_AFTER = 64  # tasks one task may wait for


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        return "must be text"
    return f"is longer than {MAX_TEXT} characters" if len(value) > MAX_TEXT else None


def _required_text(value: Any) -> str | None:
    return "must be non-empty text" if not isinstance(value, str) or not value else _text(value)


def _count(value: Any) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return "must be a whole number, 0 or more"
    return None


def _task_id(value: Any) -> str | None:
    return None if isinstance(value, str) and valid_task_id(value) else "is not a task id"


def _task_ids(value: Any) -> str | None:
    """``after``: null, or a list of distinct task ids (`orange.engine.dependencies`)."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(
        isinstance(item, str) and valid_task_id(item) for item in value
    ):
        return "must be a list of task ids"
    if len(set(value)) != len(value):
        return "names a task twice"
    return f"names more than {MAX_AFTER} tasks" if len(value) > MAX_AFTER else None


def own_branch_problem(branch: Any, base: Any, default_branches: Collection[str]) -> str | None:
    """Why ``branch`` (already a valid name) cannot be a task's branch: it is the branch
    the task merges into, its ``base`` or, with none, the repository's default branch;
    and the default branch is no task's branch whatever its base.  Orange's code acts on
    a task's branch: a worktree checks it out and an agent commits on it, ``task merge``
    merges it and may delete it, a cancel may delete it on the remote, a release resets
    the worktree holding it.  Pushed with ``branch: main``, a task would turn all of that
    on the user's default branch (DESIGN §8).  The default branch is the one the
    replaying side knows (``default_branches``: a bare server's HEAD; a clone's
    ``origin/HEAD`` and the registered project's default branch).

    Not refused here: any other existing branch (a person may give a task a branch that
    exists to go on with its work, `orange.runtime.workspace.checkout_branch`), and a
    branch another task has (`orange.store.listing.check_branch_unique` refuses it
    where a person names it; a merge of two legal histories can bring two tasks to one
    branch, so a push cannot be held to it).  A teammate's task runs nothing here
    until a person here starts or takes it, `task show` naming its branch first."""
    if not isinstance(branch, str) or not branch:
        return None
    based = isinstance(base, str) and bool(base)
    if branch == base or (branch in default_branches and not based):
        return f"{branch!r} is the branch this task merges into"
    if branch in default_branches:
        return f"{branch!r} is the repository's default branch, which no task works on"
    return None


def _branch(value: Any) -> str | None:
    if value is None:
        return None
    try:
        check_branch_name(value if isinstance(value, str) else "")
    except InvalidInput as exc:
        return exc.message
    return None


# Patterns as text: `re` compiles each when first used (a summary update uses neither).
_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}"


def _name(value: Any) -> str | None:
    """A harness's name (empty: the project's default): looked up in this host's
    configuration, never run as given."""
    if value in (None, ""):
        return None
    ok = isinstance(value, str) and re.fullmatch(_NAME, value)
    return None if ok else "must be a name of letters, digits, '.', '_' and '-'"


_STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)?"


def _stamp(value: Any) -> str | None:
    if value is None:
        return None
    ok = isinstance(value, str) and re.fullmatch(_STAMP, value)
    return None if ok else "must be a time as Orange writes it (2026-01-31T12:00:00Z)"


def _baseline(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        return "must be a mapping of section names to fingerprints"
    return None


class Field(NamedTuple):
    owner: Owner
    check: Check


POLICY: Mapping[str, Field] = {
    "id": Field("identity", _task_id),
    "project": Field("identity", _required_text),
    "workflow": Field("identity", _required_text),
    "workflow_rev": Field("identity", _text),
    "base": Field("identity", _branch),  # the branch the task starts from and merges into
    "created_at": Field("identity", _stamp),
    "run": Field("identity", _text),  # an `orange run`'s subtask: its run ...
    "subtask": Field("identity", _text),  # ... and its name there
    "status": Field("engine", _required_text),
    "review_round": Field("engine", _count),
    "crash_count": Field("engine", _count),
    BASELINE_FIELD: Field("engine", _baseline),
    RUN_FIELD: Field("engine", _text),
    DEAD_FIELD: Field("engine", _text),
    TOKENS: Field("engine", check_tokens),  # the ledger (`orange.engine.ledger`)
    COST: Field("engine", check_money),
    THROUGH: Field("engine", _stamp),
    UNKNOWN_COST: Field("engine", check_flag),
    "host": Field("host", _text),
    "workspace": Field("host", _text),
    "tmux_session": Field("host", _text),
    "branch": Field("human", _branch),
    "harness": Field("human", _name),
    "review_harness": Field("human", _name),
    "effort": Field("human", _text),
    "review_effort": Field("human", _text),
    "summary": Field("human", _text),
    "attention": Field("human", _text),
    "pr_url": Field("human", _text),
    "updated_at": Field("human", _stamp),
    "after": Field("human", _task_ids),  # the tasks this one waits for (DESIGN §10)
    BUDGET: Field("human", check_money),  # dollars the ledger's cost may reach
}


_RUN_ID_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")


def _run_id(value: Any) -> str | None:
    """Eight of 0-9a-z, as `orange.store.runfile.valid_run_id` (not imported: its
    patterns would be compiled by every summary update, which loads this table)."""
    ok = isinstance(value, str) and len(value) == 8 and set(value) <= _RUN_ID_CHARS
    return None if ok else "is not a run id"


def _flag(value: Any) -> str | None:
    return None if value is None or isinstance(value, bool) else "must be true or false"


def _any_text(value: Any) -> str | None:
    """Text of any length (an error's message: the frontmatter's own bound holds it)."""
    return None if value is None or isinstance(value, str) else "must be text"


def _subtasks(value: Any) -> str | None:
    """The run's subtasks (`orange.store.runfile.parse` checks each has a string id)."""
    return None if value is None or isinstance(value, list) else "must be a list"


# An `orange run`'s record, runs/<id>/RUN.md (`orange.store.runfile`): data that decides
# nothing on another host (runs touch only the tasks this host recorded for them), but
# held to the same kind of table, so no field a push adds or bends goes unnoticed.
RUN_POLICY: Mapping[str, Field] = {
    "id": Field("identity", _run_id),
    "project": Field("identity", _required_text),
    "host": Field("identity", _text),
    "branch": Field("identity", _branch),
    "base": Field("identity", _branch),
    "created_at": Field("identity", _stamp),
    "status": Field("engine", _text),
    "step": Field("engine", _text),
    "resume_step": Field("engine", _text),
    "group": Field("engine", _count),
    "answers_used": Field("engine", _count),
    "subtasks": Field("engine", _subtasks),
    "error": Field("engine", _any_text),
    "agents": Field("human", _count),
    "architect": Field("human", _name),
    "swe": Field("human", _name),
    "policy": Field("human", _text),
    "max_iterations": Field("human", _count),
    "max_clarification_rounds": Field("human", _count),
    "skip_clarification": Field("human", _flag),
    "no_pr": Field("human", _flag),
    "pr_url": Field("human", _text),
    "updated_at": Field("human", _stamp),
    # The ledger of the run's own agent, the architect (its subtasks' are their tasks'),
    # held by the replay to its trailers as a task's is (`orange.engine.ledger`).
    TOKENS: Field("engine", check_tokens),
    COST: Field("engine", check_money),
    THROUGH: Field("engine", _stamp),
    UNKNOWN_COST: Field("engine", check_flag),
    BUDGET: Field("human", check_money),  # dollars the whole run may cost
}

# `orange.engine.fields.IDENTITY_FIELDS` names the same fields (a test holds them equal):
# that module is imported by the store's hot paths, this one only where a step is judged.
IDENTITY = frozenset(name for name, spec in POLICY.items() if spec.owner == "identity")


def field_problem(
    before: Mapping[str, Any] | None,
    after: Mapping[str, Any],
    workflow_fields: Collection[str],
    table: Mapping[str, Field] = POLICY,
    *,
    default_branches: Collection[str] = (),
) -> str | None:
    """Why the frontmatter ``after`` breaks the policy (None: it does not): a field the
    table and the workflow's own (``workflow_fields``, counted with `_count`) do not
    name, a changed (or, for a new task, ``before`` None, any) value that fails its
    check, an identity field that changed, a task's branch that is not its own
    (`own_branch_problem`, against ``default_branches``: the repository's default
    branch as the caller knows it).  Only new and changed fields are judged.
    ``table``: `POLICY` for a TASK.md, `RUN_POLICY` for a run's RUN.md."""
    for name, value in after.items():
        if before is not None and before.get(name) == value:
            continue  # unchanged (absent and empty are one): an older Orange's field stays
        spec = table.get(name)
        if spec is None and name not in workflow_fields:
            return f"unknown field {name!r} (not one Orange or the task's workflow writes)"
        if spec is not None and spec.owner == "identity" and before is not None:
            return f"{name} cannot change"
        problem = spec.check(value) if spec is not None else _workflow_value(value)
        if problem is None and name == "branch" and table is POLICY:
            problem = own_branch_problem(value, after.get("base"), default_branches)
        if problem is not None:
            return f"{name} {problem}"
    if before is not None:
        gone = [
            n
            for n in before
            if n not in after and before[n] is not None and table.get(n, _ANY).owner == "identity"
        ]
        if gone:
            return f"{gone[0]} cannot change"
    return None


_ANY = Field("human", _text)


def _workflow_value(value: Any) -> str | None:
    """A field a workflow's hook action counts or sets: a count, true or false, or a
    text (`set_field` takes any scalar, `orange.engine.actionspec`)."""
    if value is None or isinstance(value, int):  # bool is an int
        return None
    return _text(value)
