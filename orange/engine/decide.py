"""Pure decisions: which move a request means, and what the task looks like after it.

Nothing here does I/O.  `resolve` finds the transition (steps 1 and 2 of
`orange.engine.engine`), `plan_move` checks its gate on the body to commit and builds
the task as it will be written before any hook action prepares (step 3), `seal` adds
what is decided last (the freshness baseline of the new state's gates, a new agent run
when the move starts an agent), and `move_trailers` says what the ``status.changed``
commit changed.  The engine runs these inside the store's write lock, on the current tip.
"""

from __future__ import annotations

from collections.abc import Iterable
from types import MappingProxyType
from typing import NamedTuple

from orange.engine.actionspec import spawns
from orange.engine.caller import Caller
from orange.engine.fields import BASELINE_FIELD, DEAD_FIELD, RUN_FIELD, baseline, run_token
from orange.engine.gates import archive_section, check_gate, fingerprints
from orange.engine.ledger import BUDGET_HOOKS, over_budget
from orange.engine.when import number_value
from orange.engine.workflow import HookSpec, Transition, Workflow
from orange.errors import (
    GateFailed,
    GuardFailed,
    IllegalTransition,
    InvalidInput,
    WorkflowError,
)
from orange.store.store import now_iso
from orange.store.task import Task


class Outcome:
    """What a move or a respawn did (a plain class, built on every move: see
    `orange.store.events.Change`)."""

    __slots__ = ("commit", "from_status", "hook_errors", "messages", "task", "to_status")

    def __init__(
        self,
        task: Task,
        from_status: str,
        to_status: str,
        commit: str | None,
        messages: list[str] | None = None,
    ) -> None:
        self.task, self.from_status, self.to_status = task, from_status, to_status
        self.commit = commit
        self.hook_errors: list[str] = []
        self.messages: list[str] = [] if messages is None else messages


class MovePlan(NamedTuple):  # not a dataclass: see `Outcome`
    """A legal, gated move: ``before`` holds the body to commit, ``after`` the task as
    it will be written before the hook actions add their fields."""

    transition: Transition
    before: Task
    after: Task


def resolve(
    workflow: Workflow, task: Task, to: str, *, escalation: bool = False, budget: bool = False
) -> Transition:
    """The transition ``task.status -> to`` whose ``when`` holds.  ``budget``: the
    budget's stop (`orange.engine.ledger`), from an active state to the escalation's
    human-waiting state, when the task's recorded cost passed its budget."""
    current = task.status
    if current not in workflow.states:
        raise IllegalTransition(
            f"task {task.id} has status {current!r}, which workflow {workflow.name} does not know"
        )
    if workflow.is_terminal(current):
        raise IllegalTransition(f"task {task.id} is {current}; a {current} task cannot move")
    if to not in workflow.states:
        raise IllegalTransition(
            f"{to!r} is not a status of workflow {workflow.name}",
            hint=f"statuses: {', '.join(workflow.states)}",
        )
    if budget:
        esc = workflow.escalation
        if esc is None or esc.to != to or current == to or current not in workflow.active_states():
            raise IllegalTransition(f"task {task.id}: no budget stop from {current} to {to}")
        if over_budget(task.fields) is None:
            raise GuardFailed(f"task {task.id} is within its budget")
        return Transition(from_=current, to=to, hooks=BUDGET_HOOKS, by=("engine",))
    if escalation and workflow.escalation and workflow.escalation.to == to:
        # The crash rule's own move: from any active state, whatever the table says.
        return Transition(from_=current, to=to, hooks=workflow.escalation.hooks, by=("engine",))
    candidates = workflow.transitions_between(current, to)
    if not candidates:
        targets = workflow.targets_from(current)
        return_hint = f"from {current} you can go to: {', '.join(targets) or 'nowhere'}"
        raise IllegalTransition(f"illegal transition {current} -> {to}", hint=return_hint)
    passing = [t for t in candidates if t.when is None or t.when.holds(task.fields)]
    if not passing:
        conditions = " or ".join(str(t.when) for t in candidates if t.when is not None)
        fields = sorted({t.when.field for t in candidates if t.when is not None})
        values = ", ".join(f"{f} is {number_value(task.fields, f)}" for f in fields)
        raise GuardFailed(f"transition {current} -> {to} not allowed: needs {conditions}, {values}")
    if len(passing) > 1:
        raise WorkflowError(f"workflow {workflow.name}: {current} -> {to} is ambiguous")
    return passing[0]


def plan_move(
    workflow: Workflow,
    task: Task,
    body: str,
    to: str,
    *,
    escalation: bool = False,
    expect_from: str | None = None,
    caller: Caller,
    budget: bool = False,
) -> MovePlan:
    """Check the move ``task -> to`` with ``body`` as the body to commit (the agent's
    working copy merged in), and build the task as it will be written.  ``caller``
    must be one the transition's ``by:`` lists; that is checked before the gate, so a
    refused caller hears who may move, not what the gate wants."""
    if expect_from is not None and task.status != expect_from:
        raise IllegalTransition(f"task {task.id} is already {task.status} (expected {expect_from})")
    before = task.with_body(body)
    transition = resolve(workflow, before, to, escalation=escalation, budget=budget)
    caller.check_move(workflow, before, transition)
    if transition.gate is not None:
        result = check_gate(transition.gate, body, baseline(before))
        if not result.ok:
            raise GateFailed(result.message)
    after = before.with_body(archive_old_verdicts(workflow, before, transition)).with_fields(
        status=to, crash_count=0, attention=None, updated_at=now_iso()
    )
    if after.fields.get(DEAD_FIELD) is not None:
        # A death was handled in the status left: in the new one it is looked at afresh.
        after = after.with_fields(**{DEAD_FIELD: None})
    return MovePlan(transition, before, after)


def seal(workflow: Workflow, after: Task, hooks: Iterable[HookSpec]) -> Task:
    """What is decided last: the gates' freshness baseline of the state the task is in
    now, and a new agent run when the actions start an agent."""
    sealed = after.with_fields(
        **{BASELINE_FIELD: fingerprints(after.body, workflow.gated_sections(after.status))}
    )
    return with_new_run(sealed, hooks)


def with_new_run(task: Task, hooks: Iterable[HookSpec]) -> Task:
    """``task`` with a new agent run when the actions start an agent."""
    return task.with_fields(**{RUN_FIELD: run_token()}) if spawns(hooks) else task


def move_trailers(original: Task, after: Task, *, escalation: bool) -> tuple[tuple[str, str], ...]:
    """``Orange-From``/``-To``, the fields the move changed, the escalation mark."""
    skip = ("status", "updated_at", BASELINE_FIELD)
    changed = [
        k for k in after.fields if k not in skip and after.fields.get(k) != original.fields.get(k)
    ]
    if after.body != original.body:
        changed.append("body")
    trailers = [("Orange-From", original.status), ("Orange-To", after.status)]
    if changed:
        trailers.append(("Orange-Fields", ", ".join(changed)))
    if escalation:
        trailers.append(("Orange-Escalation", "yes"))
    return tuple(trailers)


def starting_move(workflow: Workflow, status: str) -> Transition | None:
    """The move out of ``status`` that starts its agent (``pending -> planning``)."""
    for transition in workflow.transitions:
        if transition.from_ == status and spawns(transition.hooks):
            return transition
    return None


def can_start(workflow: Workflow, status: str) -> bool:
    """Whether a task in ``status`` has an agent to start: a starting move, or entry
    actions (a task created in a state that has an agent)."""
    state = workflow.states.get(status)
    return state is not None and (
        starting_move(workflow, status) is not None or bool(state.on_enter)
    )


# The counter a workflow's ``reset`` of ``review_round`` starts again, and the one that
# counts those new starts (review cycles): archived reviews are labelled by both.
ROUND, CYCLE = "review_round", "review_cycle"


def archive_old_verdicts(workflow: Workflow, task: Task, move: Transition) -> str:
    """Entering a state that waits for a verdict: the last round's verdict section is
    renamed (``## Review (round 1)``), readable but no longer counting.  A move whose
    hooks reset the review round (a human's request for changes) archives every
    verdict section at once, before the rounds count from 1 again; from the second
    cycle on the label names the cycle too (``## Review (cycle 2, round 1)``), so two
    archived headings never read the same."""
    to = move.to
    resets = any(h.action == "reset" and h.get("field") == ROUND for h in move.hooks)
    headings = {
        t.gate.section
        for t in workflow.transitions
        if (t.from_ == to or resets) and t.gate and t.gate.verdict
    }
    headings |= {
        r.has_artifact.section
        for r in workflow.rules_for(to)
        if r.has_artifact is not None and r.has_artifact.verdict
    }
    body = task.body
    round_no, cycle = task.int_field(ROUND), task.int_field(CYCLE)
    label = f"round {round_no}" if round_no else "earlier"
    if cycle:
        label = f"cycle {cycle + 1}, {label}"
    for heading in sorted(headings):
        body = archive_section(body, heading, label)
    return body


def nothing_to_respawn(workflow: Workflow, task: Task) -> InvalidInput:
    """Why ``task respawn`` refuses in a status without a respawn prompt, pointing to
    the command that does apply: ``spawn`` for a task whose agent was never started,
    the status's own moves otherwise (a finished task has none)."""
    if workflow.is_terminal(task.status):
        return InvalidInput(
            f"task {task.id} is {task.status}: a finished task has no agent to respawn",
            hint=f"its record: `orange task show {task.id}`",
        )
    if can_start(workflow, task.status) and not task.str_field("workspace"):
        return InvalidInput(
            f"task {task.id} is {task.status}: its agent has not been started yet",
            hint=f"start it with `orange task spawn {task.id}`",
        )
    targets = ", ".join(workflow.targets_from(task.status)) or "nowhere"
    return InvalidInput(
        f"task {task.id} is {task.status}: no agent runs in that status",
        hint=f"it moves on with `orange task update {task.id} --status` to: {targets}",
    )


ACQUIRE = HookSpec("acquire_workspace")


def take_specs(workflow: Workflow, status: str) -> tuple[HookSpec, ...]:
    """What a take by this host runs (``orange task take``, `orange.engine.taking`): a
    worktree here, and the state's agent if it has one.  Decided here, below the engine,
    so the history checker (`orange.engine.steps`) accepts a take without importing the
    code that makes one."""
    if workflow.states[status].respawn_prompt:
        return (ACQUIRE, respawn_spec(workflow, status))
    return (ACQUIRE,)


def respawn_spec(workflow: Workflow, status: str) -> HookSpec:
    """The spawn action that restarts the agent of ``status`` with its respawn prompt.

    A state whose agent is started with the review harness (fresh-worker's
    agent-review: a ``spawn_agent`` in the worker window) gets a reviewer again, with
    the review harness, so its commands keep the reviewer's moves (`orange.engine.caller`).
    """
    state = workflow.states[status]
    prompt = state.respawn_prompt or ""
    params = {"prompt": prompt, "harness": "review", "permissions": "reduced"}
    if state.agent == "reviewer":
        return HookSpec("spawn_reviewer", MappingProxyType(params))
    if _reviewed_in(workflow, status):
        return HookSpec("spawn_agent", MappingProxyType({**params, "window": "worker"}))
    return worker_spawn_spec(prompt)


def _reviewed_in(workflow: Workflow, status: str) -> bool:
    """Every agent started for ``status`` (moves into it, its ``on_enter``) runs the
    review harness."""
    hooks = [h for t in workflow.transitions if t.to == status for h in t.hooks]
    hooks += workflow.states[status].on_enter
    starts = [h for h in hooks if spawns((h,))]
    return bool(starts) and all(h.get("harness") == "review" for h in starts)


def worker_spawn_spec(prompt: str) -> HookSpec:
    """Start the worker window with ``prompt``, the task's harness, full permissions."""
    params = {"prompt": prompt, "harness": "task", "permissions": "full", "window": "worker"}
    return HookSpec("spawn_agent", MappingProxyType(params))
