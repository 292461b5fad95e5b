"""Moves someone committed with plain git: carrying out their hooks here, once.

A status change committed in a tasks checkout (or fetched) is already written; the
``pre-commit`` git hook checked it was legal.  What is left is what ``orange task
update`` would have done after its commit: start the new state's gate freshness and
let the move's hook actions prepare (both go in one ``hooks.applied`` commit, so at
most one commit of Orange's follows the user's) and take effect.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orange.engine.decide import Outcome, resolve
from orange.engine.definitions import require_trusted
from orange.engine.fields import BASELINE_FIELD
from orange.engine.gates import fingerprints
from orange.engine.notices import announce
from orange.engine.records import require
from orange.engine.workflow import Transition, Workflow
from orange.errors import OrangeError
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.engine import Engine


def complete_external_move(engine: Engine, before: Task) -> Outcome | None:
    """Run the hooks of the move from ``before`` (the task as it was before the plain-git
    commit) to the task's current status.  None when the task has moved on since, or
    when the change is not a move of its workflow."""
    snap = engine.store.snapshot()
    current = require(snap, before.id)
    require_trusted(snap, current)  # no hook of an untrusted definition runs here
    workflow = engine.workflow(current)
    transition = None
    if current.status != before.status:
        transition = _transition(workflow, before, current.status)
    if transition is None or not transition.hooks:
        start_gate_freshness(engine, current, workflow)
        if transition is None:
            return None
        # No hooks, so no commit of ours but the baseline's: the notice is keyed by the
        # tip the move was read from (the plain-git commit, or one after it); a move with
        # hooks is announced by `run_actions`, keyed by its ``hooks.applied`` commit.
        tip = str(snap.commit.id) if snap.commit is not None else None
        announce(engine.notifier, workflow, before, current, tip)
        return Outcome(engine.store.get(before.id), before.status, current.status, None)
    # One commit after the user's: the hooks' fields and the gate baseline together.
    outcome = engine.run_actions(before.id, transition.hooks, "hooks.applied", {}, before=before)
    outcome.from_status = before.status
    return outcome


def start_gate_freshness(engine: Engine, task: Task, workflow: Workflow) -> None:
    """A state entered by hand starts its gates' freshness here, as the engine's own
    moves do, so an artifact from an earlier round never counts."""
    baseline = fingerprints(task.body, workflow.gated_sections(task.status))
    if (task.fields.get(BASELINE_FIELD) or {}) != baseline:
        engine.set_fields(
            task.id, {BASELINE_FIELD: baseline}, "baseline.set", f"gates of {task.status}"
        )


def _transition(workflow: Workflow, before: Task, to: str) -> Transition | None:
    try:
        return resolve(workflow, before, to)
    except OrangeError:
        try:  # not a table move: the crash rule's escalation, if anything
            return resolve(workflow, before, to, escalation=True)
        except OrangeError:
            return None
