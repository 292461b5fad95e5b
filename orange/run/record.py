"""One run's record, its progress events and its agents: what every step of a run
uses — the runner's own steps (`orange.run.runner`), the waves
(`orange.run.waves`) and the subtasks (`orange.run.subtasks`) — kept below all three
so none of them imports another's caller."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from orange.engine.engine import Engine
from orange.errors import OrangeError
from orange.projects import Project
from orange.run import headless, state
from orange.run.ask import Asker
from orange.run.contracts import Plan
from orange.run.headless import ExecHarness
from orange.run.progress import Event, Progress
from orange.run.prompts import plan_from_json
from orange.runtime.workspace import RUN_WORKTREE
from orange.store.runfile import RunFile

T = TypeVar("T")


class RunFailed(OrangeError):
    """A step failed: the run is marked failed, resumable at that step."""


class RunCancelled(OrangeError):
    """The run was cancelled (`orange run cancel`) while it ran."""


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

    def update(self, subject: str, change: Callable[[RunFile], None]) -> RunFile:
        return state.update(self.store, self.run_id, subject, change)

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
        log = state.log_dir(self.run_id) / f"{who}.log"
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
            )
        finally:
            state.forget_agent(self.store, self.run_id, who)
