"""The CLI's engine (from the composition root) and what its moves print."""

from __future__ import annotations

import sys

from orange.cli.context import TaskRef
from orange.cli.output import emit_json, task_object
from orange.compose import build_engine
from orange.engine.decide import Outcome
from orange.engine.engine import Engine


def engine_for(ref: TaskRef, *, actor: str | None = None) -> Engine:
    """The engine for a task's repository."""
    return build_engine(ref.project, actor=actor, store=ref.store)


def report_outcome(outcome: Outcome, json_out: bool) -> None:
    """Print what a move did: the move, messages, and hook failures (the move stands)."""
    if json_out:
        obj = task_object(outcome.task)
        obj.update(
            {
                "from": outcome.from_status,
                "to": outcome.to_status,
                "hook_errors": outcome.hook_errors,
                "messages": outcome.messages,
            }
        )
        emit_json(obj)
    else:
        task = outcome.task
        if outcome.from_status != outcome.to_status:
            print(f"task {task.id}: {outcome.from_status} -> {outcome.to_status}")
        for line in outcome.messages:
            print(line)
    for error in outcome.hook_errors:
        print(
            f"orange: warning: {error} (the task is {outcome.to_status} and needs attention; "
            f"clear it with `orange task ack {outcome.task.id}`)",
            file=sys.stderr,
        )


def move_task(ref: TaskRef, to: str, json_out: bool, **options: object) -> None:
    engine = engine_for(ref)
    report_outcome(engine.transition(ref.task_id, to, options=options), json_out)
