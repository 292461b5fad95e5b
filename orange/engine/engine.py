"""The engine: the only code that changes a task's status.

A move is decided, prepared, written and then carried out, in this order (DESIGN §4,
STYLE §8):

1. the transition exists (else `IllegalTransition`, naming the legal targets);
2. its ``when`` holds (else `GuardFailed`, naming the condition and the value);
3. its gate holds on the body, freshly written in this state (else `GateFailed`);
4. every hook action prepares (a failure rejects the move; nothing is written);
5. one ``status.changed`` commit holds the new status and everything decided with it;
6. hook actions take effect in order; failures are recorded in ``attention`` by a
   second ``hook.failed`` commit, and the move stands.

Steps 1–5 run inside the store's write lock on the current tip, so two racing callers
(an agent and the monitor, say) can never both apply a move.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from orange.engine.actions import HookContext, Registry, default_registry
from orange.engine.exitrules import Advance, Crash, MarkDead, Respawn, decide_dead_session
from orange.engine.gates import archive_section, check_gate, fingerprints
from orange.engine.loader import load_workflow
from orange.engine.prompts import build_prompt
from orange.engine.tasks import committed_workflow_text
from orange.engine.workflow import HookSpec, Transition, Workflow
from orange.errors import (
    GuardFailed,
    IllegalTransition,
    InvalidInput,
    NotFound,
    OrangeError,
    WorkflowError,
)
from orange.store.events import Change
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task

if TYPE_CHECKING:
    from orange.projects import Project

BASELINE_FIELD = "gate_baseline"
HUMAN_STATUSES = ("reviewing", "stuck")  # where only a human sends a task back
RUN_FIELD = "agent_run"  # a token per agent start: deaths are handled once per run
DEAD_FIELD = "dead_run"  # "<run>@<status>": the death last handled


class WorkingCopies(Protocol):
    """The agent's TASK.md working copy in its worktree (provided by the runtime)."""

    def take_in(self, task: Task) -> tuple[str, bool] | None:
        """(body to commit: the working copy merged with the ref, had a conflict), or
        None when the task has no working copy here."""

    def after_write(self, task: Task) -> None:
        """Bring the working copy up to date with the committed task."""


class AgentProbe(Protocol):
    def is_alive(self, task: Task, agent: str) -> bool:
        """Whether the task's agent (``worker`` or ``reviewer`` window) is running."""


@dataclass
class Outcome:
    """What a move or a respawn did."""

    task: Task
    from_status: str
    to_status: str
    commit: str | None
    hook_errors: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)


_parsed: dict[str, Workflow] = {}


def parse_committed(text: str, name: str) -> Workflow:
    key = hashlib.sha1(text.encode()).hexdigest()
    if key not in _parsed:
        _parsed[key] = load_workflow(text, f"refs/orange/tasks:meta/workflows/{name}.yml")
    return _parsed[key]


def workflow_of(snap: Snapshot, task: Task) -> Workflow:
    """The definition the task was created under, as committed in the ref."""
    text = committed_workflow_text(snap, task)
    if text is None:
        from orange.engine.catalog import load_named

        return load_named(task.workflow)  # a task from before definitions were committed
    return parse_committed(text, task.workflow)


def resolve(workflow: Workflow, task: Task, to: str, *, escalation: bool = False) -> Transition:
    """The transition ``task.status -> to`` whose ``when`` holds (steps 1 and 2)."""
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
    if escalation and workflow.escalation and workflow.escalation.to == to:
        # The crash rule's own move: from any active state, whatever the table says.
        return Transition(from_=current, to=to, hooks=workflow.escalation.hooks)
    candidates = workflow.transitions_between(current, to)
    if not candidates:
        targets = workflow.targets_from(current)
        return_hint = f"from {current} you can go to: {', '.join(targets) or 'nowhere'}"
        raise IllegalTransition(f"illegal transition {current} -> {to}", hint=return_hint)
    passing = [t for t in candidates if t.when is None or t.when.holds(task.fields)]
    if not passing:
        conditions = " or ".join(str(t.when) for t in candidates if t.when is not None)
        fields = sorted({t.when.field for t in candidates if t.when is not None})
        values = ", ".join(f"{f} is {task.int_field(f)}" for f in fields)
        raise GuardFailed(f"transition {current} -> {to} not allowed: needs {conditions}, {values}")
    if len(passing) > 1:
        raise WorkflowError(f"workflow {workflow.name}: {current} -> {to} is ambiguous")
    return passing[0]


class Engine:
    """Moves the tasks of one repository through their workflows."""

    def __init__(
        self,
        store: TaskStore,
        project: Project | None = None,
        *,
        registry: Registry | None = None,
        copies: WorkingCopies | None = None,
        probe: AgentProbe | None = None,
        actor: str | None = None,
    ) -> None:
        self.store = store
        self.project = project
        self._registry = registry
        self.copies = copies
        self.probe = probe
        self.actor = actor
        self._conflicts: set[str] = set()

    @property
    def registry(self) -> Registry:
        """The hook actions; the runtime's (tmux, worktrees) are imported on first use."""
        if self._registry is None:
            self._registry = default_registry()
        return self._registry

    @property
    def project_path(self) -> str | None:
        return self.project.path if self.project else None

    # Reading -------------------------------------------------------------------------
    def workflow(self, task: Task) -> Workflow:
        return workflow_of(self.store.snapshot(), task)

    def has_transition(self, task: Task, to: str) -> bool:
        return self.workflow(task).has_transition(task.status, to)

    def build_prompt(self, task: Task, key: str) -> str:
        workflow = self.workflow(task)
        if key not in workflow.prompts:
            raise WorkflowError(f"workflow {workflow.name} has no prompt {key!r}")
        return build_prompt(workflow.prompts[key], task.fields)

    # Moving --------------------------------------------------------------------------
    def transition(
        self,
        task_id: str,
        to: str,
        *,
        options: Mapping[str, Any] | None = None,
        expect_from: str | None = None,
        escalation: bool = False,
        actor: str | None = None,
        body_edit: Any = None,
    ) -> Outcome:
        """Move a task to ``to`` (steps 1–6 above).

        ``expect_from``: only move if the task is still in that status (the monitor's
        idempotency); otherwise raise IllegalTransition.  ``body_edit``: a function
        body → body applied before the gate (``request-changes`` adds its message).
        """
        opts = dict(options or {})
        state: dict[str, Any] = {}

        def compute(snap: Snapshot) -> Change:
            task = self._require(snap, task_id)
            if expect_from is not None and task.status != expect_from:
                raise IllegalTransition(
                    f"task {task.id} is already {task.status} (expected {expect_from})"
                )
            workflow = workflow_of(snap, task)
            body = self._body_for_write(task)
            if body_edit is not None:
                body = body_edit(body)
            before = task.with_body(body)
            transition = resolve(workflow, before, to, escalation=escalation)
            if transition.gate is not None:
                baseline = _baseline(before)
                result = check_gate(transition.gate, body, baseline)
                if not result.ok:
                    from orange.errors import GateFailed

                    raise GateFailed(result.message)
            new_body = _archive_old_verdicts(workflow, before, to)
            after = before.with_body(new_body).with_fields(
                status=to, crash_count=0, attention=None, updated_at=now_iso()
            )
            messages: list[str] = []
            for spec in transition.hooks:
                ctx = HookContext(
                    self, spec, workflow, before, after, opts, snapshot=snap, messages=messages
                )
                updates = self.registry.get(spec.action).prepare(ctx)
                if updates:
                    after = after.with_fields(**updates)
            after = after.with_fields(
                **{BASELINE_FIELD: fingerprints(after.body, workflow.gated_sections(to))}
            )
            if _spawns(transition.hooks):
                after = after.with_fields(**{RUN_FIELD: _run_token()})
            state.update(
                before=before,
                after=after,
                workflow=workflow,
                transition=transition,
                messages=messages,
            )
            changed = [k for k in after.fields if after.fields.get(k) != task.fields.get(k)]
            changed = [k for k in changed if k not in ("status", "updated_at", BASELINE_FIELD)]
            if after.body != task.body:
                changed.append("body")
            trailers = [("Orange-From", task.status), ("Orange-To", to)]
            if changed:
                trailers.append(("Orange-Fields", ", ".join(changed)))
            if escalation:
                trailers.append(("Orange-Escalation", "yes"))
            return Change(
                task_id=task.id,
                event="status.changed",
                subject=f"task {task.id}: {task.status} -> {to}",
                writes={task.path: after.render().encode()},
                trailers=tuple(trailers),
                actor=actor or self.actor,
            )

        commit = self.store.commit(compute).commit
        after: Task = state["after"]
        outcome = Outcome(after, state["before"].status, to, commit, messages=state["messages"])
        self._sync_copy(after)
        self._flag_conflict(after.id, outcome)
        self._run_effects(
            state["transition"].hooks, state["workflow"], state["before"], after, opts, outcome
        )
        return outcome

    def request_changes(self, task_id: str, message: str = "") -> Outcome:
        """A human sends a task back to its worker, the message under ``## Feedback``.

        Only from a status a human holds (``reviewing``, or ``stuck`` where the workflow
        leads back to working): elsewhere a move to working is the agent's own, gated
        move (``planning`` with a plan, ``agent-review`` with a failed review), which a
        human's feedback must not make.
        """
        from orange.engine.gates import append_to_section

        text = message.strip()
        current = self.store.get(task_id)
        if current.status not in HUMAN_STATUSES:
            raise IllegalTransition(
                f"task {current.id} is {current.status}; request-changes sends back only a "
                f"task in {' or '.join(HUMAN_STATUSES)}"
            )

        def add_feedback(body: str) -> str:
            if not text:
                return body
            return append_to_section(body, "## Feedback", f"{now_iso()} (human):\n{text}")

        return self.transition(
            current.id, "working", body_edit=add_feedback, expect_from=current.status
        )

    def spawn(self, task_id: str, *, options: Mapping[str, Any] | None = None) -> Outcome:
        """Start a task's agent: the workflow's spawning move out of the initial status,
        or the entry actions of a state a task was created in."""
        task = self.store.get(task_id)
        workflow = self.workflow(task)
        if workflow.is_terminal(task.status):
            raise InvalidInput(f"task {task.id} is {task.status}; nothing to spawn")
        for transition in workflow.transitions:
            if transition.from_ == task.status and _spawns(transition.hooks):
                return self.transition(task.id, transition.to, options=options)
        state = workflow.states[task.status]
        if state.on_enter and not task.str_field("workspace"):
            return self._run_actions(task.id, state.on_enter, "agent.spawned", options or {})
        raise InvalidInput(
            f"task {task.id} is {task.status}: no agent to start in this status",
            hint="an agent already runs, or the status needs a human; see `orange task show`",
        )

    def respawn(self, task_id: str, *, options: Mapping[str, Any] | None = None) -> Outcome:
        """Restart the agent of the current state (seed 001 "Respawn Logic")."""
        task = self.store.get(task_id)
        workflow = self.workflow(task)
        state = workflow.states.get(task.status)
        if state is None or not state.respawn_prompt:
            raise InvalidInput(
                f"task {task.id} is {task.status}; that status has no agent to respawn"
            )
        if not task.str_field("workspace"):
            raise InvalidInput(
                f"task {task.id} has no workspace",
                hint=f"start it with `orange task spawn {task.id}`",
            )
        if self.probe is not None and self.probe.is_alive(task, state.agent):
            raise InvalidInput(
                f"task {task.id}'s agent is still running",
                hint=f"attach with `orange task attach {task.id}`",
            )
        spec = respawn_spec(workflow, task.status)
        return self._run_actions(task.id, (spec,), "agent.respawned", options or {})

    def handle_dead_session(self, task_id: str, *, expect_status: str | None = None) -> str:
        """Apply the workflow's exit-monitoring rules to a task whose agent has died.

        Idempotent: the death of one agent run (``agent_run``) is handled once, however
        many monitors race; a task that moved meanwhile is left alone.  Returns a short
        description of what was done (for the monitor's log).
        """
        decided: dict[str, Any] = {}

        def compute(snap: Snapshot) -> Change | None:
            task = self._require(snap, task_id)
            workflow = workflow_of(snap, task)
            if workflow.is_terminal(task.status):
                return None
            if expect_status is not None and task.status != expect_status:
                return None
            run = f"{task.str_field(RUN_FIELD)}@{task.status}"
            if task.str_field(DEAD_FIELD) == run:
                return None  # this run's death in this status was handled already
            state = workflow.states.get(task.status)
            if (
                self.probe is not None
                and state is not None
                and state.agent != "none"
                and self.probe.is_alive(task, state.agent)
            ):
                return None  # respawned meanwhile (a racing monitor): not dead any more
            body = self._body_for_write(task)
            decision = decide_dead_session(workflow, task.fields, body, _baseline(task))
            decided.update(decision=decision, status=task.status)
            if isinstance(decision, Advance):
                return None  # the transition below writes
            fields: dict[str, Any] = {DEAD_FIELD: run, "updated_at": now_iso()}
            if isinstance(decision, Crash) or (
                isinstance(decision, Respawn) and decision.count_crash
            ):
                fields["crash_count"] = decision.crash_count
                event = "agent.crashed"
                what = f"agent crashed in {task.status} ({decision.reason})"
            else:
                event = "agent.dead"
                what = f"agent exited in {task.status} ({decision.reason})"
            if isinstance(decision, MarkDead | Crash) and not getattr(
                decision, "escalate_to", None
            ):
                fields["attention"] = f"{what}; respawn with `orange task respawn {task.id}`"
            new = task.with_body(body).with_fields(**fields)
            return Change(
                task_id=task.id,
                event=event,
                subject=f"task {task.id}: {what}",
                writes={task.path: new.render().encode()},
                trailers=(("Orange-Fields", ", ".join(k for k in fields if k != "updated_at")),),
                actor=self.actor or "monitor",
            )

        self.store.commit(compute)
        decision = decided.get("decision")
        status = decided.get("status", "")
        if decision is None:
            return "nothing to do"
        actor = self.actor or "monitor"
        try:
            if isinstance(decision, Advance):
                self.transition(task_id, decision.to, expect_from=status, actor=actor)
                return f"advanced {status} -> {decision.to} ({decision.reason})"
            target = getattr(decision, "escalate_to", None)
            if target:
                self.transition(task_id, target, expect_from=status, escalation=True, actor=actor)
                return f"escalated {status} -> {target} ({decision.reason})"
            if isinstance(decision, Respawn):
                task = self.store.get(task_id)
                spec = respawn_spec(self.workflow(task), task.status)
                self._run_actions(task_id, (spec,), "agent.respawned", {})
                return f"respawned the agent of {status} ({decision.reason})"
        except IllegalTransition:
            return "the task moved meanwhile"
        except OrangeError as exc:
            self.set_attention(task_id, f"monitor could not act: {exc}", event="monitor.failed")
            return f"failed: {exc}"
        return f"marked dead in {status} ({decision.reason})"

    def complete_external_move(self, task_id: str, before: Task) -> Outcome | None:
        """Run the hooks of a status change someone committed with plain git.

        The status is already written (a commit in a tasks checkout, or fetched); the
        ``pre-commit`` git hook checked it was legal.  Here the move's hook actions
        prepare (their field changes go in one ``hooks.applied`` commit) and take effect,
        as they would have for ``task update``.  ``before`` is the task as it was before
        that commit.  Returns None when the task has moved on since.
        """
        current = self.store.get(task_id)
        if current.status == before.status:
            return None
        workflow = self.workflow(current)
        try:
            transition = resolve(workflow, before, current.status)
        except OrangeError:
            try:  # not a table move: the crash rule's escalation, if anything
                transition = resolve(workflow, before, current.status, escalation=True)
            except OrangeError:
                return None
        specs = transition.hooks
        if not specs:
            return Outcome(current, before.status, current.status, None)
        outcome = self._run_actions(task_id, specs, "hooks.applied", {}, before=before)
        outcome.from_status = before.status
        return outcome

    def ack(self, task_id: str) -> Task:
        """Clear ``attention``."""
        return self._set_fields(task_id, {"attention": None}, "attention.cleared", "acknowledged")

    def set_attention(self, task_id: str, reason: str, event: str = "attention.set") -> Task:
        return self._set_fields(task_id, {"attention": reason}, event, f"attention: {reason}")

    # Internals -----------------------------------------------------------------------
    def _require(self, snap: Snapshot, task_id: str) -> Task:
        task = snap.task(task_id)
        if task is None:
            raise NotFound(f"no task {task_id!r}", hint="see `orange task list --all`")
        return task

    def _body_for_write(self, task: Task) -> str:
        """The body to validate and commit: the agent's working copy merged in."""
        if self.copies is None:
            return task.body
        merged = self.copies.take_in(task)
        if merged is None:
            return task.body
        body, conflict = merged
        if conflict:
            self._conflicts.add(task.id)
        return body

    def _flag_conflict(self, task_id: str, outcome: Outcome) -> None:
        if task_id in self._conflicts:
            self._conflicts.discard(task_id)
            reason = (
                "TASK.md changed in the worktree and in Orange at once; both versions are "
                "kept between conflict markers: resolve them and `orange task ack`"
            )
            outcome.messages.append(f"warning: {reason}")
            outcome.task = self.set_attention(task_id, reason, event="body.conflict")

    def sync_copy(self, task: Task) -> None:
        """Bring the task's working copy up to date after a write made elsewhere."""
        self._sync_copy(task)

    def _sync_copy(self, task: Task) -> None:
        if self.copies is not None:
            try:
                self.copies.after_write(task)
            except OrangeError:
                pass  # the monitor and the next write retry; the ref is the truth

    def _run_effects(
        self,
        hooks: Iterable[HookSpec],
        workflow: Workflow,
        before: Task,
        after: Task,
        options: Mapping[str, Any],
        outcome: Outcome,
    ) -> None:
        deferred: list[Callable[[], None]] = []
        for spec in hooks:
            ctx = HookContext(
                self,
                spec,
                workflow,
                before,
                after,
                options,
                messages=outcome.messages,
                deferred=deferred,
            )
            try:
                self.registry.get(spec.action).apply(ctx)
            except Exception as exc:  # any failure: recorded, never rolled back
                message = exc.message if isinstance(exc, OrangeError) else repr(exc)
                outcome.hook_errors.append(f"{spec.action}: {message}")
        if outcome.hook_errors:
            reason = "hook failed: " + "; ".join(outcome.hook_errors)
            try:
                outcome.task = self._set_fields(
                    after.id, {"attention": reason}, "hook.failed", reason
                )
            except OrangeError:
                pass
        for effect in deferred:  # effects that may end this very process come last
            try:
                effect()
            except Exception:
                pass

    def _run_actions(
        self,
        task_id: str,
        specs: tuple[HookSpec, ...],
        event: str,
        options: Mapping[str, Any],
        before: Task | None = None,
    ) -> Outcome:
        """Prepare, commit and apply actions without a status change (spawn, respawn)."""
        state: dict[str, Any] = {}
        previous = before

        def compute(snap: Snapshot) -> Change:
            task = self._require(snap, task_id)
            workflow = workflow_of(snap, task)
            current = task.with_body(self._body_for_write(task))
            before = current if previous is None else previous.with_body(current.body)
            after = current.with_fields(attention=None, updated_at=now_iso())
            messages: list[str] = []
            for spec in specs:
                ctx = HookContext(
                    self, spec, workflow, before, after, options, snapshot=snap, messages=messages
                )
                updates = self.registry.get(spec.action).prepare(ctx)
                if updates:
                    after = after.with_fields(**updates)
            if _spawns(specs):
                after = after.with_fields(**{RUN_FIELD: _run_token()})
            state.update(before=before, after=after, workflow=workflow, messages=messages)
            return Change(
                task_id=task.id,
                event=event,
                subject=f"task {task.id}: {event.split('.')[-1]} in {task.status}",
                writes={task.path: after.render().encode()},
                actor=self.actor,
            )

        commit = self.store.commit(compute).commit
        after: Task = state["after"]
        outcome = Outcome(after, after.status, after.status, commit, messages=state["messages"])
        self._sync_copy(after)
        self._flag_conflict(after.id, outcome)
        self._run_effects(specs, state["workflow"], state["before"], after, options, outcome)
        return outcome

    def set_fields(self, task_id: str, fields: dict[str, Any], event: str, what: str) -> Task:
        """Set non-status fields in one commit (a PR url, a rename): for the runtime."""
        if "status" in fields:
            raise InvalidInput("status changes go through transition()")
        return self._set_fields(task_id, fields, event, what)

    def _set_fields(self, task_id: str, fields: dict[str, Any], event: str, what: str) -> Task:
        result: list[Task] = []

        def compute(snap: Snapshot) -> Change | None:
            task = self._require(snap, task_id)
            if all(task.fields.get(k) == v for k, v in fields.items()):
                result[:] = [task]
                return None
            new = task.with_fields(**fields, updated_at=now_iso())
            result[:] = [new]
            return Change(
                task_id=task.id,
                event=event,
                subject=f"task {task.id}: {what}",
                writes={task.path: new.render().encode()},
                trailers=(("Orange-Fields", ", ".join(fields)),),
                actor=self.actor,
            )

        self.store.commit(compute)
        return result[0]


def respawn_spec(workflow: Workflow, status: str) -> HookSpec:
    """The spawn action that restarts the agent of ``status`` with its respawn prompt."""
    from types import MappingProxyType

    state = workflow.states[status]
    prompt = state.respawn_prompt or ""
    if state.agent == "reviewer":
        params = {"prompt": prompt, "harness": "review", "permissions": "reduced"}
        return HookSpec("spawn_reviewer", MappingProxyType(params))
    return worker_spawn_spec(prompt)


def worker_spawn_spec(prompt: str) -> HookSpec:
    """Start the worker window with ``prompt``, the task's harness, full permissions."""
    from types import MappingProxyType

    params = {"prompt": prompt, "harness": "task", "permissions": "full", "window": "worker"}
    return HookSpec("spawn_agent", MappingProxyType(params))


def _run_token() -> str:
    import secrets

    return f"{now_iso()}-{secrets.token_hex(3)}"


def _spawns(hooks: Iterable[HookSpec]) -> bool:
    return any(spec.action in ("spawn_agent", "spawn_reviewer") for spec in hooks)


def _baseline(task: Task) -> Mapping[str, str]:
    value = task.fields.get(BASELINE_FIELD)
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _archive_old_verdicts(workflow: Workflow, task: Task, to: str) -> str:
    """Entering a state that waits for a verdict: the last round's verdict section is
    renamed (``## Review (round 1)``), readable but no longer counting."""
    headings = {
        t.gate.section for t in workflow.transitions if t.from_ == to and t.gate and t.gate.verdict
    }
    headings |= {
        r.has_artifact.section
        for r in workflow.rules_for(to)
        if r.has_artifact is not None and r.has_artifact.verdict
    }
    body = task.body
    round_no = task.int_field("review_round")
    label = f"round {round_no}" if round_no else "earlier"
    for heading in sorted(headings):
        body = archive_section(body, heading, label)
    return body
