"""Random sequences of edits, moves, spawns, request-changes and agent deaths, run
through the real engine (hook actions recorded, not run), checked against the workflow.

Each rule says exactly what the engine must do: a move the workflow does not list is
refused with `IllegalTransition`, one whose ``when`` fails with `GuardFailed`, one
whose gate does not hold with `GateFailed`, and a refusal leaves the ref where it was;
a legal move with its gate met succeeds with one ``status.changed`` commit.  The
invariant replays every new commit on the tasks ref against the workflow: table moves
legal from the previous status with their gate holding, the escalation move only after
the crash that reached ``stuck_after``, ``crash_count`` reset on every status change,
``review_round`` moved only by the actions that count it and bounded by the ``when``
guards.  ``pytest --hypothesis-show-statistics`` shows what the runs reached.
"""

from __future__ import annotations

import os
import unittest
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pygit2
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from orange import projects
from orange.engine import requests
from orange.engine.actions import Action, HookContext
from orange.engine.catalog import load_named
from orange.engine.edits import edit_body
from orange.engine.engine import Engine
from orange.engine.fields import BASELINE_FIELD
from orange.engine.gates import check_gate, fingerprints, section, set_section
from orange.engine.monitoring import handle_dead_session
from orange.engine.tasks import create_task
from orange.engine.workflow import Gate, HookSpec, Transition, Workflow
from orange.errors import (
    GateFailed,
    GuardFailed,
    IllegalTransition,
    InvalidInput,
    OrangeError,
)
from orange.store import layout
from orange.store.events import parse_trailers
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import make_repo
from tests.recording import recording_registry

ROUND = "review_round"

# Body edits an agent or a human might make; ``{n}`` keeps every write fresh.
SECTIONS = {
    "plan": ("## Plan", "APPROACH: step {n}\nTOUCHING: src/app.py"),
    "plan-no-fields": ("## Plan", "nothing useful {n}"),
    "handoff": ("## Handoff", "DONE: step {n}"),
    "handoff-empty": ("## Handoff", ""),
    "review-pass": ("## Review", "Verdict: PASS\n\nok {n}"),
    "review-fail": ("## Review", "**Verdict: FAIL**\n\nfix {n}"),
    "review-no-verdict": ("## Review", "I think it is fine {n}"),
    "notes": ("## Notes", "note {n}"),
}


class _CountingSpawn(Action):
    """The recorded ``spawn_agent`` plus the real one's ``increment:`` parameter
    (fresh-worker counts review rounds on the reviewer's spawn)."""

    def __init__(self, inner: Action) -> None:
        self.inner = inner
        self.name = inner.name

    def prepare(self, ctx: HookContext) -> dict[str, Any]:
        updates = dict(self.inner.prepare(ctx))
        counted = ctx.spec.get("increment")
        if counted:
            updates[str(counted)] = ctx.before.int_field(str(counted)) + 1
        return updates

    def apply(self, ctx: HookContext) -> None:
        self.inner.apply(ctx)


@dataclass
class _Repo:
    """One project per workflow and test: examples differ by task, not by repository
    (a repository per example costs more than the steps it runs)."""

    store: TaskStore
    project: projects.Project
    engine: Engine


_repos: dict[tuple[str, str], _Repo] = {}


def _repo_for(workflow: str) -> _Repo:
    home = os.environ["ORANGE_HOME"]  # per test (the hermetic fixture)
    key = (home, workflow)
    if key not in _repos:
        repo = make_repo(Path(home).parent / f"stateful-{workflow}")
        project = projects.add(repo, name=f"hyp-{workflow}")
        store = TaskStore.open(repo)
        registry, _ = recording_registry()
        registry = registry.replace(spawn_agent=_CountingSpawn(registry.get("spawn_agent")))
        _repos[key] = _Repo(store, project, Engine(store, project, registry=registry))
    return _repos[key]


def _increments(hooks: Sequence[HookSpec]) -> set[str]:
    """The fields these actions count up (``increment`` or ``spawn_agent increment:``)."""
    counted: set[str] = set()
    for spec in hooks:
        if spec.action == "increment":
            counted.add(str(spec.get("field")))
        elif spec.action == "spawn_agent" and spec.get("increment"):
            counted.add(str(spec.get("increment")))
    return counted


def _round_limit(workflow: Workflow) -> int | None:
    """How many review rounds agents alone may run: the bound of the ``review_round``
    guard on the way back to work (``review_round < 2`` → 2), None without one."""
    limits = []
    for t in workflow.transitions:
        if t.when is not None and t.when.field == ROUND and t.when.op in ("<", "<="):
            bound = t.when.value
            assert isinstance(bound, int)  # a count's guard: a whole number
            limits.append(bound + (1 if t.when.op == "<=" else 0))
    return max(limits) if limits else None


def _satisfying(gate: Gate, n: int) -> str:
    if gate.verdict:
        return f"Verdict: {gate.verdict}\n\nround note {n}"
    if gate.fields:
        return f"{gate.fields[-1]}: step {n}"
    return f"written {n}"


class WorkflowMachine(RuleBasedStateMachine):
    workflow_name = "default"

    def __init__(self) -> None:
        super().__init__()
        env = _repo_for(self.workflow_name)
        self.store = env.store
        self.project = env.project
        self.engine = env.engine
        self.workflow = load_named(self.workflow_name)
        self.escalation = self.workflow.escalation
        self.round_limit = _round_limit(self.workflow)
        self.counter = 0
        self.task_id = ""
        self.current: Task | None = None
        self.checked = self._tip()  # earlier examples' commits were checked by them
        # task -> "<agent_run>@<status>" whose death was handled since the task last
        # changed status (a status change starts a new visit: the monitor looks again)
        self.death_handled: dict[str, str] = {}
        self.owed_escalation: str | None = None  # a crash reached stuck_after
        self.rounds_since_human: dict[str, int] = {}
        self.last_event: dict[str, str] = {}

    # Helpers ---------------------------------------------------------------------------
    def _tip(self) -> str | None:
        ref = self.store.pygit.references.get(layout.TASKS_REF)
        return None if ref is None else str(ref.target)

    def _refresh(self) -> Task:
        self.current = self.store.get(self.task_id)
        return self.current

    def _task(self) -> Task:
        assert self.current is not None
        return self.current

    def _commits_since(self, tip: str | None) -> list[pygit2.Commit]:
        """The commits after ``tip`` up to the ref's tip, oldest first."""
        head = self._tip()
        if head is None or head == tip:
            return []
        walker = self.store.pygit.walk(head)
        walker.simplify_first_parent()
        out: list[pygit2.Commit] = []
        for commit in walker:
            if str(commit.id) == tip:
                return out[::-1]
            out.append(commit)
        assert tip is None, "the tasks ref was rewritten"
        return out[::-1]

    def _events_since(self, tip: str | None) -> list[str]:
        return [parse_trailers(c.message).get("Orange-Event", "") for c in self._commits_since(tip)]

    def _stuck_after(self, status: str) -> int | None:
        """The crash count at which a death in ``status`` escalates (its counting rule)."""
        found = [r.stuck_after for r in self.workflow.rules_for(status) if r.stuck_after]
        return found[0] if found else None

    def _expected_refusal(self, task: Task, to: str) -> type[OrangeError] | None:
        """What `Engine.transition` must raise for ``task -> to`` (None: it must move)."""
        wf = self.workflow
        if wf.is_terminal(task.status) or to not in wf.states:
            return IllegalTransition
        candidates = wf.transitions_between(task.status, to)
        if not candidates:
            return IllegalTransition
        passing = [t for t in candidates if t.when is None or t.when.holds(task.fields)]
        if not passing:
            return GuardFailed
        assert len(passing) == 1, f"workflow {wf.name}: ambiguous {task.status} -> {to}"
        gate = passing[0].gate
        if gate is not None and not check_gate(gate, task.body, _baseline(task)).ok:
            return GateFailed
        return None

    def _passing(self, task: Task, to: str) -> Transition | None:
        candidates = self.workflow.transitions_between(task.status, to)
        passing = [t for t in candidates if t.when is None or t.when.holds(task.fields)]
        return passing[0] if len(passing) == 1 else None

    def _write(self, heading: str, content: str) -> None:
        edit_body(
            self.store,
            self.task_id,
            lambda task: set_section(task.body, heading, content),
            what=heading,
        )

    def _expect(
        self, action: Callable[[], object], refusal: type[OrangeError] | None, what: str
    ) -> list[str]:
        """Run ``action``; it must raise exactly ``refusal`` and leave the ref alone, or
        succeed when ``refusal`` is None.  Returns the events it committed."""
        before = self._tip()
        try:
            action()
        except OrangeError as exc:
            assert refusal is not None, f"{what}: refused with {exc!r}, expected to succeed"
            assert type(exc) is refusal, f"{what}: {exc!r}, expected {refusal.__name__}"
            assert self._tip() == before, f"{what}: refused, yet the ref moved"
            event(f"refused: {refusal.__name__}")
            return []
        assert refusal is None, f"{what}: succeeded, expected {refusal.__name__}"
        return self._events_since(before)

    # Rules -----------------------------------------------------------------------------
    @initialize(data=st.data())
    def create(self, data: st.DataObject) -> None:
        self._create(data)

    @precondition(lambda self: self.current is not None and self._ended(self.current))
    @rule(data=st.data())
    def next_task(self, data: st.DataObject) -> None:
        """The task is done or cancelled: go on with a new one."""
        self._create(data)

    def _create(self, data: st.DataObject) -> None:
        initial = list(self.workflow.initial_statuses)
        status = data.draw(st.sampled_from(initial[:1] * 3 + initial), label="initial")
        task = create_task(self.store, self.project, self.workflow, summary="s", status=status)
        self.task_id = task.id
        self._refresh()

    @precondition(lambda self: self.current is not None and not self._ended(self.current))
    @rule(kind=st.sampled_from(sorted(SECTIONS)))
    def write_section(self, kind: str) -> None:
        self.counter += 1
        heading, content = SECTIONS[kind]
        self._write(heading, content.format(n=self.counter))
        self._refresh()

    @precondition(lambda self: self.current is not None and not self._ended(self.current))
    @rule(data=st.data())
    def move(self, data: st.DataObject) -> None:
        """``task update --status``.  Mostly an agent's or a human's next step: a legal
        target, with what its gate asks written first (this carries runs into review
        rounds, ``stuck`` and ``done``); sometimes a legal target with whatever the body
        holds; sometimes any status the workflow names, or one it does not know."""
        task = self._task()
        legal = self.workflow.targets_from(task.status)
        pick = data.draw(st.integers(0, 9), label="pick")
        if pick >= 8 or not legal:
            targets = [*self.workflow.states, "no-such-status"]
            self._move(data.draw(st.sampled_from(targets), label="to"))
            return
        to = data.draw(st.sampled_from(self._weighted(task, legal)), label="to")
        transition = self._passing(task, to)
        if pick < 7 and transition is not None and transition.gate is not None:
            self.counter += 1
            self._write(transition.gate.section, _satisfying(transition.gate, self.counter))
        self._move(to)

    def _weighted(self, task: Task, targets: list[str]) -> list[str]:
        """Targets repeated by how far they carry a run: the work (a gated or spawning
        move) four times, other moves twice, cancelling once."""
        out: list[str] = []
        for to in targets:
            moves = self.workflow.transitions_between(task.status, to)
            if to == "cancelled":
                out.append(to)
            elif any(t.gate is not None or _spawns(t.hooks) for t in moves):
                out += [to] * 4
            else:
                out += [to] * 2
        return out

    def _move(self, to: str) -> None:
        task = self._refresh()
        refusal = self._expected_refusal(task, to)
        events = self._expect(
            lambda: self.engine.transition(self.task_id, to), refusal, f"{task.status} -> {to}"
        )
        after = self._refresh()
        if refusal is None:
            assert events in (["status.changed"], ["status.changed", "hook.failed"]), events
            assert after.status == to
        else:
            assert after.status == task.status

    def _spawning(self, status: str) -> list[Transition]:
        return [t for t in self.workflow.transitions if t.from_ == status and _spawns(t.hooks)]

    def _spawn_is_specified(self) -> bool:
        """`Engine.spawn` starts a task that has no agent yet: out of an initial status,
        or a task created in a state with entry actions.  With an agent running, today's
        engine takes any move that spawns (``working -> agent-review``!), which is not
        what it documents: not exercised here."""
        task = self.current
        if task is None or task.str_field("tmux_session"):
            return False
        if self._ended(task):
            return True
        return task.status in self.workflow.initial_statuses or not self._spawning(task.status)

    @precondition(_spawn_is_specified)
    @rule()
    def spawn(self) -> None:
        task = self._task()
        wf = self.workflow
        spawning = self._spawning(task.status)
        state = wf.states[task.status]
        if wf.is_terminal(task.status):
            refusal: type[OrangeError] | None = InvalidInput
        elif spawning:
            refusal = self._expected_refusal(task, spawning[0].to)
        elif state.on_enter and not task.str_field("workspace"):
            refusal = None
        else:
            refusal = InvalidInput
        events = self._expect(lambda: self.engine.spawn(self.task_id), refusal, "spawn")
        after = self._refresh()
        if refusal is None:
            expected = "status.changed" if spawning else "agent.spawned"
            assert events[:1] == [expected], events
            assert after.str_field("tmux_session"), "spawned, yet no session recorded"
            if spawning:
                assert after.status == spawning[0].to
            event(f"spawned in {task.status}")
        else:
            assert after.status == task.status

    def _ended(self, task: Task) -> bool:
        return self.workflow.is_terminal(task.status)

    def _started(self) -> bool:
        """An active task that a human holds or whose agent was started."""
        task = self.current
        return (
            task is not None
            and not self.workflow.is_terminal(task.status)
            and (self.workflow.waits_for_human(task.status) or bool(task.str_field("tmux_session")))
        )

    def _agent_watched(self) -> bool:
        """An active task with an agent session, in a state the monitor has rules for."""
        task = self.current
        return (
            task is not None
            and not self.workflow.is_terminal(task.status)
            and bool(task.str_field("tmux_session"))
            and bool(self.workflow.rules_for(task.status))
        )

    @precondition(_started)
    @rule(message=st.sampled_from(["", "Please add a test"]))
    def request_changes(self, message: str) -> None:
        task = self._task()
        target = self.workflow.request_changes_target(task.status)
        refusal = self._expected_refusal(task, target) if target is not None else IllegalTransition
        events = self._expect(
            lambda: requests.request_changes(self.engine, self.task_id, message),
            refusal,
            "request-changes",
        )
        after = self._refresh()
        if refusal is None:
            assert events in (["status.changed"], ["status.changed", "hook.failed"]), events
            assert after.status == target
            if message:
                assert message in (section(after.body, "## Feedback") or "")

    @precondition(_started)
    @rule()
    def respawn(self) -> None:
        """``orange task respawn``: restart the agent of a state that has a respawn
        prompt, in the task's workspace (nothing checks liveness here: no probe)."""
        task = self._task()
        state = self.workflow.states[task.status]
        ok = bool(state.respawn_prompt) and bool(task.str_field("workspace"))
        refusal = None if ok else InvalidInput
        events = self._expect(lambda: self.engine.respawn(self.task_id), refusal, "respawn")
        after = self._refresh()
        assert after.status == task.status
        if ok:
            assert events in (["agent.respawned"], ["agent.respawned", "hook.failed"]), events
            assert after.str_field("agent_run") != task.str_field("agent_run"), "same run"
            event(f"respawned in {task.status}")

    @precondition(_agent_watched)
    @rule()
    def agent_dies(self) -> None:
        """The monitor finds the agent of a watched state dead.  A death is handled once
        per agent run and visit of a status (a worker dead in ``planning`` whose plan
        moved the task on is found dead again in ``working``); the same death found
        again in the same visit changes nothing."""
        task = self._task()
        run = f"{task.str_field('agent_run')}@{task.status}"
        before = self._tip()
        result = handle_dead_session(self.engine, self.task_id)
        events = self._events_since(before)
        if self.death_handled.get(task.id) == run:
            assert events == [], f"the death of run {run} was handled twice: {events}"
            return
        self.death_handled[task.id] = run
        allowed = (
            ["status.changed"],  # a fresh artifact: the rule's move
            ["agent.crashed"],  # counted, below the threshold
            ["agent.crashed", "agent.respawned"],
            ["agent.crashed", "status.changed"],  # counted, threshold reached: escalated
            ["agent.dead"],
            ["agent.dead", "agent.respawned"],
        )
        trimmed = [e for e in events if e != "hook.failed"]
        assert trimmed in allowed, f"death in {task.status}: {events} ({result})"
        event(f"death in {task.status}: {' + '.join(trimmed)}")
        self._refresh()

    # The oracle ------------------------------------------------------------------------
    @invariant()
    def every_commit_is_a_legal_step(self) -> None:
        commits = self._commits_since(self.checked)
        for commit in commits:
            self._check_commit(commit)
            self.checked = str(commit.id)
        assert self.owed_escalation is None, (
            f"crash count reached stuck_after in {self.owed_escalation}, but no escalation"
        )

    def _check_commit(self, commit: pygit2.Commit) -> None:
        trailers = parse_trailers(commit.message)
        ev = trailers.get("Orange-Event", "")
        task_id = trailers.get("Orange-Task", "")
        path = layout.task_path(task_id)
        new = _task_at(commit, path)
        old = _task_at(commit.parents[0], path) if commit.parents else None
        previous = self.last_event.get(task_id)
        self.last_event[task_id] = ev
        if self.owed_escalation is not None:
            assert ev == "status.changed" and trailers.get("Orange-Escalation") == "yes", (
                f"after the crash that reached stuck_after came {ev}, not the escalation"
            )
        if new is None:  # task.deleted: not something these rules do
            raise AssertionError(f"task {task_id} vanished in {ev}")
        if old is None:
            assert ev == "task.created", ev
            assert new.status in self.workflow.initial_statuses
            assert new.int_field("crash_count") == 0
            self.rounds_since_human[task_id] = 0
            return
        assert old.status in self.workflow.states and new.status in self.workflow.states
        if ev == "status.changed":
            self._check_move(old, new, trailers, previous)
            return
        assert new.status == old.status, f"{ev} changed the status {old.status} -> {new.status}"
        if ev == "agent.crashed":
            limit = self._stuck_after(old.status)
            assert limit is not None, f"a crash counted in {old.status}, which counts none"
            count = new.int_field("crash_count")
            assert count == old.int_field("crash_count") + 1, (old.fields, new.fields)
            assert count <= limit, f"crash {count} in {old.status}, past stuck_after {limit}"
            if count == limit:
                self.owed_escalation = old.status
        else:
            assert new.int_field("crash_count") == old.int_field("crash_count"), ev
        counted = set()
        if ev == "agent.spawned":  # a state's entry actions (a task created in it)
            counted = _increments(self.workflow.states[old.status].on_enter)
        self._check_round(old, new, counted)

    def _check_move(
        self, old: Task, new: Task, trailers: dict[str, str], previous: str | None
    ) -> None:
        wf = self.workflow
        assert old.status != new.status
        assert (trailers.get("Orange-From"), trailers.get("Orange-To")) == (old.status, new.status)
        assert not wf.is_terminal(old.status), f"a {old.status} task moved"
        if trailers.get("Orange-Escalation") == "yes":
            assert self.escalation is not None and new.status == self.escalation.to, (
                f"escalation to {new.status}"
            )
            assert previous == "agent.crashed", f"escalation after {previous}, not a crash"
            limit = self._stuck_after(old.status)
            assert limit is not None and old.int_field("crash_count") == limit, (
                f"escalated from {old.status} at crash {old.int_field('crash_count')}, "
                f"stuck_after is {limit}"
            )
            self.owed_escalation = None
            hooks = self.escalation.hooks
            event(f"escalation: {old.status} -> {new.status}")
        else:
            assert "Orange-Escalation" not in trailers
            candidates = wf.transitions_between(old.status, new.status)
            assert candidates, f"{old.status} -> {new.status} is not in the table"
            passing = [t for t in candidates if t.when is None or t.when.holds(old.fields)]
            assert len(passing) == 1, (
                f"{old.status} -> {new.status} with {ROUND}={old.int_field(ROUND)}: "
                f"{len(passing)} transitions' when hold"
            )
            move = passing[0]
            if move.gate is not None:
                result = check_gate(move.gate, old.body, _baseline(old))
                assert result.ok, f"{old.status} -> {new.status}: {result.message}"
            hooks = move.hooks
        assert new.int_field("crash_count") == 0, "crash_count not reset by a status change"
        self.death_handled.pop(new.id, None)
        baseline = fingerprints(new.body, wf.gated_sections(new.status))
        assert _baseline(new) == baseline, f"stale gate baseline entering {new.status}"
        resets = any(h.action == "reset" and h.get("field") == ROUND for h in hooks)
        self._check_round(old, new, _increments(hooks), resets=resets)
        if wf.waits_for_human(new.status):
            self.rounds_since_human[new.id] = 0
        event(f"reached {new.status}")

    def _check_round(
        self, old: Task, new: Task, counted: set[str], *, resets: bool = False
    ) -> None:
        """``review_round`` moves only with an action that counts it, by one, or back to
        0 with a ``reset`` (a human's request for changes), and agents alone never run
        more rounds than the ``when`` guards allow."""
        if resets:
            assert new.int_field(ROUND) == 0, f"{ROUND} not reset ({old.status} -> {new.status})"
            return
        step = 1 if ROUND in counted else 0
        assert new.int_field(ROUND) == old.int_field(ROUND) + step, (
            f"{ROUND} {old.int_field(ROUND)} -> {new.int_field(ROUND)} ({old.status} -> "
            f"{new.status})"
        )
        if step:
            rounds = self.rounds_since_human.get(new.id, 0) + 1
            self.rounds_since_human[new.id] = rounds
            if self.round_limit is not None:
                assert rounds <= self.round_limit, (
                    f"{rounds} review rounds without a human; the guards allow {self.round_limit}"
                )
            event(f"review round {new.int_field(ROUND)}")


def _spawns(hooks: Sequence[HookSpec]) -> bool:
    return any(spec.action in ("spawn_agent", "spawn_reviewer") for spec in hooks)


def _task_at(commit: pygit2.Commit, path: str) -> Task | None:
    try:
        blob = commit.tree[path]
    except KeyError:
        return None
    return Task.parse(blob.read_raw().decode(), where=path)


def _baseline(task: Task) -> dict[str, str]:
    raw = task.fields.get(BASELINE_FIELD)
    return {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}


SETTINGS = settings(
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
# Hypothesis explores stopping right after the first step as an unexplored branch, so
# without a floor a third of a short run's examples are one step long.  A floor keeps
# every example deep enough to leave the first states (and failures shrink to it).
MIN_STEPS = 15


class MinimalMachine(WorkflowMachine):
    workflow_name = "minimal"


class FreshWorkerMachine(WorkflowMachine):
    workflow_name = "fresh-worker"


class SelfReviewMachine(WorkflowMachine):
    workflow_name = "self-review"


def _runs(machine: type[WorkflowMachine]) -> type[unittest.TestCase]:
    """Hypothesis's ``machine.TestCase`` with the step floor."""

    class Runs(machine.TestCase):  # type: ignore[name-defined,misc]
        settings = SETTINGS

        def runTest(self) -> None:
            run_state_machine_as_test(machine, settings=self.settings, _min_steps=MIN_STEPS)

        runTest.is_hypothesis_test = True  # type: ignore[attr-defined]  # as Hypothesis's own

    return Runs


TestDefaultWorkflow = _runs(WorkflowMachine)
TestMinimalWorkflow = _runs(MinimalMachine)
TestFreshWorkerWorkflow = _runs(FreshWorkerMachine)
TestSelfReviewWorkflow = _runs(SelfReviewMachine)
