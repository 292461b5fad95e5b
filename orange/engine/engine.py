"""The engine: the only code that changes a task's status.

A move is decided, prepared, written and then carried out, in this order (DESIGN §4,
STYLE §8):

0. the task's committed definition is trusted on this host (else `Untrusted`; only a
   human's cancel passes, written and carried out without any of its hooks);
1. the transition exists (else `IllegalTransition`, naming the legal targets);
2. its ``when`` holds (else `GuardFailed`, naming the condition and the value);
3. its gate holds on the body, freshly written in this state (else `GateFailed`);
4. every hook action prepares (a failure rejects the move; nothing is written);
5. one ``status.changed`` commit holds the new status and everything decided with it;
6. hook actions take effect in order; failures are recorded in ``attention`` by a
   second ``hook.failed`` commit, and the move stands.

Steps 1–3 are pure (`orange.engine.decide`); steps 1–5 run inside the store's write
lock on the current tip, so two racing callers (an agent and the monitor, say) can
never both apply a move.  Dead agents: `orange.engine.monitoring`; plain-git moves:
`orange.engine.external`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from orange.engine import localqueue, orphans
from orange.engine.actions import HookContext, LocalRelease, Registry, commit_when_ready
from orange.engine.caller import ENGINE, HUMAN, Caller
from orange.engine.claims import BranchShare, Claim, claimed, share_waiting
from orange.engine.decide import (
    Outcome,
    move_trailers,
    nothing_to_respawn,
    plan_move,
    respawn_spec,
    seal,
    starting_move,
    with_new_run,
)
from orange.engine.definitions import require_trusted, trusted, workflow_of
from orange.engine.edits import BODY_CONFLICT
from orange.engine.ledger import (
    Usage,
    over_budget,
    raise_budget,
    usage_messages,
    usage_trailers,
    window_start,
    with_usage,
)
from orange.engine.notices import announce
from orange.engine.ports import AgentProbe, Notifier, UsageSource, WorkingCopies
from orange.engine.prompts import build_prompt
from orange.engine.records import Acted, Written, fields_change, require, unchanged
from orange.engine.workflow import HookSpec, Workflow
from orange.errors import InvalidInput, OrangeError, WorkflowError
from orange.store.lock import attempt, exclusive
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task

if TYPE_CHECKING:
    from pathlib import Path

    from orange.projects import Project


class Engine:
    """Moves the tasks of one repository through their workflows.

    Built by the composition root (`orange.compose.build_engine`), which hands it the
    registry of hook actions, the agents' working copies, the liveness probe and the
    ``caller`` (`orange.engine.caller`: who asks, which moves and tasks it may touch;
    a human unless told otherwise).
    """

    def __init__(
        self,
        store: TaskStore,
        project: Project | None = None,
        *,
        registry: Registry,
        copies: WorkingCopies | None = None,
        probe: AgentProbe | None = None,
        actor: str | None = None,
        release: LocalRelease | None = None,
        caller: Caller = HUMAN,
        notifier: Notifier | None = None,
        claim: Claim | None = None,
        share: BranchShare | None = None,
        usage: UsageSource | None = None,
    ) -> None:
        self.store = store
        self.usage = usage  # what the agent programs recorded (the ledger, issue 30)
        self.claim = claim  # pushes a new binding before its agent starts (`claims`)
        self.share = share  # pushes the branch of a task that waits for a human
        self.notifier = notifier
        self.release = release
        self.caller = caller
        self.project = project
        self.registry = registry
        self.copies = copies
        self.probe = probe
        self.actor = actor
        self._conflicts: set[str] = set()
        self._busy: set[str] = set()  # tasks whose moves this engine is carrying out

    @contextmanager
    def busy(self, task_id: str, *, wait: bool = True) -> Iterator[bool]:
        """Hold this host's lock on one task from a move's commit until its effects are
        carried out, so the monitor never judges an agent between the commit that
        starts it and its start (a respawn's new run with the old, dead pane).  Yields
        whether the lock is held; without ``wait``, False when someone else holds it.
        Re-entrant within this engine (a hook action's own move of the same task)."""
        if task_id in self._busy:
            yield True
            return
        path = busy_lock(self.store, task_id)
        with exclusive(path) if wait else attempt(path) as held:
            if held is False:
                yield False
                return
            self._busy.add(task_id)
            try:
                yield True
            finally:
                self._busy.discard(task_id)

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
        body_edit: Callable[[str], str] | None = None,
        human_cancel: bool = False,
        caller: Caller | None = None,
        budget: bool = False,
    ) -> Outcome:
        """Move a task to ``to`` (steps 0–6 above), as ``caller`` (default: the engine's).
        ``expect_from``: only if still in that status (else IllegalTransition); ``body_edit``:
        body → body before the gate; ``human_cancel``: an untrusted task's one move;
        ``budget``: the budget's stop (`orange.engine.ledger`).  The usage the agent
        programs recorded since the last record is committed with the move."""
        opts = dict(options or {})
        who = caller or self.caller
        who.check_own(task_id, "move")

        def compute(snap: Snapshot) -> Acted:
            original = require(snap, task_id)
            task, usage = self.with_recorded_usage(original)
            workflow = workflow_of(snap, task)
            is_trusted = trusted(snap, task, refuse=not human_cancel)
            body = self.body_for_write(task)
            if body_edit is not None:
                body = body_edit(body)
            plan = plan_move(
                workflow,
                task,
                body,
                to,
                escalation=escalation,
                expect_from=expect_from,
                caller=who,
                budget=budget,
            )
            hooks = plan.transition.hooks if is_trusted else ()
            after, messages = self._prepare(hooks, workflow, plan.before, plan.after, opts, snap)
            after = seal(workflow, after, hooks)
            if budget:
                after = after.with_fields(attention=over_budget(after.fields))
            trailers = move_trailers(task, after, escalation=escalation)
            if usage is not None:
                trailers += usage_trailers(usage)
                messages += usage_messages(usage, original.fields)
            return Acted(
                task_id=task.id,
                event="budget.spent" if budget else "status.changed",
                subject=f"task {task.id}: {task.status} -> {to}",
                writes={task.path: after.render().encode()},
                trailers=trailers,
                actor=actor or self.actor,
                task=after,
                before=plan.before,
                workflow=workflow,
                hooks=hooks,
                messages=messages,
                untrusted=not is_trusted,
            )

        with self.busy(task_id):
            outcome = self._carry_out(commit_when_ready(self.store, compute), opts)
        if not budget:
            stopped = self.enforce_budget(task_id)
            if stopped is not None:
                outcome.messages.append(f"stopped: {stopped.task.str_field('attention')}")
                outcome.task = stopped.task
        return outcome

    # The ledger (issue 30) -----------------------------------------------------------
    def with_recorded_usage(self, task: Task) -> tuple[Task, Usage | None]:
        """``task`` with the usage its agents recorded since the last record added to
        its ledger, and that usage (None: nothing to record)."""
        usage, until = self.unrecorded_usage(task)
        if usage is None:
            return task, None
        return task.with_fields(**with_usage(task.fields, usage, until)), usage

    def unrecorded_usage(self, task: Task) -> tuple[Usage | None, str]:
        """(the usage not yet recorded, the time it was read up to)."""
        until = now_iso()
        since = window_start(task.fields)
        if self.usage is None or since is None:
            return None, until
        usage = self.usage.read(task, since, until)
        worth = usage is not None and usage.worth_recording(task.fields)
        return (usage if worth else None), until

    def record_usage(self, task_id: str, usage: Usage) -> tuple[Task, tuple[str, ...]]:
        """Commit ``usage``, which an agent the caller ran for the task reported itself
        (`orange run`'s non-interactive agents), as a record of its own: trailers and
        totals as a move writes them, up to now.  Nothing when it is not worth a record
        (`Usage.worth_recording`).  Returns the task and what the record says."""
        return self._record(task_id, lambda task, until: usage)

    def record_left(self, task_id: str, holder: Task) -> tuple[Task, tuple[str, ...]] | None:
        """After Orange ended an agent of the task (its session or window killed, its
        process gone): what the agent programs wrote for the worktree ``holder`` names
        (the task as it was while that agent ran) since the task's last record, as a
        record of its own — the lines an agent writes on its way out, after the move
        that ended it read its usage.  None: no usage source or nothing to record."""
        source = self.usage
        if source is None:
            return None

        def left(task: Task, until: str) -> Usage | None:
            since = window_start(task.fields)
            return None if since is None else source.read(holder, since, until)

        try:
            return self._record(task_id, left)
        except OrangeError:  # an ended agent's leftovers never fail the move that ended it
            return None

    def _record(
        self, task_id: str, usage_of: Callable[[Task, str], Usage | None]
    ) -> tuple[Task, tuple[str, ...]]:
        """Commit the usage ``usage_of(task, now)`` gives as a record without a move."""
        said: list[str] = []

        def compute(snap: Snapshot) -> Written:
            task = require(snap, task_id)
            now = now_iso()
            usage = usage_of(task, now)
            if usage is None or not usage.worth_recording(task.fields):
                return unchanged(task)
            said[:] = usage_messages(usage, task.fields)
            after = task.with_fields(**with_usage(task.fields, usage, now), updated_at=now)
            return Written(
                task_id=task.id,
                event="usage.recorded",
                subject=f"task {task.id}: usage recorded",
                writes={task.path: after.render().encode()},
                trailers=usage_trailers(usage),
                actor=self.actor,
                task=after,
            )

        return self.store.commit(compute).task, tuple(said)

    def enforce_budget(self, task_id: str, *, live: bool = False) -> Outcome | None:
        """The budget's stop when the task's cost passed its budget: its agent's session
        ended, the task moved to the workflow's human-waiting state (the escalation's
        target) with the reason in ``attention``.  ``live``: count the usage not yet
        recorded too (the monitor's pass over a running agent).  None: within budget,
        no budget, or nowhere to stop (a terminal or waiting status, no escalation)."""
        try:
            task = self.store.get(task_id)
            workflow = self.workflow(task)
            esc = workflow.escalation
            if esc is None or task.status == esc.to or workflow.is_terminal(task.status):
                return None
            if live:
                task = self.with_recorded_usage(task)[0]
            if over_budget(task.fields) is None:
                return None
            return self.transition(task_id, esc.to, budget=True, caller=ENGINE)
        except OrangeError:
            return None

    def spawn(
        self,
        task_id: str,
        *,
        options: Mapping[str, Any] | None = None,
        caller: Caller | None = None,
    ) -> Outcome:
        """Start a task's agent: the workflow's spawning move out of the initial status,
        or the entry actions of a state a task was created in."""
        who = caller or self.caller
        who.check_own(task_id, "start")
        task = self.store.get(task_id)
        localqueue.check_start(self.store, task, human=who.kind == "human")
        workflow = self.workflow(task)
        if workflow.is_terminal(task.status):
            raise InvalidInput(f"task {task.id} is {task.status}; nothing to spawn")
        start = starting_move(workflow, task.status)
        if start is not None:
            return self.transition(task.id, start.to, options=options, caller=caller)
        state = workflow.states[task.status]
        if state.on_enter and not task.str_field("workspace"):
            return self.run_actions(task.id, state.on_enter, "agent.spawned", options or {})
        raise InvalidInput(
            f"task {task.id} is {task.status}: no agent to start in this status",
            hint="an agent already runs, or the status needs a human; see `orange task show`",
        )

    def respawn(self, task_id: str, *, options: Mapping[str, Any] | None = None) -> Outcome:
        """Restart the agent of the current state (seed 001 "Respawn Logic")."""
        self.caller.check_own(task_id, "respawn")
        task = self.store.get(task_id)
        workflow = self.workflow(task)
        state = workflow.states.get(task.status)
        if state is None or not state.respawn_prompt:
            raise nothing_to_respawn(workflow, task)
        spent = over_budget(task.fields)
        if spent is not None:  # a respawn would start the runaway agent again
            raise InvalidInput(f"task {task.id}: {spent}", hint=raise_budget(task.id))
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
        return self.run_actions(task.id, (spec,), "agent.respawned", options or {})

    def run_actions(
        self,
        task_id: str,
        specs: tuple[HookSpec, ...],
        event: str,
        options: Mapping[str, Any],
        before: Task | None = None,
    ) -> Outcome:
        """Prepare, commit and apply actions without a status change (spawn, respawn,
        the hooks of a move committed elsewhere: then ``before`` is the task before it,
        and the same commit starts the entered state's gate freshness, as `seal` does
        for the engine's own moves, so one commit records all that follows the move)."""

        def compute(snap: Snapshot) -> Acted:
            original = require(snap, task_id)
            require_trusted(snap, original)  # no action of an untrusted definition runs here
            # What the task's last agent run left unrecorded (it died, and the monitor
            # has not recorded its death yet): the new run's window starts after it.
            task, usage = self.with_recorded_usage(original)
            workflow = workflow_of(snap, task)
            current = task.with_body(self.body_for_write(task))
            start = current if before is None else before.with_body(current.body)
            after = current.with_fields(attention=None, updated_at=now_iso())
            after, messages = self._prepare(specs, workflow, start, after, options, snap)
            after = with_new_run(after, specs) if before is None else seal(workflow, after, specs)
            if usage is not None:
                messages += usage_messages(usage, original.fields)
            return Acted(
                task_id=task.id,
                event=event,
                subject=f"task {task.id}: {event.split('.')[-1]} in {task.status}",
                writes={task.path: after.render().encode()},
                trailers=usage_trailers(usage) if usage is not None else (),
                actor=self.actor,
                task=after,
                before=start,
                workflow=workflow,
                hooks=specs,
                messages=messages,
            )

        with self.busy(task_id):
            return self._carry_out(commit_when_ready(self.store, compute), options)

    # Plain fields --------------------------------------------------------------------
    def ack(self, task_id: str) -> Task:
        """Clear ``attention``."""
        self.caller.check_own(task_id, "ack")
        return self._set_fields(task_id, {"attention": None}, "attention.cleared", "acknowledged")

    def set_attention(self, task_id: str, reason: str, event: str = "attention.set") -> Task:
        return self._set_fields(task_id, {"attention": reason}, event, f"attention: {reason}")

    def set_fields(self, task_id: str, fields: dict[str, Any], event: str, what: str) -> Task:
        """Set non-status fields in one commit (a PR url, a rename): for the runtime."""
        if "status" in fields:
            raise InvalidInput("status changes go through transition()")
        return self._set_fields(task_id, fields, event, what)

    def _set_fields(self, task_id: str, fields: dict[str, Any], event: str, what: str) -> Task:
        def compute(snap: Snapshot) -> Written:
            return fields_change(require(snap, task_id), fields, event, what, self.actor)

        written = self.store.commit(compute)
        if fields.get("attention"):  # written only when it changed (`fields_change`)
            announce(self.notifier, None, None, written.task, written.commit)
        return written.task

    # The agent's working copy --------------------------------------------------------
    def body_for_write(self, task: Task) -> str:
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

    def sync_copy(self, task: Task) -> None:
        """Bring the task's working copy up to date after a write."""
        if self.copies is not None:
            try:
                self.copies.after_write(task)
            except OrangeError:
                pass  # the monitor and the next write retry; the ref is the truth

    def _flag_conflict(self, task_id: str, outcome: Outcome) -> None:
        if task_id in self._conflicts:
            self._conflicts.discard(task_id)
            outcome.messages.append(f"warning: {BODY_CONFLICT}")
            outcome.task = self.set_attention(task_id, BODY_CONFLICT, event="body.conflict")

    # Hook actions --------------------------------------------------------------------
    def _prepare(
        self,
        specs: Iterable[HookSpec],
        workflow: Workflow,
        before: Task,
        after: Task,
        options: Mapping[str, Any],
        snap: Snapshot,
    ) -> tuple[Task, tuple[str, ...]]:
        """Step 4: each action checks and prepares; its fields join the commit."""
        messages: list[str] = []
        for spec in specs:
            ctx = HookContext(
                self, spec, workflow, before, after, options, snapshot=snap, messages=messages
            )
            updates = self.registry.get(spec.action).prepare(ctx)
            if updates:
                after = after.with_fields(**updates)
        return after, tuple(messages)

    def _carry_out(self, acted: Acted, options: Mapping[str, Any]) -> Outcome:
        """After the commit: sync the working copy, claim a new binding, then step 6."""
        after = acted.task
        outcome = Outcome(
            after, acted.before.status, after.status, acted.commit, messages=list(acted.messages)
        )
        self.sync_copy(after)
        # Announced before the effects: one of them may end this process (a self-kill).
        announce(self.notifier, acted.workflow, acted.before, after, acted.commit)
        self._flag_conflict(after.id, outcome)
        if not claimed(self.claim, self, acted.before, after, acted.commit, options, outcome):
            return outcome  # bound elsewhere first: nothing starts here
        # Shared before the effects: one of them may end this process (the reviewer's
        # own move to review kills its window), and a branch never pushed cannot be
        # reviewed or merged on another host.
        shared = share_waiting(self.share, self, acted.workflow, acted.before, after)
        outcome.messages.extend([shared] if shared else [])
        self._run_effects(acted, options, outcome)
        if acted.before.status != after.status == acted.workflow.cancelled_state:
            # Tasks that wait for it wait for good: a person decides (one rule for every
            # path to a cancel, `orphans`).
            outcome.messages.extend(orphans.flag(self.store, lambda: self, again=True))
        if acted.untrusted and self.release is not None:
            # A cancel of an untrusted task: none of its hooks ran; undo only what this
            # host itself bound to it (its recorded session and worktree).
            force = bool(options.get("force"))
            outcome.messages.extend(self.release(self, after, force=force))
        return outcome

    def _run_effects(self, acted: Acted, options: Mapping[str, Any], outcome: Outcome) -> None:
        deferred: list[Callable[[], None]] = []
        for spec in acted.hooks:
            ctx = HookContext(
                self,
                spec,
                acted.workflow,
                acted.before,
                acted.task,
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
                    acted.task.id, {"attention": reason}, "hook.failed", reason
                )
            except OrangeError:
                pass
        for effect in deferred:  # effects that may end this very process come last
            try:
                effect()
            except Exception:
                pass


def busy_lock(store: TaskStore, task_id: str) -> Path:
    """The file of this host's lock on one task (`Engine.busy`), held by whatever
    changes a task's binding in several steps the monitor must not judge between
    (a move and its effects; a live branch's rename: `orange.ops.rename`)."""
    folder = store.repo.orange_dir() / "busy"
    folder.mkdir(exist_ok=True)
    return folder / f"{task_id}.lock"
