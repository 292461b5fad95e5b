"""What the `orange run` commands do: start a run, resume one, cancel one, describe one.

Defaults come from the command line, else ``run:`` in ``$ORANGE_HOME/config.yml``, else
seed 004's (2 agents, 10 clarification rounds, policy ``retry``, 3 iterations, a 30
minute timeout per agent invocation)::

    run:
      architect: claude
      swe: claude
      agents: 3
      failure_policy: continue
      max_iterations: 4
      max_clarification_rounds: 5
      agent_timeout: 1800     # seconds
"""

from __future__ import annotations

import os
import shutil
import signal
import time
from collections.abc import Callable
from typing import Any, NamedTuple

from orange.compose import build_engine
from orange.engine.engine import Engine
from orange.engine.ledger import BUDGET, budget_text
from orange.errors import InvalidInput, OrangeError
from orange.home import host_name, load_config
from orange.projects import Project
from orange.run import headless, state
from orange.run.ask import Asker
from orange.run.progress import Progress
from orange.run.record import Settings
from orange.run.runner import Runner, run_branch
from orange.runtime.workspace import check_base
from orange.store import layout
from orange.store.branches import check_branch_name
from orange.store.runfile import RunFile

POLICIES = ("retry", "continue", "stop")
DEFAULTS: dict[str, Any] = {
    "architect": "claude",
    "swe": "claude",
    "agents": 2,
    "failure_policy": "retry",
    "max_iterations": 3,
    "max_clarification_rounds": 10,
    "agent_timeout": 1800,
}
MAX_REQUEST = 100 * 1024  # bytes: the request goes into every prompt (one argv element)


class Options(NamedTuple):
    """`orange run`'s options; None takes config.yml's value, else the default."""

    agents: int | None = None
    architect: str | None = None
    swe: str | None = None
    skip_clarification: bool = False
    max_clarification_rounds: int | None = None
    failure_policy: str | None = None
    max_iterations: int | None = None
    no_pr: bool = False
    base: str | None = None
    budget: str | None = None  # dollars the whole run may cost (`orange run --budget`)


def config() -> dict[str, Any]:
    """``run:`` of config.yml over the defaults, each value checked."""
    given = load_config().get("run") or {}
    if not isinstance(given, dict):
        raise InvalidInput("config.yml: run: must be a mapping", hint="see `orange run --help`")
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise InvalidInput(
            f"config.yml: run: unknown key {unknown[0]!r}", hint=f"use {', '.join(DEFAULTS)}"
        )
    merged = {**DEFAULTS, **given}
    for key in ("agents", "max_iterations", "max_clarification_rounds", "agent_timeout"):
        merged[key] = _positive(f"config.yml: run: {key}", merged[key])
    return merged


def _positive(what: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"{what} must be a whole number of at least 1, not {value!r}")
    return value


def _check_runnable(role: str, name: str) -> None:
    """The harness exists here, has a non-interactive form, and its program is on PATH."""
    program = headless.exec_harness(name).argv[0]
    if shutil.which(program) is None:
        raise InvalidInput(
            f"the {role}'s harness {name!r} runs `{program}`, which is not on PATH",
            hint=f"install it, or choose another with --{role} (or run: {role}: in config.yml)",
        )


def settings_for(run: RunFile) -> Settings:
    """The harnesses the run names, as this host defines them (a name from the ref only
    picks among this host's harnesses; their command lines come from here)."""
    architect = headless.exec_harness(str(run.fields.get("architect") or "claude"))
    swe = headless.exec_harness(str(run.fields.get("swe") or "claude"))
    return Settings(architect, swe, float(config()["agent_timeout"]))


def start(engine: Engine, request: str, options: Options) -> RunFile:
    """Check everything, then record a new run (step QUEUED); nothing runs yet."""
    project = _project_of(engine)
    request = request.strip()
    if not request:
        raise InvalidInput("the request is empty", hint="say what to build: orange run 'add X'")
    if len(request.encode("utf-8", "surrogatepass")) > MAX_REQUEST:
        raise InvalidInput(f"the request is over {MAX_REQUEST // 1024} KB", hint="shorten it")
    conf = config()
    policy = options.failure_policy or str(conf["failure_policy"])
    if policy not in POLICIES:
        raise InvalidInput(f"unknown failure policy {policy!r}", hint=f"use {', '.join(POLICIES)}")
    given = {
        "agents": options.agents,
        "max_iterations": options.max_iterations,
        "max_clarification_rounds": options.max_clarification_rounds,
    }  # 0 is refused below, not taken for "not given"
    values = {key: conf[key] if value is None else value for key, value in given.items()}
    for key, value in values.items():
        _positive(f"--{key.replace('_', '-')}", value)
    architect = options.architect or str(conf["architect"])
    swe = options.swe or str(conf["swe"])
    for role, name in (("architect", architect), ("swe", swe)):
        _check_runnable(role, name)  # refused before anything is written
    base = options.base or project.default_branch
    check_base(project, base, [])
    budget = budget_text(options.budget) if options.budget is not None else None
    run_id = layout.new_task_id()
    fields: dict[str, Any] = {
        "id": run_id,
        "project": project.name,
        "host": host_name(),
        "status": "running",
        "step": "QUEUED",
        "branch": run_branch(request, run_id),
        "base": base,
        "agents": min(values["agents"], project.pool_size),
        "architect": architect,
        "swe": swe,
        "policy": policy,
        "max_iterations": values["max_iterations"],
        "max_clarification_rounds": values["max_clarification_rounds"],
        "skip_clarification": options.skip_clarification,
        "no_pr": options.no_pr,
        BUDGET: budget,
        "group": 0,
        "answers_used": 0,
        "subtasks": [],
    }
    return state.create(engine.store, fields, request)


def set_budget(engine: Engine, prefix: str, budget: str) -> RunFile:
    """Give the run a new budget (a person's: `orange run resume ID --budget 20`)."""
    amount = budget_text(budget)
    run = state.get(engine.store, prefix)
    return state.update(
        engine.store, run.id, f"budget ${amount}", lambda r: r.fields.update({BUDGET: amount})
    )


def drive(
    project: Project,
    run_id: str,
    *,
    asker: Asker,
    progress: Progress,
) -> RunFile:
    """Run ``run_id`` from where its record stands, holding this host's lock on it."""
    engine = build_engine(project, actor="cli")
    store = engine.store
    run = state.get(store, run_id)
    _check_resumable(run)
    foreign = state.foreign_subtask(store, run)
    if foreign is not None:  # the record is shared data: it never picks this host's tasks
        raise InvalidInput(foreign, hint="this host resumes only the tasks it created for a run")
    with state.runner_lock(store, run.id) as held:
        if not held:
            raise InvalidInput(
                f"run {run.id} is being run or resumed elsewhere on this host",
                hint=f"watch it with `orange run show {run.id}`",
            )
        (state.local_dir(store, run.id) / "runner.pid").write_text(f"{os.getpid()}\n")
        stop_leftover_agents(engine, run.id)
        runner = Runner(
            engine,
            run.id,
            settings=settings_for(run),
            asker=asker,
            progress=progress,
            make_engine=lambda: build_engine(project, actor="cli"),
        )
        with _terminated_as_interrupt():
            return runner.go()


def _check_resumable(run: RunFile) -> None:
    """A run this host may drive: not ended, its own, and every name it would hand to
    git a valid branch name (the record is shared data: a teammate's push may have
    changed it)."""
    names = [run.fields.get("branch"), run.fields.get("base")]
    names += [entry.get("branch") for entry in run.subtasks()]
    for name in names:
        try:
            check_branch_name(str(name or ""))
        except InvalidInput as exc:
            raise InvalidInput(f"run {run.id} names a bad branch: {exc.message}") from None
    status = run.fields.get("status")
    if status in state.ENDED:
        raise InvalidInput(f"run {run.id} is {status}; nothing to resume")
    if run.fields.get("host") != host_name():
        raise InvalidInput(
            f"run {run.id} belongs to host {run.fields.get('host')}; it is resumed there",
            hint="its branches are on that host (and on the remote once pushed)",
        )


def stop_leftover_agents(engine: Engine, run_id: str) -> list[str]:
    """Stop what agents of the run a killed runner left running (recorded on this host
    when started; never a pid from the ref).  Their subtasks restart their iteration."""
    stopped = []
    for who, pid in state.recorded_agents(engine.store, run_id).items():
        if headless.stop_group(pid):
            stopped.append(who)
        state.forget_agent(engine.store, run_id, who)
    return stopped


def cancel(engine: Engine, prefix: str) -> tuple[RunFile, list[str]]:
    """Mark the run cancelled, stop its runner and agents on this host, and cancel its
    open subtasks (their worktrees released, unsaved work kept as snapshots; every
    branch stays).  Returns the record and what was said along the way."""
    store = engine.store
    run = state.get(store, prefix)
    if run.fields.get("status") in state.ENDED:
        raise InvalidInput(f"run {run.id} is {run.fields.get('status')}; nothing to cancel")
    run = state.update(store, run.id, "cancelled", lambda r: r.fields.update(status="cancelled"))
    said = [f"stopped agent {who}" for who in stop_leftover_agents(engine, run.id)]
    if state.is_running_here(store, run.id):
        said += _stop_runner(engine, run.id)
    run = state.get(store, run.id)  # as the runner left it
    open_ones = [e for e in run.subtasks() if e.get("status") not in ("done", "failed")]
    own = state.recorded_tasks(store, run.id)  # never a task id from the shared record
    for entry in open_ones:
        task_id = entry.get("task")
        if not task_id:
            continue
        if own.get(str(entry["id"])) != str(task_id):
            said.append(
                f"subtask {entry['id']}: task {task_id} is not one this host created for "
                f"run {run.id}; left alone"
            )
            continue
        try:
            task = store.get(str(task_id))
            if engine.has_transition(task, "cancelled"):
                engine.transition(task.id, "cancelled", options={"force": True})
                said.append(f"cancelled subtask {entry['id']} (task {task.id})")
        except OrangeError as exc:
            said.append(f"subtask {entry['id']}: {exc}")

    def cancelled(record: RunFile) -> None:
        for entry in open_ones:
            state.set_subtask(record, str(entry["id"]), status="cancelled")

    return state.update(store, run.id, "open subtasks cancelled", cancelled), said


def _stop_runner(engine: Engine, run_id: str, wait: float = 15.0) -> list[str]:
    pid_file = state.local_dir(engine.store, run_id) / "runner.pid"
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return ["the runner's process is unknown; it stops at its next step"]
    if pid != os.getpid():
        try:
            os.kill(pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
    deadline = time.monotonic() + wait
    while state.is_running_here(engine.store, run_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    stop_leftover_agents(engine, run_id)  # any it started meanwhile
    return [f"stopped the runner (pid {pid})"]


class _terminated_as_interrupt:
    """SIGTERM (`orange run cancel`) ends the runner as Ctrl-C would, so its agents'
    groups are stopped on the way out and its lock released."""

    def __enter__(self) -> None:
        self._old: Callable[..., Any] | int | None = signal.getsignal(signal.SIGTERM)
        signal.signal(signal.SIGTERM, _raise_interrupt)

    def __exit__(self, *exc: object) -> None:
        signal.signal(signal.SIGTERM, self._old or signal.SIG_DFL)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def _project_of(engine: Engine) -> Project:
    if engine.project is None:
        raise InvalidInput("a run belongs to a registered project", hint="pass --project NAME")
    return engine.project
