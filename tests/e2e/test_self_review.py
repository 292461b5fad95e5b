"""The self-review workflow as seed 003 runs it (issue 10, item 6): the agent writes its
outcome to ``.orange-task`` and stops; the stop hook Orange installs for Claude Code
reports it.  A scripted agent in tmux plays Claude Code's part: on each stop it runs the
installed hook and keeps going while the hook exits 2, as Claude Code does.  For opencode
and pi, a stand-in for the tool loads the installed plugin / extension in node."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from orange.agent_hooks.idle import IDLE_HOOK_DIRS
from orange.engine.gates import section
from orange.home import orange_home
from tests.e2e.conftest import World, wait_for
from tests.node import DRIVE, node

# Stops once without an outcome, keeps going as told, writes `passed` (no ## Handoff)
# and stops again; records each stop's exit status and message, then idles.
AGENT = """#!__PYTHON__
import json, os, subprocess, sys, time
hook = os.path.expanduser("~/.claude/hooks/orange-stop.sh")
task = os.environ["ORANGE_TASK_ID"]
stops = []
def stop():
    done = subprocess.run([hook], capture_output=True, text=True)
    stops.append([done.returncode, done.stderr])
    return done.returncode
if stop() == 2:
    with open(".orange-task", "w") as out:
        json.dump({"id": task, "outcome": __FIRST__}, out)
    if stop() == 2:
        with open(".orange-task", "w") as out:
            json.dump({"id": task, "outcome": "passed"}, out)
        stop()
with open(__OUT__ + ".tmp", "w") as out:  # whole, by a rename: the test reads it once it exists
    json.dump(stops, out)
os.replace(__OUT__ + ".tmp", __OUT__)
time.sleep(600)
"""


def _agent(tmp_path: Path, world: World, first: str) -> Path:
    record = tmp_path / "stops.json"
    script = tmp_path / "self-review-agent"
    script.write_text(
        AGENT.replace("__PYTHON__", sys.executable)
        .replace("__OUT__", repr(str(record)))
        .replace("__FIRST__", repr(first))
    )
    script.chmod(0o755)
    world.set_harness("claude", [str(script), "{prompt}"])  # plays Claude Code
    world.ok("install", "--harness", "claude", "--yes")
    world.ok("project", "update", "proj", "--workflow", "self-review")
    return record


def test_an_outcome_file_completes_the_task_and_a_missing_one_keeps_the_agent_going(
    world: World, tmp_path: Path
) -> None:
    record = _agent(tmp_path, world, "passed")
    task_id = world.create("dark-mode", "Add dark mode", "--harness", "claude")
    stops = wait_for(lambda: record.exists() and json.loads(record.read_text()), what="stops")
    path = world.task(task_id).str_field("workspace")
    missing = (
        f"Orange: task {task_id} has no outcome: {tmp_path}/home/orange/workspaces/{path}/"
        f".orange-task is missing or holds no outcome. Before stopping, write "
        f'{{"id": "{task_id}", "outcome": "passed"}} when your self-review passed, or '
        f'{{"id": "{task_id}", "outcome": "stuck", "reason": "..."}} when you are stuck.\n'
    )
    assert stops == [[2, missing], [0, ""]]
    task = world.wait_status(task_id, "reviewing")
    assert section(task.body, "## Handoff") is None
    assert (section(task.body, "## Outcome") or "").startswith("OUTCOME: passed")

    # Released, the worktree keeps no outcome file: the next task there would first be
    # told it names another task (issue 25, finding 6).
    outcome = orange_home() / "workspaces" / path / ".orange-task"
    assert json.loads(outcome.read_text()) == {"id": task_id}  # kept while the task holds it
    world.ok("task", "cancel", task_id, "--yes")
    assert world.status(task_id) == "cancelled"
    assert not outcome.exists()


def test_an_invalid_outcome_says_what_is_wrong(world: World, tmp_path: Path) -> None:
    record = _agent(tmp_path, world, "done")
    task_id = world.create("dark-mode", "Add dark mode", "--harness", "claude")
    stops = wait_for(lambda: record.exists() and json.loads(record.read_text()), what="stops")
    assert [code for code, _ in stops] == [2, 2, 0]
    assert '.orange-task: "outcome" must be "passed" or "stuck", not "done"' in stops[1][1]
    world.wait_status(task_id, "reviewing")


# Plays Claude Code with a nested review: from its tool shell it runs a session of its own
# (as `claude -p` would be, inheriting the agent's environment) that stops while the task
# has no outcome; then the agent itself stops six times without one, with Claude Code's
# hook input (`stop_hook_active`: false after a new prompt, true after a refusal).
NESTING_AGENT = """#!__PYTHON__
import json, os, shlex, subprocess, sys, time
hook = os.path.expanduser("~/.claude/hooks/orange-stop.sh")
def stop(session, active):
    event = {"session_id": session, "hook_event_name": "Stop", "stop_hook_active": active}
    done = subprocess.run(["sh", "-c", shlex.quote(hook)], input=json.dumps(event),
                          capture_output=True, text=True)
    return [done.returncode, done.stderr]
if sys.argv[1] == "nested":
    print(json.dumps(stop("nested", False)))
    sys.exit(0)
nested = [sys.executable, sys.argv[0], "nested"]
said = subprocess.run(["sh", "-c", shlex.join(nested)], capture_output=True, text=True)
record = {"nested": json.loads(said.stdout)}
record["stops"] = [stop("top", active) for active in (False, True, False, True, True, True)]
with open(__OUT__ + ".tmp", "w") as out:  # whole, by a rename: the test reads it once it exists
    json.dump(record, out)
os.replace(__OUT__ + ".tmp", __OUT__)
time.sleep(600)
"""


def test_a_nested_session_is_never_refused_and_the_agent_at_most_three_times_in_a_row(
    world: World, tmp_path: Path
) -> None:
    """Issue 25, finding 3: a nested `claude -p` review inherited the worker's
    environment and Orange's stop hook refused each of its stops (46 model calls in
    30 s).  The hook acts only for the agent process Orange started; it counts refusals
    in a row (from zero after a new prompt: `stop_hook_active` false), and after three
    it lets the agent stop and hands the task to a person, saying why."""
    record = tmp_path / "stops.json"
    script = tmp_path / "nesting-agent"
    script.write_text(
        NESTING_AGENT.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(record)))
    )
    script.chmod(0o755)
    world.set_harness("claude", [str(script), "top", "{prompt}"])
    world.ok("install", "--harness", "claude", "--yes")
    world.ok("project", "update", "proj", "--workflow", "self-review")
    task_id = world.create("nested", "Review yourself", "--harness", "claude")
    # Each stop runs `orange task show`: a loaded machine needs more than the default.
    seen = wait_for(lambda: record.exists() and json.loads(record.read_text()), 120, "stops")
    assert seen["nested"] == [0, ""]
    assert [code for code, _ in seen["stops"]] == [2, 2, 2, 2, 2, 0]
    assert all(f"task {task_id} has no outcome" in said for _, said in seen["stops"][:5])
    assert "refusal 3 in a row" in seen["stops"][4][1]
    assert "refusal 3 in a row" not in seen["stops"][3][1]
    task = world.wait_status(task_id, "stuck")
    said = section(task.body, "## Stuck") or ""
    assert "Orange's stop hook refused this agent's stop 3 times in a row" in said


@pytest.mark.parametrize("kind", ["opencode", "pi"])
def test_opencode_and_pi_are_sent_what_is_missing_until_the_outcome_completes_the_task(
    kind: str, world: World, tmp_path: Path
) -> None:
    """The plugin (opencode) or extension (pi) `orange install` writes, loaded in node by a
    stand-in for the tool that runs as the task's agent in tmux (in its worktree, with
    Orange's environment): each stop is a `session.idle` / `agent_end`, and what the file
    sends through the tool's API is recorded."""
    steps = [
        {"outcome": None},
        {"outcome": '{"id": "{task}", "outcome": "done"}'},
        {"outcome": '{"id": "{task}", "outcome": "passed"}'},
    ]
    (tmp_path / "steps.json").write_text(json.dumps(steps))
    record = tmp_path / "sent.json"
    plugin = Path.home() / IDLE_HOOK_DIRS[kind] / "orange-stop.js"
    stand_in = [node(), str(DRIVE), kind, str(plugin), str(tmp_path / "steps.json")]
    world.set_harness(kind, [*stand_in, str(record), "--idle", "{prompt}"])
    world.ok("install", "--harness", kind)
    world.ok("project", "update", "proj", "--workflow", "self-review")
    task_id = world.create("dark-mode", "Add dark mode", "--harness", kind)
    sent = wait_for(lambda: record.exists() and json.loads(record.read_text()), what="stops")
    if kind == "opencode":
        said = [[part["text"] for call in step for part in call["body"]["parts"]] for step in sent]
    else:
        said = [[call["content"] for call in step] for step in sent]
    path = world.task(task_id).str_field("workspace")
    missing, invalid, done = said
    assert missing == [
        f"Orange: task {task_id} has no outcome: {tmp_path}/home/orange/workspaces/{path}/"
        f".orange-task is missing or holds no outcome. Before stopping, write "
        f'{{"id": "{task_id}", "outcome": "passed"}} when your self-review passed, or '
        f'{{"id": "{task_id}", "outcome": "stuck", "reason": "..."}} when you are stuck.'
    ]
    assert len(invalid) == 1
    assert '.orange-task: "outcome" must be "passed" or "stuck", not "done"' in invalid[0]
    assert done == []
    task = world.wait_status(task_id, "reviewing")
    assert section(task.body, "## Handoff") is None
    assert (section(task.body, "## Outcome") or "").startswith("OUTCOME: passed")
