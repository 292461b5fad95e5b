"""Exit monitoring with real tmux: kill an agent in any state and the workflow's rule
applies within seconds, through tmux's pane-died hook (`orange monitor --once`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from orange import projects
from orange.engine.catalog import load_named
from orange.engine.forgery import recorded
from orange.engine.tasks import create_task
from orange.home import orange_home
from orange.monitor import loop as monitor_loop
from orange.runtime import watcher
from orange.runtime.watcher import read_status, state_dir
from orange.store import layout
from orange.store.store import TaskStore
from tests.conftest import make_repo
from tests.e2e.conftest import AGENT, World, wait_for
from tests.githooks.test_forgery import forge_fields
from tests.processes import Proc, processes_under

HOLD = ["sh", "-c", "sleep 600", "{prompt}"]


def _harness(
    world: World,
    worker_die: str | None = None,
    review: str = "PASS",
    reviewer_die: str | None = None,
) -> None:
    worker = [*AGENT, "--role", "worker"] + (["--die", worker_die] if worker_die else [])
    reviewer = [*AGENT, "--role", "reviewer", "--reviews", review]
    reviewer += ["--die", reviewer_die] if reviewer_die else []
    world.set_harness("fake", [*worker, "{prompt}"], [*reviewer, "{prompt}"])


def test_planning_agent_exits_with_a_plan_is_advanced(world: World) -> None:
    _harness(world, worker_die="after-plan")
    task_id = world.create("mon-plan", "Plan then exit", "--harness", "fake")
    task = world.wait_status(task_id, "working", timeout=20)
    assert "APPROACH:" in task.body  # the working copy's last edits were taken in


def test_planning_agent_exits_without_a_plan_crashes_then_escalates(world: World) -> None:
    _harness(world, worker_die="start")
    task_id = world.create("mon-crash", "Crash twice", "--harness", "fake")

    def crashed_once() -> bool:
        return world.task(task_id).int_field("crash_count") == 1

    wait_for(crashed_once, 20, "the first crash to be counted")
    task = world.task(task_id)
    assert task.status == "planning"
    assert "respawn" in task.str_field("attention")
    world.ok("task", "respawn", task_id)
    stuck = world.wait_status(task_id, "stuck", timeout=20)
    assert stuck.int_field("crash_count") == 0  # reset by the escalation move


def test_working_agent_exits_with_handoff_is_advanced_to_review(world: World) -> None:
    _harness(world, worker_die="after-handoff")
    task_id = world.create("mon-handoff", "Hand off then exit", "--harness", "fake")
    task = world.wait_status(task_id, "reviewing", timeout=40)  # reviewer PASSes
    assert task.int_field("review_round") == 1


def test_dead_reviewer_with_fail_verdict_moves_per_round(world: World) -> None:
    _harness(world, review="FAIL,FAIL", reviewer_die="after-review")
    task_id = world.create("mon-fail", "Reviewer dies after FAIL", "--harness", "fake")
    # round 1: FAIL -> working (worker notified), round 2: FAIL -> stuck
    task = world.wait_status(task_id, "stuck", timeout=60)
    assert task.int_field("review_round") == 2


def test_dead_reviewer_without_verdict_is_respawned_and_counted(world: World) -> None:
    _harness(world, reviewer_die="before-review")
    task_id = world.create("mon-noverdict", "Reviewer dies silently", "--harness", "fake")
    task = world.wait_status(task_id, "stuck", timeout=60)
    reviews = world.prompts(task_id, "reviewer")
    history = json.loads(world.ok("task", "show", task_id, "--json").out)["history"]
    events = [h["event"] for h in history]
    # first reviewer, then one respawn, then escalation
    assert len(reviews) == 2, events
    assert events.count("agent.crashed") == 2 and "agent.respawned" in events, events
    assert task.int_field("crash_count") == 0


@pytest.mark.parametrize("status", ["clarification", "reviewing", "stuck"])
def test_human_states_are_only_marked(world: World, status: str) -> None:
    world.set_harness("hold", HOLD)
    task_id = world.create("mon-mark", "Mark only", "--harness", "hold")
    world.wait_status(task_id, "planning", timeout=10)
    if status == "clarification":
        world.ok("task", "update", task_id, "--status", "clarification")
    else:
        _force_status(world, task_id, status)
    session = world.task(task_id).str_field("tmux_session")
    world.tmux("kill-session", "-t", session)
    wait_for(lambda: world.task(task_id).str_field("attention"), 20, "attention")
    assert world.status(task_id) == status


def test_the_log_names_the_signal_that_killed_an_agent(world: World) -> None:
    """Issue 25, finding 6: a signal death was logged as "exited with status None"."""
    world.set_harness("hold", HOLD)
    task_id = world.create("mon-signal", "Killed by a signal", "--harness", "hold")
    world.wait_status(task_id, "planning", timeout=10)
    session = world.task(task_id).str_field("tmux_session")
    pid = int(world.tmux("display-message", "-p", "-t", f"{session}:worker", "#{pane_pid}"))
    os.kill(pid, signal.SIGKILL)
    log = orange_home() / "logs" / "monitor.log"

    def logged() -> str | None:
        lines = log.read_text().splitlines() if log.exists() else []
        return next((line for line in lines if task_id in line), None)

    line = wait_for(logged, 20, "the death in the monitor's log")
    assert f"task {task_id} (proj, planning): worker was killed by signal 9 (SIGKILL): " in line


def test_monitor_stop_answers_once_the_monitor_is_gone(world: World) -> None:
    """ "monitor stopped" means no pass of it runs any more: a monitor that cannot act on
    SIGTERM (stopped here; starved on a loaded machine) is waited for, then killed.
    Before, `monitor stop` said so at once, and a pass still running could respawn an
    agent of a session being torn down."""
    world.set_harness("hold", HOLD)
    world.create("mon-stop", "Watched", "--harness", "hold")
    status = wait_for(
        lambda: (
            (data := read_status()).get("running") and isinstance(data.get("pid"), int) and data
        ),
        20,
        "the monitor to run",
    )
    pid = status["pid"]
    os.kill(pid, signal.SIGSTOP)  # it cannot act on the SIGTERM `monitor stop` sends
    try:
        assert world.ok("monitor", "stop").out.startswith("monitor stopped\n")
        assert read_status()["running"] is False
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)


def _force_status(world: World, task_id: str, status: str) -> None:
    """Bring a planning task to ``status`` (stuck or reviewing) by legal moves without
    hooks: a commit behind the engine would be restored as a forgery by the monitor."""
    world.edit(task_id, "Plan", "APPROACH: by hand\nTOUCHING: nothing")
    for step in ("working", "stuck", "reviewing")[: 2 if status == "stuck" else 3]:
        world.ok("task", "update", task_id, "--status", step)


def test_minimal_workflow_rules(world: World) -> None:
    world.ok("project", "update", "proj", "--workflow", "minimal")
    _harness(world, worker_die="after-handoff")
    handed = world.create("min-ok", "Minimal with handoff", "--harness", "fake")
    world.wait_status(handed, "reviewing", timeout=30)
    world.set_harness("hold", HOLD)
    crash = world.create("min-crash", "Minimal crash", "--harness", "hold")
    world.wait_status(crash, "working", timeout=10)
    world.tmux("kill-session", "-t", world.task(crash).str_field("tmux_session"))
    wait_for(lambda: world.task(crash).int_field("crash_count") == 1, 20, "a crash")


def test_reaction_time_is_seconds_not_the_poll(world: World) -> None:
    world.set_harness("hold", HOLD)
    task_id = world.create("mon-fast", "Fast reaction", "--harness", "hold")
    world.wait_status(task_id, "planning", timeout=10)
    world.ok(
        "task",
        "edit",
        task_id,
        "--section",
        "Plan",
        "--file",
        "-",
        stdin="APPROACH: x\nTOUCHING: y\n",
    )
    session = world.task(task_id).str_field("tmux_session")
    started = time.monotonic()
    world.tmux("kill-window", "-t", f"{session}:worker")
    world.wait_status(task_id, "working", timeout=15)
    elapsed = time.monotonic() - started
    print(f"reaction time: {elapsed:.2f} s")
    assert elapsed < 10  # loose: the poll would be 30 s


def test_monitor_autostarts_reports_status_and_exits_when_idle(world: World) -> None:
    world.set_harness("hold", HOLD)
    before = world.ok("monitor", "status")
    assert "not running" in before.out
    task_id = world.create("mon-auto", "Autostart", "--harness", "hold")

    def running() -> dict[str, object] | None:  # in-process: a poll is no `orange` each
        data = read_status()
        return data if data.get("running") and data.get("last_pass") else None

    wait_for(running, 15, "the monitor to start")
    status = json.loads(world.ok("monitor", "status", "--json").out)
    assert status["running"] is True and status["active_tasks"] == 1
    human = world.ok("monitor", "status").out
    assert "running (pid" in human and "since" in human
    # A second loop refuses to run beside it (one per host) and returns at once.
    assert world.ok("monitor").code == 0
    # Idle: no active task left -> the loop exits by itself (the cancel's write wakes it).
    world.ok("task", "cancel", task_id, "--yes", "--force")

    wait_for(lambda: not read_status()["running"], 20, "the idle monitor to exit")
    assert json.loads(world.ok("monitor", "status", "--json").out)["running"] is False
    log = (world.repo.parent / "home" / "orange" / "logs" / "monitor.log").read_text()
    assert "no active tasks on this host: monitor exits" in log


def test_dead_agent_is_handled_before_another_projects_backlog_is_verified(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A catch-up never makes a death wait: the pass that records a killed agent leaves
    another project's backlog of unverified commits (more than one slice) for later
    passes, which finish it, a slice each."""
    monkeypatch.setenv("ORANGE_MONITOR", "off")  # this test's passes are the only ones
    backlog = make_repo(tmp_path / "backlog")
    world.ok("project", "add", "--name", "backlog", cwd=backlog)
    project = projects.infer(backlog)
    workflow = load_named(project.workflow)
    store = TaskStore.open(backlog)
    for number in range(7):  # legal commits the monitor has not verified
        create_task(store, project, workflow, summary=f"queued {number}", branch=f"q{number}")
    monkeypatch.setattr(monitor_loop, "VERIFY_SLICE", 3, raising=False)
    world.set_harness("hold", HOLD)
    task_id = world.create("mon-backlog", "Dies during a catch-up", "--harness", "hold")
    world.wait_status(task_id, "planning", timeout=10)
    (state_dir() / "on-agent-exit.sh").write_text("#!/bin/sh\nexit 0\n")  # no hook pass
    world.tmux("kill-session", "-t", world.task(task_id).str_field("tmux_session"))

    report = monitor_loop.run_pass()
    assert any(task_id in line for line in report.actions), report.actions
    assert world.task(task_id).str_field("attention")  # the death is recorded
    tip = str(store.pygit.references[layout.TASKS_REF].target)
    assert recorded(store) != tip  # and the backlog is not all verified yet
    assert getattr(report, "unverified", {}).get("backlog", 0) > 0
    for _ in range(5):  # later passes finish it
        if not monitor_loop.run_pass().unverified:
            break
    assert recorded(store) == tip


def _kill_worker(world: World, task_id: str) -> None:
    session = world.task(task_id).str_field("tmux_session")
    pid = int(world.tmux("display-message", "-p", "-t", f"{session}:worker", "#{pane_pid}"))
    os.kill(pid, signal.SIGKILL)


def test_a_pushed_agent_run_does_not_count_a_handled_death_again(world: World) -> None:
    """Issue 24: a push setting ``agent_run`` to a new value (what a respawn elsewhere
    writes, legal in the ref) made this host count the death it had handled again:
    the monitor keys deaths on its own record of the agent it started."""
    world.set_harness("hold", HOLD)
    task_id = world.create("mon-rerun", "Counted once", "--harness", "hold")
    world.wait_status(task_id, "planning", timeout=10)
    _kill_worker(world, task_id)
    wait_for(lambda: world.task(task_id).int_field("crash_count") == 1, 20, "the crash")
    forge_fields(world.repo, task_id, agent_run="2026-11-27T12:00:00Z-a1b2c3")
    world.ok("monitor", "--once")  # verifies the push (legal) and looks at the dead pane
    task = world.task(task_id)
    assert (task.status, task.int_field("crash_count")) == ("planning", 1)
    assert task.str_field("agent_run") == "2026-11-27T12:00:00Z-a1b2c3"  # not restored


def test_a_pushed_death_record_does_not_hide_the_real_death(world: World) -> None:
    """A push recording the death of this host's live agent (legal in the ref) made the
    monitor pass over that agent's real death: it is said, and not counted twice."""
    world.set_harness("hold", HOLD)
    task_id = world.create("mon-hidden", "Not hidden", "--harness", "hold")
    run = world.wait_status(task_id, "planning", timeout=10).str_field("agent_run")
    forge_fields(world.repo, task_id, crash_count=1, dead_run=f"{run}@planning")
    world.ok("monitor", "--once")
    _kill_worker(world, task_id)
    said = "the tasks ref already records a death of its run (written elsewhere?)"
    wait_for(lambda: said in world.task(task_id).str_field("attention"), 20, "the death")
    task = world.task(task_id)
    assert (task.status, task.int_field("crash_count")) == ("planning", 1)


def _monitor_log() -> str:
    log = orange_home() / "logs" / "monitor.log"
    return log.read_text() if log.exists() else ""


def _loops(root: Path) -> list[Proc]:
    """Monitor loops running for this test (not the hooks' `--once` passes)."""
    return [p for p in processes_under(root) if p.cmdline.endswith("-m orange monitor")]


def test_a_stopped_monitor_stays_stopped_until_it_is_started(world: World, tmp_path: Path) -> None:
    """After `orange monitor stop`, nothing acts on a dead agent on its own: the pass
    tmux's hooks run (an agent died, the server was killed) only notes the deaths, and
    the automatic starts (a spawn, the dashboard, a git hook) start no monitor.
    `orange monitor start` resumes, and handles the deaths of the meantime.  Before,
    the hook's pass counted the reviewer's crash and respawned it, and a monitor the
    spawns had started but that had not taken its lock yet outlived the stop."""
    world.set_harness("hold", HOLD)
    task_id = world.create("mon-stopped", "Left alone while stopped", "--harness", "hold")
    world.wait_status(task_id, "planning", timeout=10)
    world.edit(task_id, "Plan", "APPROACH: by hand\nTOUCHING: nothing")
    world.ok("task", "update", task_id, "--status", "working")
    world.edit(task_id, "Handoff", "DONE: all\nREMAINING: none\nDECISIONS: none\nUNCERTAIN: none")
    world.ok("task", "update", task_id, "--status", "agent-review")
    session = world.task(task_id).str_field("tmux_session")
    reviewer = f"{session}:review-1"
    pid = int(wait_for(lambda: world.tmux("display-message", "-p", "-t", reviewer, "#{pane_pid}")))
    before = world.task(task_id)
    # Said "not running" when the monitors the spawns started have not taken their lock
    # yet: they exit without a pass all the same.
    assert "it stays stopped until `orange monitor start`" in world.ok("monitor", "stop").out
    wait_for(lambda: _loops(tmp_path) == [], 20, "no monitor loop left")
    passes = _monitor_log().count("pass (--once) ended")

    os.kill(pid, signal.SIGKILL)  # the reviewer dies: tmux's pane-died hook runs a pass
    try:  # (failed once in a full run, never alone or in loops: say what stood then)
        wait_for(
            lambda: _monitor_log().count("pass (--once) ended") > passes, 60, "the hook's pass"
        )
    except AssertionError as failed:
        hooks = world.tmux("show-hooks", "-g")
        procs = "\n".join(p.cmdline for p in processes_under(tmp_path))
        raise AssertionError(
            f"{failed}\nhooks:\n{hooks}\nprocesses:\n{procs}\nlog:\n{_monitor_log()[-3000:]}"
        ) from None
    assert world.tmux("display-message", "-p", "-t", reviewer, "#{pane_dead}").strip() == "1"
    world.tmux("kill-server")  # tmux may run its hooks as it goes, or not: run them here
    hook = subprocess.run([str(state_dir() / "on-agent-exit.sh")], check=False)  # as tmux's
    assert hook.returncode == 0
    watcher.ensure_running()  # what a spawn, the dashboard and git's hooks call
    assert _loops(tmp_path) == []
    after = world.task(task_id)
    assert (after.status, after.int_field("crash_count")) == ("agent-review", 0)
    assert after.str_field("agent_run") == before.str_field("agent_run")
    assert world.tmux("list-sessions") == ""  # nothing respawned
    noted = f"task {task_id} (proj, agent-review): {{}}: left alone, the monitor is stopped"
    assert noted.format("review-1 was killed by signal 9 (SIGKILL)") in _monitor_log()
    assert noted.format("session gone") in _monitor_log()
    assert "monitor: stopped" in world.ok("monitor", "status").out

    world.ok("monitor", "start")
    wait_for(lambda: world.task(task_id).int_field("crash_count") == 1, 20, "the death handled")
    wait_for(lambda: world.tmux("list-panes", "-t", reviewer).strip(), 20, "a new reviewer")
