"""Every shipped workflow end to end, driven as real agents drive it: each scripted agent
runs in its tmux pane and moves its own task with `orange task update` (issue 10).
Each scenario walks the paths its workflow has beyond what `test_flow`,
`test_harness_roles` and `test_self_review` walk: the failing review, stuck, a human's
request for changes out of stuck or reviewing and the new review cycle it starts,
then the merge."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from orange.store import layout
from orange.store.task import Task
from tests.conftest import git
from tests.e2e.conftest import AGENT, World, wait_for


def moves(world: World) -> list[str]:
    """The status moves on the tasks ref, oldest first (one task per test)."""
    trail = git(world.repo, "log", "--reverse", "--format=%s", layout.TASKS_REF).splitlines()
    return [s.split(": ", 1)[1] for s in trail if " -> " in s and ": " in s]


def rounds(world: World, task_id: str) -> list[str]:
    return [p.split("Review round: ")[1].split("\n")[0] for p in world.prompts(task_id, "reviewer")]


def firsts(world: World, task_id: str) -> list[str]:
    """The first line of each worker prompt, in order."""
    return [p.split("\n")[0] for p in world.prompts(task_id, "worker")]


def test_minimal_crash_twice_stuck_then_a_human_sends_it_back_and_it_merges(
    world: World,
) -> None:
    """minimal: a worker that dies at once crashes twice and the task is stuck; a
    human's request-changes starts a fresh worker, which hands over to reviewing itself
    (its own session is killed by that move); the human merges."""
    world.ok("project", "update", "proj", "--workflow", "minimal")
    world.set_harness("fake", [*AGENT, "--role", "worker", "--die", "start", "{prompt}"])
    task_id = world.create("min-a", "Add feature M", "--harness", "fake")
    wait_for(lambda: world.task(task_id).int_field("crash_count") == 1, 20, "a first crash")
    world.ok("task", "respawn", task_id)
    world.wait_status(task_id, "stuck", timeout=20)
    world.set_harness("fake", [*AGENT, "--role", "worker", "--handoff-to", "reviewing", "{prompt}"])
    world.ok("task", "request-changes", task_id, "-m", "Try again, smaller")
    task = world.wait_status(task_id, "reviewing", timeout=30)
    assert "DONE: fixed the review findings" in task.body  # it read the ## Feedback
    assert task.int_field("crash_count") == 0 and not task.str_field("attention")
    assert world.tmux("has-session", "-t", f"={task.str_field('tmux_session')}") == ""
    world.ok("task", "merge", task_id, "--local")
    assert world.status(task_id) == "done"
    assert moves(world) == ["pending -> working", "working -> stuck", "stuck -> working",
                            "working -> reviewing", "reviewing -> done"]  # fmt: skip
    assert firsts(world, task_id) == ["# Task: Add feature M"] * 3


def test_fresh_worker_fails_twice_is_stuck_and_a_new_cycle_passes(world: World) -> None:
    """fresh-worker: each agent moves its own task from inside its tmux session, whose
    move kills that session (issue 10, item 1; seed 001: the session is killed, then the
    new agent runs): the worker's handover starts the reviewer, the first FAIL starts
    worker_fix, the second FAIL -> stuck; request-changes starts a new cycle with the
    stuck-fix worker, whose review (round 1 of 2 again) passes; the human merges."""
    world.ok("project", "update", "proj", "--workflow", "fresh-worker")
    world.set_harness(
        "fake",
        [*AGENT, "--role", "worker", "{prompt}"],
        [*AGENT, "--role", "reviewer", "--reviews", "FAIL,FAIL/PASS", "{prompt}"],
    )
    task_id = world.create("fresh-b", "Add feature F", "--harness", "fake")
    stuck = world.wait_status(task_id, "stuck", timeout=60)
    assert stuck.int_field("review_round") == 2
    world.ok("task", "request-changes", task_id, "-m", "Split the change in two")
    task = world.wait_status(task_id, "reviewing", timeout=60)
    assert task.int_field("review_cycle") == 1 and task.int_field("review_round") == 1
    assert task.int_field("crash_count") == 0 and not task.str_field("attention")
    assert rounds(world, task_id) == ["1 of 2", "2 of 2", "1 of 2"]
    assert firsts(world, task_id) == [
        "# Task: Add feature F",
        "# Fixing Issues: Add feature F",
        "# Resuming Stuck Task: Add feature F",
    ]
    world.ok("task", "merge", task_id, "--local")
    assert moves(world) == [
        "pending -> working", "working -> agent-review", "agent-review -> working",
        "working -> agent-review", "agent-review -> stuck", "stuck -> working",
        "working -> agent-review", "agent-review -> reviewing", "reviewing -> done",
    ]  # fmt: skip


def test_default_stuck_then_two_human_send_backs_each_start_a_cycle(world: World) -> None:
    """default: the reviewer's second FAIL (made from inside its window) moves to stuck
    and the waiting worker is sent the stuck-fix prompt (issue 10, item 2).  A human's
    request-changes from stuck starts a new cycle whose FAIL gets a fix round (item 3)
    before it passes; a request-changes from reviewing starts a third cycle, the
    persistent worker is told each time; the human merges."""
    reviewer = [*AGENT, "--role", "reviewer", "--reviews", "FAIL,FAIL/FAIL,PASS", "{prompt}"]
    world.set_harness("fake", [*AGENT, "--role", "worker", "{prompt}"], reviewer)
    task_id = world.create("stuck-a", "Add feature S", "--harness", "fake")
    task = world.wait_status(task_id, "stuck", timeout=60)
    assert task.int_field("review_round") == 2
    session = task.str_field("tmux_session")

    def told() -> bool:
        screen = world.tmux("capture-pane", "-p", "-t", f"={session}:=worker")
        return "notified: # Stuck: Add feature S" in screen

    wait_for(told, 20, "the worker to be sent the stuck-fix prompt")
    world.ok("task", "request-changes", task_id, "-m", "Split the change in two")
    wait_for(lambda: world.task(task_id).int_field("review_cycle") == 1, 10, "a new cycle")
    again = world.wait_status(task_id, "reviewing", timeout=60)
    assert again.int_field("review_round") == 2
    world.ok("task", "request-changes", task_id, "-m", "Rename the flag")
    wait_for(lambda: world.task(task_id).int_field("review_cycle") == 2, 10, "a third cycle")
    done = world.wait_status(task_id, "reviewing", timeout=60)
    assert done.int_field("review_round") == 1 and done.int_field("crash_count") == 0
    assert rounds(world, task_id) == ["1 of 2", "2 of 2", "1 of 2", "2 of 2", "1 of 2"]
    assert firsts(world, task_id) == ["# Task: Add feature S"]  # one persistent worker
    world.ok("task", "merge", task_id, "--local")
    assert moves(world)[3:] == [
        "agent-review -> working", "working -> agent-review", "agent-review -> stuck",
        "stuck -> working", "working -> agent-review", "agent-review -> working",
        "working -> agent-review", "agent-review -> reviewing", "reviewing -> working",
        "working -> agent-review", "agent-review -> reviewing", "reviewing -> done",
    ]  # fmt: skip


# Plays Claude Code in the self-review workflow: writes its outcome (stuck the first
# time, passed once resumed), stops (runs the installed stop hook), records the hook's
# exit status and message, then idles.
SELF_REVIEWER = """#!__PYTHON__
import json, os, subprocess, sys, time
task = os.environ["ORANGE_TASK_ID"]
resumed = sys.argv[1].startswith("# Resuming")
outcome = {"id": task, "outcome": "passed"} if resumed else {
    "id": task, "outcome": "stuck", "reason": "the API it needs is missing"}
with open(".orange-task", "w") as out:
    json.dump(outcome, out)
hook = os.path.expanduser("~/.claude/hooks/orange-stop.sh")
done = subprocess.run([hook], capture_output=True, text=True)
with open(__OUT__, "a") as out:
    print(json.dumps([resumed, done.returncode, done.stderr]), file=out)
time.sleep(600)
"""


def test_self_review_stuck_outcome_then_a_human_sends_it_back(world: World, tmp_path: Path) -> None:
    """self-review: the agent reports `stuck` through its outcome file and the stop
    hook; a human's request-changes starts a fresh agent with the resume prompt, which
    reports `passed`; the human merges."""
    record = tmp_path / "stops.jsonl"
    script = tmp_path / "self-reviewer"
    script.write_text(
        SELF_REVIEWER.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(record)))
    )
    script.chmod(0o755)
    world.set_harness("claude", [str(script), "{prompt}"])
    world.ok("install", "--harness", "claude", "--yes")
    world.ok("project", "update", "proj", "--workflow", "self-review")
    task_id = world.create("self-s", "Add feature S", "--harness", "claude")
    stuck = world.wait_status(task_id, "stuck")
    assert "the API it needs is missing" in stuck.body
    # The agent records its hook's answer after the hook's move: sending the task back
    # before that kills the first agent before it writes the line.
    wait_for(lambda: record.exists() and record.read_text().count("\n") == 1, 20, "the first stop")
    world.ok("task", "request-changes", task_id, "-m", "The API is there now")
    task = world.wait_status(task_id, "reviewing")
    assert "OUTCOME: passed" in task.body and not task.str_field("attention")
    lines = wait_for(lambda: len(record.read_text().splitlines()) == 2 and record.read_text())
    stops = [json.loads(line) for line in lines.splitlines()]
    assert stops == [[False, 0, ""], [True, 0, ""]]
    world.ok("task", "merge", task_id, "--local")
    assert moves(world) == ["pending -> working", "working -> stuck", "stuck -> working",
                            "working -> reviewing", "reviewing -> done"]  # fmt: skip


# A fresh-worker agent that asks for help itself: the first worker moves its task to
# stuck and waits there; the stuck-fix worker a human's request-changes starts moves to
# stuck too, then sends its fix to review (its `stuck -> agent-review`); a reviewer
# records its start.  Each records its role, pid and first prompt line.
ASKS_FOR_HELP = """#!__PYTHON__
import json, os, subprocess, sys, time
role, prompt = os.environ["ORANGE_AGENT_ROLE"], sys.argv[1]
with open(__OUT__, "a") as out:
    print(json.dumps([role, os.getpid(), prompt.split(chr(10))[0]]), file=out, flush=True)
def move(status):
    subprocess.run(["orange", "task", "update", "--status", status], capture_output=True)
if role == "worker":
    move("stuck")
    if prompt.startswith("# Resuming Stuck Task"):
        move("agent-review")
time.sleep(600)
"""


def test_fresh_worker_a_worker_that_went_stuck_itself_is_replaced(
    world: World, tmp_path: Path
) -> None:
    """fresh-worker: a worker's own `working -> stuck` leaves it running.  A human's
    request-changes then starts the stuck-fix worker in its place (seed 001: the
    session is killed, then the new agent runs), and that worker's own
    `stuck -> agent-review` starts the reviewer in its place: a spawn never finds the
    old agent in the window and silently starts nothing."""
    record = tmp_path / "started.jsonl"
    script = tmp_path / "asks-for-help"
    script.write_text(
        ASKS_FOR_HELP.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(record)))
    )
    script.chmod(0o755)
    world.set_harness("help", [str(script), "{prompt}"])
    world.ok("project", "update", "proj", "--workflow", "fresh-worker")

    def started(count: int) -> list[list[object]] | None:
        lines = record.read_text().splitlines() if record.exists() else []
        return [json.loads(line) for line in lines] if len(lines) >= count else None

    task_id = world.create("help-f", "Add feature H", "--harness", "help")
    world.wait_status(task_id, "stuck")
    world.ok("task", "request-changes", task_id, "-m", "Try the other API")
    agents = wait_for(lambda: started(3), 30, "the stuck-fix worker and the reviewer")
    assert [(role, line) for role, _, line in agents] == [
        ("worker", "# Task: Add feature H"),
        ("worker", "# Resuming Stuck Task: Add feature H"),
        ("reviewer", "# Review Task: Add feature H"),
    ]
    task = world.wait_status(task_id, "agent-review")
    assert task.int_field("review_round") == 1
    session = task.str_field("tmux_session")
    pids = world.tmux("list-panes", "-s", "-t", f"={session}", "-F", "#{pane_pid}").split()
    assert pids == [str(agents[2][1])]  # the reviewer alone runs in the task's session
    assert moves(world) == [
        "pending -> working", "working -> stuck", "stuck -> working",
        "working -> stuck", "stuck -> agent-review",
    ]  # fmt: skip


# A fresh-worker worker whose shell tool runs commands without tmux's variables (as a
# harness that sanitizes its tools' environment would): it hands over with
# `orange task update` from a process that has no TMUX_PANE.  Each agent records its
# role and pid.
NO_TMUX_ENV = """#!__PYTHON__
import json, os, subprocess, sys, time
role = os.environ["ORANGE_AGENT_ROLE"]
with open(__OUT__, "a") as out:
    print(json.dumps([role, os.getpid()]), file=out, flush=True)
if role == "worker":
    with open("TASK.md", "a") as copy:
        copy.write("\\n## Handoff\\n\\nDONE: the feature\\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TMUX", "TMUX_PANE")}
    subprocess.run(["orange", "task", "update", "--status", "agent-review"], env=env)
time.sleep(600)
"""


def test_fresh_worker_a_handover_without_tmux_variables_starts_the_reviewer(
    world: World, tmp_path: Path
) -> None:
    """Whether `orange` runs inside the session it kills is known by its process's
    ancestry too, not only by TMUX_PANE: a self-kill found out only by that variable
    killed the handing-over command with the session, before the reviewer's start."""
    record = tmp_path / "started.jsonl"
    script = tmp_path / "no-tmux-env"
    script.write_text(
        NO_TMUX_ENV.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(record)))
    )
    script.chmod(0o755)
    world.set_harness("bare", [str(script), "{prompt}"])
    world.ok("project", "update", "proj", "--workflow", "fresh-worker")
    task_id = world.create("bare-f", "Add feature B", "--harness", "bare")

    def started() -> list[list[object]] | None:
        lines = record.read_text().splitlines() if record.exists() else []
        return [json.loads(line) for line in lines] if len(lines) >= 2 else None

    agents = wait_for(started, 30, "the reviewer")
    assert [role for role, _ in agents] == ["worker", "reviewer"]
    task = world.task(task_id)
    assert (task.status, task.int_field("crash_count")) == ("agent-review", 0)
    session = task.str_field("tmux_session")
    pids = world.tmux("list-panes", "-s", "-t", f"={session}", "-F", "#{pane_pid}").split()
    assert pids == [str(agents[1][1])]  # the reviewer alone runs in the task's session


def test_default_two_send_backs_after_first_round_passes(world: World) -> None:
    """default: each review passes at once and a human sends the task back twice; the
    scripted worker's handover names its cycle, so the second send-back's ## Handoff
    is a new artifact (the same text as the first send-back's was refused as stale)."""
    reviewer = [*AGENT, "--role", "reviewer", "--reviews", "PASS", "{prompt}"]
    world.set_harness("fake", [*AGENT, "--role", "worker", "{prompt}"], reviewer)
    task_id = world.create("twice-a", "Add feature T", "--harness", "fake")
    world.wait_status(task_id, "reviewing", timeout=60)

    def sent_back(cycle: int) -> Task:
        world.ok("task", "request-changes", task_id, "-m", f"Change {cycle}")
        wait_for(lambda: world.task(task_id).int_field("review_cycle") == cycle, 10, "a cycle")
        return world.wait_status(task_id, "reviewing", timeout=60)

    sent_back(1)
    task = sent_back(2)
    assert rounds(world, task_id) == ["1 of 2"] * 3
    assert "DONE: fixed the review findings (cycle 3, round 1)" in task.body
