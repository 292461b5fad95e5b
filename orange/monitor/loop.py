"""The monitor: notice dead agents and apply the workflow's exit rules (DESIGN §6).

One pass compares agent liveness with active tasks for every registered project on this
host: one tmux call lists every pane, one snapshot per project lists the tasks (from
the blob-keyed cache, no git processes).  The agent of a state is the reviewer window
in states whose agent is the reviewer, the worker window otherwise; it is dead when
its session is gone or its pane is dead (the exit status is kept by remain-on-exit).
Dead agents go to `Engine.handle_dead_session`, which takes the agent's TASK.md working
copy in first and is idempotent, so racing a CLI call or another monitor is harmless.

Dead agents come first, in every project, on every pass; then each project's new task
commits are verified (`orange.engine.forgery`) and synced, at most `VERIFY_SLICE`
commits a project a pass: a catch-up of thousands of commits (a fetch, a sync) is done
over the next passes, one tick apart, and never makes a death wait.  The status file
says how far behind verification is (`orange monitor status`).

Reaction is immediate where tmux can tell us (``pane-died`` / ``session-closed`` hooks
run ``orange monitor --once``) and a ref moved by git wakes the loop; the poll is the
safety net.  One monitor loop runs per host (a flock); it exits when this host has no
active tasks left.

Only what this host bound is watched (DESIGN §8): a task counts when this host's local
record names its tmux session and the ref agrees (`orange.runtime.bindings`).  A task that
arrived in the ref naming this host, a session and a worktree is never judged here, so
no hook of it runs and no session of that name is touched.  An installation from before
the records has its running tasks adopted once, at its first pass (`orange.runtime.adopt`).
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from orange import compose, projects
from orange.compose import build_engine
from orange.engine import orphans
from orange.engine.definitions import Definitions
from orange.engine.engine import Engine
from orange.engine.forgery import verify_new
from orange.engine.monitoring import BUSY, handle_dead_session
from orange.engine.trust import trusted_here
from orange.errors import InvalidInput, NotFound, OrangeError
from orange.home import orange_home
from orange.hosts.watch import watch as watch_hosts
from orange.monitor import agentscreens, budget
from orange.runtime.adopt import ensure_adopted
from orange.runtime.bindings import session_of
from orange.runtime.conflicts import predicted
from orange.runtime.places import agent_window
from orange.runtime.tmux import PaneInfo, Tmux
from orange.runtime.watcher import lock_path, read_status, stopped_at, write_status
from orange.store import listing
from orange.store.lock import attempt
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task
from orange.sync.auto import auto_sync

DEFAULT_POLL = 30
TICK = 1.0
VERIFY_SLICE = 200  # commits verified per project per pass (~0.2 s at 50,000 tasks)


def log(line: str) -> None:
    logs = orange_home() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    with open(logs / "monitor.log", "a") as handle:
        handle.write(f"{now_iso()} [{os.getpid()}] {line}\n")


@dataclass
class PassReport:
    checked: int = 0
    dead: int = 0
    actions: list[str] = field(default_factory=list)
    active: int = 0
    poll: float = DEFAULT_POLL
    watch: set[tuple[str, str]] = field(default_factory=set)  # live agent windows
    busy: bool = False  # a dead agent's task was being moved: look again in a tick
    unverified: dict[str, int] = field(default_factory=dict)  # project → commits left
    # Watched agent windows → the (pane, output stamp) last read for a waiting screen,
    # and the windows that showed one (`orange.monitor.agentscreens`).
    looked: dict[tuple[str, str], tuple[str, int]] = field(default_factory=dict)
    marked: set[tuple[str, str]] = field(default_factory=set)
    stopped: bool = False  # the monitor is stopped: dead agents were only noted


def run_pass(task_filter: str | None = None) -> PassReport:
    """One pass over every registered project on this host."""
    report = PassReport()
    stores = _open_stores(task_filter)
    tmux = compose.tmux()
    panes = {(p.session, p.window): p for p in tmux.panes()}
    polls: list[int] = []
    for project, store in stores:  # dead agents first, in every project
        _handle_project(project, store, panes, tmux, task_filter, report, polls)
    for project, store in stores:  # then new commits, a slice a project
        left = verify_forgeries(project.name, store)
        if project.sync_interval:
            polls.append(max(1, int(auto_sync(project, store, log, tmux=compose.tmux))))
            left = verify_forgeries(project.name, store)  # what a sync brought in
        if left:
            report.unverified[project.name] = left
        else:  # all verified: a cancel that arrived by any path leaves no task waiting
            _flag_orphans(project, store)
        # The conflict scan (git only for pairs with a moved tip), so that listings and
        # the dashboard read its answers from the cache.
        predicted(store, store.snapshot(), project)
    polls.append(max(1, int(watch_hosts(log))))  # hosts holding tasks: still answering?
    busy = report.busy or bool(report.unverified)
    report.poll = TICK if busy else min(polls, default=DEFAULT_POLL)
    return report


def _open_stores(task_filter: str | None) -> list[tuple[projects.Project, TaskStore]]:
    """Each registered project whose repository opens, with its store; a ``--task``
    that names no task of any of them is refused (`_check_filter`)."""
    stores: list[tuple[projects.Project, TaskStore]] = []
    for project in projects.load_all():
        try:
            stores.append((project, TaskStore(project.repo())))
        except OrangeError:
            continue
    if task_filter:
        _check_filter(task_filter, [store for _project, store in stores])
    return stores


def _check_filter(task_filter: str, stores: list[TaskStore]) -> None:
    """Refuse a ``--task`` that names no task of any registered project (a typo would
    pass as a task with nothing to do); a prefix of several tasks is a filter of them."""
    for store in stores:
        try:
            store.resolve(task_filter)
        except NotFound:
            continue
        except InvalidInput:  # a prefix of several: each is watched
            return
        return
    raise NotFound(
        f"no task {task_filter!r} in any registered project",
        hint="see `orange task list --all-projects --all`",
    )


def _handle_project(
    project: projects.Project,
    store: TaskStore,
    panes: Mapping[tuple[str, str], PaneInfo],
    tmux: Tmux,
    task_filter: str | None,
    report: PassReport,
    polls: list[int],
) -> None:
    """Apply the exit rules to the project's dead agents, and look for live ones that
    wait for a person (``report`` and ``polls`` gather what was done and the poll
    intervals the workflows ask for)."""
    engine: Engine | None = None

    def engine_here() -> Engine:
        nonlocal engine
        engine = engine or build_engine(project, actor="monitor", store=store)
        return engine

    setter = agentscreens.Setter(engine_here)
    live: set[str] = set()
    watched: list[agentscreens.Agent] = []
    snap = store.snapshot()
    ensure_adopted(project, snap, tmux=compose.tmux)
    known = Definitions(snap)
    for task, session in _local_active(snap, known, project.name):
        report.active += 1
        if task_filter and not task.id.startswith(task_filter):
            continue
        engine = engine or build_engine(project, actor="monitor", store=store)
        workflow = known.of(task)
        if workflow is None:  # a definition that cannot be read: nothing to apply
            continue
        polls.append(workflow.exit_monitoring.poll_interval)
        state = workflow.states.get(task.status)
        if state is None or state.agent == "none":
            continue
        report.checked += 1
        window = agent_window(task, state.agent)
        why = _why_dead(panes, session, window)
        if why is None:
            report.watch.add((session, window))
            live.add(task.id)
            watched.append(agentscreens.Agent(task, window, panes[(session, window)]))
            spent = budget.look(engine_here, task)
            if spent:
                report.actions.append(spent)
                log(spent)
            continue
        report.dead += 1
        refusal = agentscreens.exit_reason(task, window, panes.get((session, window)), tmux)
        try:
            done = handle_dead_session(engine, task.id, expect_status=task.status)
        except OrangeError as exc:
            done = f"failed: {exc}"
        if done == BUSY:
            report.busy = True
            continue
        if refusal is not None:  # why it died, and what to do, instead of a bare crash
            try:
                engine.set_attention(task.id, refusal, event="agent.refused")
            except OrangeError:
                pass
            done = f"{done}; {refusal}"
        if done != "nothing to do":
            line = f"task {task.id} ({project.name}, {task.status}): {why}: {done}"
            report.actions.append(line)
            log(line)
    # The live agents' panes that are due, read together (the waiting screens).
    looked = agentscreens.look_at_all(project.name, watched, tmux, setter)
    for agent, (said, look) in zip(watched, looked, strict=True):
        key = (agent.pane.session, agent.window)
        if look is not None and look.window == agent.window:
            report.looked[key] = (look.pane, look.activity)
            if look.screen:
                report.marked.add(key)
        if said:
            report.actions.append(said)
            log(said)
    if task_filter is None:
        agentscreens.prune(project.name, live)


def verify_forgeries(name: str, store: TaskStore) -> int:
    """Replay up to `VERIFY_SLICE` commits new on the project's tasks ref (a fetch,
    ``update-ref``, a plain commit): a forged step is restored with ``attention``
    (DESIGN §8).  Returns how many new commits are left to verify."""
    try:
        found = verify_new(store, trusted=trusted_here, actor="monitor", limit=VERIFY_SLICE)
    except OrangeError as exc:
        log(f"{name}: could not verify new task commits: {exc}")
        return 0
    for line in found.lines():  # every file the restore wrote, by name
        log(f"{name}: {line}")
    for violation in found.untrusted:
        log(f"{name}: definition not trusted on this host: {violation}")
    return found.left


def _flag_orphans(project: projects.Project, store: TaskStore) -> None:
    """This host's tasks that wait for a task cancelled since the last look get
    ``attention`` (`orange.engine.orphans`; nothing read when the ref did not move)."""
    try:
        said = orphans.flag(store, lambda: build_engine(project, actor="monitor", store=store))
    except OrangeError as exc:
        said = [f"could not look for tasks waiting on a cancelled task: {exc}"]
    for line in said:
        log(f"{project.name}: {line}")


def _local_active(snap: Snapshot, known: Definitions, project: str) -> Iterator[tuple[Task, str]]:
    """The project's active tasks whose agent this host started, with its session."""
    for task in listing.tasks(snap):
        if not isinstance(task, Task) or task.project != project:
            continue
        if not task.str_field("tmux_session") or not known.task_is_active(task):
            continue
        session = session_of(task)
        if session is not None:
            yield task, session


def _why_dead(panes: Mapping[tuple[str, str], PaneInfo], session: str, window: str) -> str | None:
    """Why the agent in ``session:window`` is dead, or None when it is alive."""
    pane = panes.get((session, window))
    if pane is not None and not pane.dead:
        return None
    if not any(key[0] == session for key in panes):
        return "session gone"
    if pane is None:
        return f"no {window} window"
    if pane.dead_signal is not None:
        return f"{window} was killed by signal {_signal_name(pane.dead_signal)}"
    if pane.dead_status is None:
        return f"{window} exited"  # tmux has not reaped it yet: neither is known
    return f"{window} exited with status {pane.dead_status}"


def _signal_name(number: int) -> str:
    """``9 (SIGKILL)``; the number alone for one this system does not name."""
    try:
        return f"{number} ({signal.Signals(number).name})"
    except ValueError:
        return str(number)


def _wake_stamp() -> float:
    """The newest change to any project's wake file (touched by git hooks)."""
    newest = 0.0
    for project in projects.load_all():
        try:
            common = project.repo().common_dir
        except OrangeError:
            continue
        try:
            newest = max(newest, (common / "orange" / "wake").stat().st_mtime)
        except OSError:
            continue
    return newest


# What a stopped monitor's pass says of each dead agent (`note_dead`).
STOPPED = "left alone, the monitor is stopped (`orange monitor start` handles it)"


def note_dead(task_filter: str | None = None) -> PassReport:
    """The pass of a stopped monitor (`orange.runtime.watcher`): which of this host's
    agents are dead, said in the log and the report, and nothing done about them (no
    task written, no agent respawned, no monitor started): `orange monitor start`
    handles them.  One tmux call and each project's cached snapshot."""
    report = PassReport(stopped=True)
    stores = _open_stores(task_filter)
    panes = {(p.session, p.window): p for p in compose.tmux().panes()}
    for project, store in stores:
        name = project.name
        snap = store.snapshot()
        known = Definitions(snap)
        for task, session in _local_active(snap, known, name):
            report.active += 1
            if task_filter and not task.id.startswith(task_filter):
                continue
            workflow = known.of(task)
            state = None if workflow is None else workflow.states.get(task.status)
            if state is None or state.agent == "none":
                continue
            report.checked += 1
            why = _why_dead(panes, session, agent_window(task, state.agent))
            if why is not None:
                report.dead += 1
                line = f"task {task.id} ({name}, {task.status}): {why}: {STOPPED}"
                report.actions.append(line)
                log(line)
    return report


def pass_or_note(task_filter: str | None = None) -> PassReport:
    """A pass run on request (tmux's hooks, `orange monitor --once`): `run_pass`, or
    `note_dead` while a person has the monitor stopped."""
    return run_pass(task_filter) if stopped_at() is None else note_dead(task_filter)


def loop() -> int:
    """The monitor loop.  Returns when another monitor runs, nothing is active, or a
    person stopped the monitor (`orange monitor stop`)."""
    while True:
        with attempt(lock_path()) as got:
            if not got:
                return 0
            _run_loop()
        # Lock released: a task spawned in that instant could not start a monitor (it saw
        # ours), nor could `orange monitor start`.  Look once more, and carry on if
        # anything is active again.
        if stopped_at() is not None or not orange_home().is_dir():
            return 0
        if run_pass().active == 0:
            return 0


def _run_loop() -> None:
    started = now_iso()
    status: dict[str, object] = {"pid": os.getpid(), "since": started}
    # At once, before a pass: `orange monitor stop` finds the loop by this pid.
    write_status({**_previous_status(), **status})
    log(f"monitor started (pid {os.getpid()})")
    last: list[str] = []
    while True:
        if stopped_at() is not None:
            log("stopped by `orange monitor stop`: monitor exits")
            return
        wake_seen = _wake_stamp()
        report = run_pass()
        last = (last + report.actions)[-20:]
        write_status(
            {
                **status,
                "last_pass": now_iso(),
                "active_tasks": report.active,
                "last_actions": last,
                "poll_interval": report.poll,
                "unverified_commits": report.unverified,
            }
        )
        if report.active == 0 and not report.unverified:
            log("no active tasks on this host: monitor exits")
            return
        if not orange_home().is_dir():
            return
        _wait(report, wake_seen)


def _previous_status() -> dict[str, object]:
    """What the last loop's status said (its last pass and actions), without the live
    keys `read_status` adds."""
    data = read_status()
    for key in ("running", "stopped_at"):
        data.pop(key, None)
    return data


def _wait(report: PassReport, wake_seen: float) -> None:
    """Sleep until the next pass is due: the poll interval, a wake-up from a git hook,
    or a watched agent's death.  The last is checked every second with one tmux call:
    tmux's own pane-died hook is immediate, but a server that misses a child's exit
    signal never fires it, and no agent death may wait for the poll."""
    deadline = time.monotonic() + report.poll
    tmux = compose.tmux()
    previous = {(p.session, p.window) for p in tmux.panes() if not p.dead}
    if report.watch - previous:
        return  # a watched agent died while the pass ran
    while time.monotonic() < deadline:
        time.sleep(TICK)
        if _wake_stamp() > wake_seen:
            return
        panes = [p for p in tmux.panes() if not p.dead]
        live = {(p.session, p.window) for p in panes}
        if live != previous:
            return  # an agent died or started (maybe while the last pass ran): look now
        if any(_to_read(report, p) for p in panes):
            return  # a watched agent went quiet, or a waiting one moved: read its pane
        previous = live


def _to_read(report: PassReport, pane: PaneInfo) -> bool:
    """Whether a watched agent's pane is due to be read for a waiting screen (the
    pass's rule, `agentscreens.due`, from what the pass saw)."""
    key = (pane.session, pane.window)
    if key not in report.watch or pane.activity is None:
        return False
    if report.looked.get(key) == (pane.pane_id, pane.activity):
        return False
    return key in report.marked or time.time() - pane.activity >= agentscreens.QUIET
