"""One run's record, its progress events and its agents: what every step of a run
uses — the runner's own steps (`orange.run.runner`), the waves
(`orange.run.waves`) and the subtasks (`orange.run.subtasks`) — kept below all three
so none of them imports another's caller."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from orange.engine.engine import Engine
from orange.engine.ledger import (
    BUDGET,
    Usage,
    parse_money,
    usage_messages,
    usage_trailers,
    with_usage,
)
from orange.errors import OrangeError
from orange.projects import Project
from orange.run import headless, spending, state
from orange.run.ask import Asker
from orange.run.contracts import Plan
from orange.run.headless import ExecHarness, Invocation
from orange.run.progress import Event, Progress
from orange.run.prompts import plan_from_json
from orange.run.spending import Spent, spent_by
from orange.runtime.workspace import RUN_WORKTREE
from orange.store.runfile import RunFile
from orange.store.store import now_iso

T = TypeVar("T")
ARCHITECT = "architect"  # the run's own agent (``who`` of its invocations)


class RunFailed(OrangeError):
    """A step failed: the run is marked failed, resumable at that step."""


class RunCancelled(OrangeError):
    """The run was cancelled (`orange run cancel`) while it ran."""


class BudgetSpent(RunFailed):
    """What the run's agents cost passed its budget: no agent starts; the run is
    failed at its step, and resumed once the budget is raised."""


class Settings(NamedTuple):
    """How this runner runs (from the command line and config.yml; not from the ref)."""

    architect: ExecHarness
    swe: ExecHarness
    timeout: float  # seconds per agent invocation


class RunRecord:
    """One run of one project: its record on the tasks ref, its events, its agents;
    ``engine`` is the runner's own."""

    def __init__(
        self,
        engine: Engine,
        run_id: str,
        *,
        settings: Settings,
        asker: Asker,
        progress: Progress,
        make_engine: Callable[[], Engine],
    ) -> None:
        assert engine.project is not None
        self.engine = engine
        self.store = engine.store
        self.project: Project = engine.project
        self.run_id = run_id
        self.settings = settings
        self.asker = asker
        self.progress = progress
        self.make_engine = make_engine  # one engine per wave thread
        self.worktree = state.local_dir(self.store, run_id) / RUN_WORKTREE

    # -- the record ------------------------------------------------------------------
    def record(self) -> RunFile:
        return state.get(self.store, self.run_id)

    def update(
        self,
        subject: str,
        change: Callable[[RunFile], None],
        trailers: Callable[[], tuple[tuple[str, str], ...]] | None = None,
    ) -> RunFile:
        return state.update(self.store, self.run_id, subject, change, trailers)

    def step(self, step: str, subject: str = "", **fields: Any) -> RunFile:
        def change(run: RunFile) -> None:
            run.fields.update(step=step, **fields)

        self.event("step", step, "done", subject)
        return self.update(subject or step.lower().replace("_", " "), change)

    def event(
        self, kind: str, step: str, status: str, message: str = "", sub: str | None = None
    ) -> None:
        self.progress.event(Event(kind, self.run_id, step, sub, status, message))

    def check_cancelled(self) -> None:
        if self.record().fields.get("status") == "cancelled":
            raise RunCancelled(f"run {self.run_id} was cancelled")

    def requirement(self, run: RunFile) -> str:
        return run.text("Requirement") or run.text("Request")

    def the_plan(self) -> Plan:
        return plan_from_json(self.record().json_section("Plan"))

    def ask(
        self,
        harness: ExecHarness,
        prompt: str,
        parse: Callable[[str], T],
        *,
        who: str,
        cwd: Path,
        env: dict[str, str] | None = None,
    ) -> T:
        """One agent's answer (``who``: the architect, a subtask's id, or that id and
        ``.review``), each invocation's usage recorded; none starts past the budget."""
        self.check_budget()
        log = state.log_dir(self.run_id) / f"{who}.log"

        def spent(run: Invocation) -> None:
            self.record_usage(who, spending.usage_of(harness, run, cwd))

        try:
            return headless.ask(
                harness,
                prompt,
                parse,
                cwd=cwd,
                timeout=self.settings.timeout,
                log=log,
                env=env,
                on_start=lambda pid: state.record_agent(self.store, self.run_id, who, pid),
                spent=spent,
            )
        finally:
            state.forget_agent(self.store, self.run_id, who)

    # -- the ledger --------------------------------------------------------------------
    def record_usage(self, who: str, usage: Usage) -> None:
        """Commit what one invocation used: a subtask's agents' (its SWE's and its
        review's) on the subtask's task, the architect's on the run's record."""
        if who == ARCHITECT:
            said = self._record_on_run(usage)
        else:
            task_id = state.own_task(self.store, self.run_id, who.partition(".")[0])
            said = self.engine.record_usage(task_id, usage)[1]
        for message in said:
            self.event("note", str(self.record().fields.get("step", "")), "warning", message)

    def _record_on_run(self, usage: Usage) -> tuple[str, ...]:
        fields = self.record().fields
        if not usage.worth_recording(fields):
            return ()

        def change(run: RunFile) -> None:
            run.fields.update(with_usage(run.fields, usage, now_iso()))

        self.update("usage recorded", change, lambda: usage_trailers(usage))
        return usage_messages(usage, fields)

    def cost(self) -> Spent:
        """What the run cost so far: its architect's record and the tasks this host
        created for its subtasks (never a task the shared record names)."""
        run = self.record()
        tasks = [self.store.get(t) for t in state.recorded_tasks(self.store, self.run_id).values()]
        return spent_by(run, tasks)

    def check_budget(self) -> None:
        """`BudgetSpent` when the run's cost passed its budget."""
        run = self.record()
        budget = parse_money(run.fields.get(BUDGET)) if run.fields.get(BUDGET) else None
        if budget is None:
            return
        cost = self.cost().cost
        if cost > budget:
            raise BudgetSpent(f"budget of ${budget:.2f} spent (${cost:.2f})")
