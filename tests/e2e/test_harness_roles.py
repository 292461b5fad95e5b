"""Which command line starts which agent (issue 10, item 7): a reviewer always gets
its harness's review command, whatever ``permissions`` its spawn asks for; a worker
with ``permissions: reduced`` gets the reduced-worker command."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

import yaml

from orange.home import orange_home
from tests.e2e.conftest import World, wait_for

# Records the command line it was started with (its first argument) and its pid, then
# holds its pane.
AGENT = """#!__PYTHON__
import os, sys, time
with open(os.path.join(__OUT__, os.environ["ORANGE_TASK_ID"]), "a") as out:
    out.write(sys.argv[1] + " " + os.environ["ORANGE_AGENT_ROLE"] + "\\n")
with open(os.path.join(__OUT__, "pid"), "w") as out:
    out.write(str(os.getpid()))
time.sleep(600)
"""


def test_fresh_worker_reviewer_gets_the_review_command(world: World, tmp_path: Path) -> None:
    out = tmp_path / "started"
    out.mkdir()
    script = tmp_path / "which-agent"
    script.write_text(
        AGENT.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(out)))
    )
    script.chmod(0o755)
    # The old name of the reduced worker's command, as a user's config has it.
    harness = {
        "command": [str(script), "full-worker", "{prompt}"],
        "review_command": [str(script), "review", "{prompt}"],
        "respawn_command": [str(script), "reduced-worker", "{prompt}"],
    }
    (orange_home() / "config.yml").write_text(yaml.safe_dump({"harnesses": {"which": harness}}))
    world.ok("project", "update", "proj", "--workflow", "fresh-worker")

    result = world.ok("task", "create", "fix-it", "Fix it", "--harness", "which", "--json")
    assert (
        result.err.count("respawn_command is deprecated: rename it to reduced_worker_command") == 1
    )
    task_id = str(json.loads(result.out)["id"])
    record, pid = out / task_id, out / "pid"

    def started(count: int) -> list[str] | None:
        lines = record.read_text().splitlines() if record.exists() else []
        return lines if len(lines) == count else None

    assert wait_for(lambda: started(1), what="the worker") == ["full-worker worker"]
    # stuck -> agent-review spawns fresh-worker's reviewer (`harness: review`,
    # `permissions: reduced`) in the worker's window, once its agent has gone.
    world.ok("task", "update", task_id, "--status", "stuck")
    os.kill(int(pid.read_text()), signal.SIGTERM)
    wait_for(lambda: world.tmux("list-panes", "-a", "-F", "#{pane_dead}").split() == ["1"])
    world.ok("task", "update", task_id, "--status", "agent-review")
    assert wait_for(lambda: started(2), what="the reviewer")[1] == "review reviewer"
