"""Moves asked for by what they mean, not by a status name (DESIGN §4).

A command like ``orange task cancel`` or ``orange task request-changes`` names an
intent; which status it leads to is the task's workflow's business (its status roles),
so these work the same for a workflow whose states are called something else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from orange.engine.decide import resolve
from orange.engine.gates import append_to_section
from orange.engine.workflow import Workflow
from orange.errors import IllegalTransition, WorkflowError
from orange.store.store import now_iso

OUTCOME = "## Outcome"  # where `complete` records the agent's reported outcome

if TYPE_CHECKING:
    from orange.engine.decide import Outcome
    from orange.engine.engine import Engine
    from orange.store.task import Task


def cancel(engine: Engine, task_id: str, options: Mapping[str, Any] | None = None) -> Outcome:
    """Move the task to its workflow's ``role: cancelled`` state.  A human's cancel is
    the one move allowed for a task whose definition this host does not trust: then
    none of that definition's hooks run, and only this host's own recorded bindings
    of the task are undone (`Engine.release`)."""
    engine.caller.check_own(task_id, "cancel")
    task = engine.store.get(task_id)
    target = _role(engine.workflow(task), "cancelled")
    # The tasks that wait for it are flagged by the move itself (`orange.engine.orphans`).
    return engine.transition(task.id, target, options=options, human_cancel=True)


def finish(engine: Engine, task_id: str, options: Mapping[str, Any] | None = None) -> Outcome:
    """Move the task to its workflow's ``role: done`` state (``orange task merge``)."""
    engine.caller.check_own(task_id, "merge")
    task = engine.store.get(task_id)
    return engine.transition(task.id, _role(engine.workflow(task), "done"), options=options)


def request_changes(engine: Engine, task_id: str, message: str = "") -> Outcome:
    """A human sends a task back to its worker, the message under ``## Feedback``.

    Only from a state that waits for a human and has a human move back to the worker
    (`Workflow.request_changes_target`): elsewhere a move to working is the agent's
    own, gated move (``planning`` with a plan, ``agent-review`` with a failed review),
    which a human's feedback must not make.
    """
    engine.caller.check_own(task_id, "request changes on")
    current = engine.store.get(task_id)
    workflow = engine.workflow(current)
    target = workflow.request_changes_target(current.status)
    if target is None:
        allowed = [s for s in workflow.states if workflow.request_changes_target(s)]
        raise IllegalTransition(
            f"task {current.id} is {current.status}; request-changes sends back only a "
            f"task in {' or '.join(allowed) or 'no state of workflow ' + workflow.name}"
        )
    return engine.transition(
        current.id,
        target,
        body_edit=_appender("## Feedback", f"{now_iso()} (human):\n", message),
        expect_from=current.status,
    )


def complete(engine: Engine, task_id: str) -> Outcome:
    """The agent is done and hands the task to a human to finish: the move from its
    status to a state that waits for a human and leads to the ``role: done`` state
    (self-review: ``working -> reviewing``).

    The move records the outcome under ``## Outcome`` (``OUTCOME: passed``), in the same
    commit: self-review's gate reads that record, so the outcome reported from the
    agent's ``.orange-task`` file (seed 003) is the artifact of the move, and a move to
    ``reviewing`` made any other way (``task update``, plain git) needs one too."""
    current = engine.store.get(task_id)
    workflow = engine.workflow(current)
    done = workflow.done_state
    targets = [
        target
        for target in workflow.targets_from(current.status)
        if workflow.waits_for_human(target) and done in workflow.targets_from(target)
    ]
    if len(targets) != 1:
        raise IllegalTransition(
            f"task {current.id} is {current.status}; from there workflow {workflow.name} "
            f"has {'no' if not targets else 'more than one'} move that hands it to a human",
            hint=f"from {current.status} you can go to: "
            f"{', '.join(workflow.targets_from(current.status)) or 'nowhere'}",
        )
    return engine.transition(
        current.id, targets[0], body_edit=_appender(OUTCOME, "", f"OUTCOME: passed ({now_iso()})")
    )


def ask_for_help(engine: Engine, task_id: str, reason: str = "") -> Outcome:
    """The agent cannot finish: move to the workflow's escalation state, the reason
    under ``## Stuck``."""
    current = engine.store.get(task_id)
    workflow = engine.workflow(current)
    if workflow.escalation is None:
        raise WorkflowError(f"workflow {workflow.name} has no escalation state to ask for help")
    return engine.transition(
        current.id,
        workflow.escalation.to,
        body_edit=_appender("## Stuck", f"{now_iso()}: ", reason),
    )


def check_may_move(engine: Engine, task: Task, to: str, *, doing: str = "move") -> None:
    """Refuse, before any side effect of a command (``merge`` merges first), a move its
    caller may not take; the move itself checks again under the write lock."""
    engine.caller.check_own(task.id, doing)
    workflow = engine.workflow(task)
    engine.caller.check_move(workflow, task, resolve(workflow, task, to))


def _role(workflow: Workflow, role: str) -> str:
    state = workflow.done_state if role == "done" else workflow.cancelled_state
    if state is None:
        raise WorkflowError(f"workflow {workflow.name} has no state with role {role}")
    return state


def _appender(heading: str, prefix: str, text: str) -> Callable[[str], str]:
    message = text.strip()

    def append(body: str) -> str:
        return append_to_section(body, heading, prefix + message) if message else body

    return append
