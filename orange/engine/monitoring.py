"""What the engine does about a dead agent, and how an agent is started again.

The monitor (`orange.monitor`) notices a dead agent and calls `handle_dead_session`.
Under the store's lock it decides (`orange.engine.exitrules.decide_dead_session`) and
records the death once per agent run; then it carries the decision out: the full move
for `Advance`, the escalation move when the crash count reached the limit, a respawn
with the state's respawn prompt, or nothing (the task shows the agent as dead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Unpack

from orange.engine.actionspec import spawns
from orange.engine.caller import ENGINE
from orange.engine.decide import respawn_spec
from orange.engine.definitions import trusted, workflow_of
from orange.engine.exitrules import Advance, Crash, DeadSessionDecision, MarkDead, Respawn
from orange.engine.exitrules import decide_dead_session as decide
from orange.engine.fields import DEAD_FIELD, RUN_FIELD, baseline
from orange.engine.ledger import over_budget, raise_budget, usage_trailers
from orange.engine.notices import announce
from orange.engine.records import Written, WrittenArgs, require
from orange.engine.workflow import Workflow
from orange.errors import IllegalTransition, OrangeError
from orange.store.store import Snapshot, now_iso
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.engine.engine import Engine


# What `handle_dead_session` says when a move of the task is being carried out: the
# caller looks again shortly (the agent may be starting; its death, if real, stays).
BUSY = "busy: a move of the task is being carried out"
# What it says about a task whose definition this host does not trust: nothing of that
# definition runs here (no exit rule, no respawn, no escalation), and nothing is written.
UNTRUSTED = "left alone: its workflow definition is not trusted on this host"


class Death(Written):
    """The record of one agent death (or nothing), and what to do about it (a plain
    class: see `orange.store.events.Change`)."""

    __slots__ = ("decision", "status")

    def __init__(
        self,
        *,
        decision: DeadSessionDecision | None = None,
        status: str = "",
        **written: Unpack[WrittenArgs],
    ) -> None:
        super().__init__(**written)
        self.decision = decision
        self.status = status


def handle_dead_session(engine: Engine, task_id: str, *, expect_status: str | None = None) -> str:
    """Apply the workflow's exit-monitoring rules to a task whose agent has died.

    Idempotent: the death of one agent run is handled once, however many monitors
    race; a task that moved meanwhile is left alone.  Which run died and whether its
    death was handled come from this host's own record of the agent it started
    (`AgentProbe.started`), not from the ref's ``agent_run`` and ``dead_run``: a push
    may set those to anything legal-looking (a respawn elsewhere, a death record), and
    the monitor would count a handled death again or pass over the next one.  The
    ref's values only say how the death is recorded legally: ``dead_run`` is the ref's
    run; where the ref already records that run's death (written elsewhere, or here
    by a pass cut short), the death gets ``attention`` instead, counted no second time.
    Returns a short description of what was done (for the monitor's log).
    """
    actor = engine.actor or "monitor"
    snap = engine.store.snapshot()
    if not trusted(snap, require(snap, task_id)):
        return UNTRUSTED
    handled: list[tuple[Task, str]] = []  # (task, death) to record here once written

    def compute(snap: Snapshot) -> Death:
        handled.clear()
        task = require(snap, task_id)
        if not trusted(snap, task):  # its definition changed since: still nothing
            return _nothing(task)
        workflow = workflow_of(snap, task)
        run = f"{task.str_field(RUN_FIELD)}@{task.status}"
        recorded = task.str_field(DEAD_FIELD) == run  # the ref says this run's death is
        local = engine.probe.started(task) if engine.probe is not None else None
        mine = run if local is None else f"{local[0]}@{task.status}"
        state = workflow.states.get(task.status)
        if (
            workflow.is_terminal(task.status)
            or (expect_status is not None and task.status != expect_status)
            or (local[1] == mine if local is not None else recorded)  # handled already
        ):
            return _nothing(task)
        if (
            engine.probe is not None
            and state is not None
            and state.agent != "none"
            and engine.probe.is_alive(task, state.agent)
        ):
            return _nothing(task)  # respawned meanwhile by a racing monitor
        handled.append((task, mine))
        if recorded:  # and not handled here: no second record, no second count
            return _noted(task, workflow, actor)
        body = engine.body_for_write(task)
        decision = decide(workflow, task.fields, body, baseline(task))
        if isinstance(decision, Crash | Respawn):
            left = _moved_here_by_its_death(engine, workflow, task)
            if left is not None:
                decision = _uncounted(decision, left)
        restart = _restart_hint(workflow, task)
        ledgered, usage = engine.with_recorded_usage(task)  # the dead run's last usage
        death = record_death(ledgered.with_body(body), decision, run, actor, restart=restart)
        if usage is not None and death.writes:  # an `Advance` records it with its move
            death.trailers = (*death.trailers, *usage_trailers(usage))
        return death

    with engine.busy(task_id, wait=False) as free:
        if not free:  # a move of this task is being carried out: look again after it
            return BUSY
        death = engine.store.commit(compute)
        if engine.probe is not None:
            for task, mine in handled:
                engine.probe.handled(task, mine)
        if "attention" in dict(death.trailers).get("Orange-Fields", ""):  # set just now
            announce(engine.notifier, None, None, death.task, death.commit)
        if death.writes and engine.enforce_budget(task_id) is not None:
            return f"stopped: {engine.store.get(task_id).str_field('attention')}"
        if death.decision is None:
            return "noted: its death was recorded elsewhere" if death.writes else "nothing to do"
        return _carry_out(engine, task_id, death.status, death.decision, actor)


def _noted(task: Task, workflow: Workflow, actor: str) -> Death:
    """The death of an agent this host started, where the ref already records the death
    of its run: said in ``attention``, not counted (a second record would not be legal,
    and the count was taken by whoever wrote the first)."""
    restart = _restart_hint(workflow, task)
    what = (
        f"agent died in {task.status}; the tasks ref already records a death of its run "
        "(written elsewhere?): not counted again"
    )
    fields: dict[str, object] = {"attention": f"{what}; {restart}" if restart else what}
    new = task.with_fields(**fields, updated_at=now_iso())
    return Death(
        task_id=task.id,
        event="agent.dead",
        subject=f"task {task.id}: agent died in {task.status} (its death recorded before)",
        writes={task.path: new.render().encode()},
        trailers=(("Orange-Fields", "attention"),),
        actor=actor,
        task=new,
        status=task.status,
    )


def record_death(
    task: Task, decision: DeadSessionDecision, run: str, actor: str, *, restart: str = ""
) -> Death:
    """The commit recording a death (none for `Advance`: its move is the record).

    ``restart``: how a person starts an agent again, for the ``attention`` it sets."""
    status = task.status
    if isinstance(decision, Advance):
        return _nothing(task, decision)
    fields: dict[str, object] = {DEAD_FIELD: run, "updated_at": now_iso()}
    match decision:
        case Crash(crash_count=count) | Respawn(count_crash=True, crash_count=count):
            fields["crash_count"] = count
            event = "agent.crashed"
            what = f"agent crashed in {status}{_said(decision.reason)}"
        case _:
            event = "agent.dead"
            what = f"agent exited in {status}{_said(decision.reason)}"
    spent = over_budget(task.fields)  # the budget's stop ended it: its reason stays first
    what = f"{spent}; {what}" if spent is not None else what
    match decision:
        case MarkDead() | Crash(escalate_to=None):
            fields["attention"] = f"{what}; {restart}" if restart else what
    new = task.with_fields(**fields)
    return Death(
        task_id=task.id,
        event=event,
        subject=f"task {task.id}: {what}",
        writes={task.path: new.render().encode()},
        trailers=(("Orange-Fields", ", ".join(k for k in fields if k != "updated_at")),),
        actor=actor,
        task=new,
        decision=decision,
        status=status,
    )


def _nothing(task: Task, decision: DeadSessionDecision | None = None) -> Death:
    """No commit; with ``decision``, one to carry out (an `Advance` is its own record)."""
    return Death(
        task_id=task.id,
        event="",
        subject="",
        writes={},
        task=task,
        decision=decision,
        status=task.status,
    )


def _moved_here_by_its_death(engine: Engine, workflow: Workflow, task: Task) -> str | None:
    """The status an exit rule's move brought the task from, when the agent found dead
    now is the one whose death made that move: the task's last status change was the
    monitor's (not an escalation), it started no agent, the two states have the same
    agent (a worker's death in planning, not a reviewer's in agent-review) and no agent
    was started since.  That death was handled by the move (issue 25: one worker death
    was advanced planning -> working and then counted as a crash in working)."""
    from orange.store.history import task_history  # (only on a death)

    for entry in reversed(task_history(engine.store, task.id)):
        if entry.event in ("agent.respawned", "agent.spawned"):
            return None
        if entry.to_status is None or entry.from_status is None:
            continue
        left, came = workflow.states.get(entry.from_status), workflow.states.get(task.status)
        moves = workflow.transitions_between(entry.from_status, task.status)
        if (
            entry.actor != "monitor"
            or "Orange-Escalation" in entry.trailers
            or entry.to_status != task.status
            or left is None
            or came is None
            or left.agent != came.agent
            or not moves
            or any(spawns(move.hooks) for move in moves)
        ):
            return None
        return entry.from_status
    return None


def _uncounted(decision: Crash | Respawn, left: str) -> DeadSessionDecision:
    """``decision`` for a death already answered by the move out of ``left``: a respawn
    still respawns, but neither counts a crash nor escalates; a crash becomes a mark."""
    why = f"it died in {left}, and that death moved the task here: not counted again"
    if isinstance(decision, Respawn):
        return Respawn(False, decision.crash_count - int(decision.count_crash), None, None, why)
    return MarkDead(why)


def _carry_out(
    engine: Engine, task_id: str, status: str, decision: DeadSessionDecision, actor: str
) -> str:
    try:
        match decision:
            case Advance(to=target, reason=reason):
                # Exit rules are the engine's moves, whoever runs the monitor pass.
                engine.transition(task_id, target, expect_from=status, actor=actor, caller=ENGINE)
                return f"advanced {status} -> {target}{_said(reason)}"
            case Crash(escalate_to=str() as target) | Respawn(escalate_to=str() as target):
                engine.transition(
                    task_id, target, expect_from=status, escalation=True, actor=actor, caller=ENGINE
                )
                return f"escalated {status} -> {target}{_said(decision.reason)}"
            case Respawn(reason=reason):
                task = engine.store.get(task_id)
                spec = respawn_spec(engine.workflow(task), task.status)
                engine.run_actions(task_id, (spec,), "agent.respawned", {})
                return f"respawned the agent of {status}{_said(reason)}"
    except IllegalTransition:
        return "the task moved meanwhile"
    except OrangeError as exc:
        engine.set_attention(task_id, f"monitor could not act: {exc}", event="monitor.failed")
        return f"failed: {exc}"
    return f"marked dead in {status}{_said(decision.reason)}"


def _said(reason: str) -> str:
    """A decision's reason after what happened, when it adds something."""
    return f" ({reason})" if reason else ""


def _restart_hint(workflow: Workflow, task: Task) -> str:
    """What starts an agent again in the task's status: a respawn where the status has
    a respawn prompt, else a human's send-back (its `notify_worker` restarts a dead
    worker), else the status's moves."""
    if over_budget(task.fields) is not None:  # nothing restarts it before that
        return raise_budget(task.id)
    state = workflow.states.get(task.status)
    if state is not None and state.respawn_prompt:
        return f"respawn with `orange task respawn {task.id}`"
    if workflow.request_changes_target(task.status):
        return f"send it back to work with `orange task request-changes {task.id}`"
    targets = ", ".join(workflow.targets_from(task.status))
    return (
        f"it moves on with `orange task update {task.id} --status` to: {targets}" if targets else ""
    )
