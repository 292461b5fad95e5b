"""Agents carry who they are (issue 9, "Who may move"): the processes Orange starts in
tmux get ``ORANGE_TASK_ID`` and ``ORANGE_AGENT_ROLE``, and an agent's own `orange`
commands are held to its role's moves: a scripted worker in a real pane tries the
stuck detour (``working -> stuck -> reviewing``) and is refused the human's move.
The environment is not trusted alone (issue 25): a command run in one task's worktree
with another task's ``ORANGE_TASK_ID`` is refused, and codex agents, whose TUI shares
one background server per HOME, are started without it.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from orange.home import orange_home
from tests.conftest import git, run_orange
from tests.e2e.conftest import World, wait_for

# Records its identity, and as the worker plans, starts work, asks for help and tries
# to send itself to the human's review; then holds its pane.
AGENT = """#!__PYTHON__
import json, os, subprocess, sys, time
role = sys.argv[1]
task = os.environ.get("ORANGE_TASK_ID", "")
seen = {k: os.environ.get(k) for k in ("ORANGE_TASK_ID", "ORANGE_AGENT_ROLE")}
steps = []
if role == "worker":
    with open("TASK.md", "a") as copy:
        copy.write("\\n## Plan\\n\\nAPPROACH: small steps\\nTOUCHING: app.py\\n")
    for status in ("working", "stuck", "reviewing"):
        done = subprocess.run(["orange", "task", "update", "--status", status],
                              capture_output=True, text=True)
        steps.append([status, done.returncode, done.stderr])
path = os.path.join(__OUT__, task + "-" + role + ".json")
with open(path + ".tmp", "w") as out:  # whole, by a rename: the test reads it once it exists
    json.dump({"env": seen, "steps": steps}, out)
os.replace(path + ".tmp", path)
print("AGENT-DONE", flush=True)
time.sleep(600)
"""


def test_agents_carry_their_task_and_role_and_keep_to_their_moves(
    world: World, tmp_path: Path
) -> None:
    out = tmp_path / "agents"
    out.mkdir()
    script = tmp_path / "identity-agent"
    script.write_text(
        AGENT.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(out)))
    )
    script.chmod(0o755)
    world.set_harness("ident", [str(script), "worker", "{prompt}"], [str(script), "reviewer"])

    worked = world.create("detour", "Try the stuck detour", "--harness", "ident")
    reviewed = world.create(
        "pr-review", "Review a PR", "--harness", "ident", "--status", "agent-review"
    )

    def record(task: str, role: str) -> dict[str, object] | None:
        path = out / f"{task}-{role}.json"
        return json.loads(path.read_text()) if path.exists() else None

    worker = wait_for(lambda: record(worked, "worker"), what="the worker's record")
    reviewer = wait_for(lambda: record(reviewed, "reviewer"), what="the reviewer's record")
    assert worker["env"] == {"ORANGE_TASK_ID": worked, "ORANGE_AGENT_ROLE": "worker"}
    assert reviewer["env"] == {"ORANGE_TASK_ID": reviewed, "ORANGE_AGENT_ROLE": "reviewer"}
    assert worker["steps"] == [
        ["working", 0, ""],
        ["stuck", 0, ""],
        [
            "reviewing",
            1,
            f"orange: stuck -> reviewing is a human move; the worker agent of task {worked} "
            f"may not take it (ask a human to run: orange task update {worked} --status "
            "reviewing)\n",
        ],
    ]
    assert world.status(worked) == "stuck"
    world.ok("task", "update", worked, "--status", "reviewing")  # a human may
    assert world.status(worked) == "reviewing"


# Holds its pane: the task stays bound to its worktree.
HOLD = ["sh", "-c", "sleep 600", "{prompt}"]


def test_a_command_whose_task_is_not_its_worktrees_is_refused(world: World) -> None:
    """Issue 25, finding 1: codex ran one task's commands with another's environment.
    The worktree a command runs in names its task too, and a disagreement is refused:
    one line, exit 1, the tasks ref untouched."""
    world.set_harness("hold", HOLD)
    first = world.create("first", "First task", "--harness", "hold")
    second = world.create("second", "Second task", "--harness", "hold")

    def bound(task_id: str) -> str | None:
        return world.task(task_id).str_field("workspace") or None

    first_ws = wait_for(lambda: bound(first), what="the first task's worktree")
    second_ws = wait_for(lambda: bound(second), what="the second task's worktree")
    assert first_ws != second_ws
    pool = orange_home() / "workspaces"
    in_second = pool / second_ws / "src"
    in_second.mkdir()
    as_first = {"ORANGE_TASK_ID": first, "ORANGE_AGENT_ROLE": "worker"}
    before = git(world.repo, "log", "--format=%H", "refs/orange/tasks")

    refusal = (
        f"orange: this worktree ({second_ws}) is bound to task {second}, but "
        f"ORANGE_TASK_ID names task {first} (run it in the worktree of task {first})\n"
    )
    for command in (
        ["task", "update", "--summary", "Hijacked"],  # the fast path
        ["task", "update", "--status", "working"],  # a move, with the engine
        ["task", "update", first, "--summary", "Hijacked"],  # an explicit id
        ["task", "show", first],  # typer
    ):
        result = run_orange(*command, cwd=in_second, env=as_first)
        assert (result.code, result.out, result.err) == (1, "", refusal), command
    assert git(world.repo, "log", "--format=%H", "refs/orange/tasks") == before

    # In its own worktree the same environment acts, on its own task.
    own = run_orange("task", "update", "--summary", "Renamed", cwd=pool / first_ws, env=as_first)
    assert own.code == 0, own.err
    assert world.task(first).str_field("summary") == "Renamed"
    assert world.task(second).str_field("summary") == "Second task"

    # `task edit` and `task show` find the task from the worktree, as `task update`
    # does (issue 25: a worker's `task edit --section Notes` wanted an id).
    edited = run_orange(
        "task",
        "edit",
        "--section",
        "Notes",
        "--file",
        "-",
        stdin="from the worktree\n",
        cwd=pool / first_ws,
        env=as_first,
    )
    assert (edited.code, edited.out) == (0, f"task {first}: ## Notes saved\n"), edited.err
    shown = run_orange("task", "show", "--json", cwd=in_second)  # a person, no task variable
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["id"] == second
    logged = run_orange("task", "log", "--json", cwd=in_second)  # and its history
    assert (logged.code, json.loads(logged.out)["id"]) == (0, second), logged.err
    assert "from the worktree" in world.task(first).body


# Plays codex: records the command line it was started with (whole, by a rename: the
# test reads the file as soon as it exists), then holds its pane.
FAKE_CODEX = """#!__PYTHON__
import json, os, sys, time
path = os.path.join(__OUT__, os.environ["ORANGE_AGENT_ROLE"] + ".json")
with open(path + ".tmp", "w") as out:
    json.dump(sys.argv[1:], out)
os.replace(path + ".tmp", path)
time.sleep(600)
"""


def test_codex_workers_and_reviewers_run_without_the_shared_daemon(
    world: World, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """codex-cli 0.171's TUI runs every session's commands in one background app-server
    started by the first TUI of a HOME, with that TUI's environment (its ORANGE_TASK_ID
    and ORANGE_AGENT_ROLE); `--no-daemon` keeps them in the agent's own process."""
    out = tmp_path / "codex-started"
    out.mkdir()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    codex = bin_dir / "codex"
    codex.write_text(
        FAKE_CODEX.replace("__PYTHON__", sys.executable).replace("__OUT__", repr(str(out)))
    )
    codex.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")

    world.create("codex-work", "Work with codex", "--harness", "codex")
    world.create(
        "codex-review", "Review with codex", "--harness", "codex", "--status", "agent-review"
    )

    def argv(role: str) -> list[str] | None:
        path = out / f"{role}.json"
        return json.loads(path.read_text()) if path.exists() else None

    worker = wait_for(lambda: argv("worker"), what="the codex worker")
    reviewer = wait_for(lambda: argv("reviewer"), what="the codex reviewer")
    for started in (worker, reviewer):
        options = started[: started.index("--")]  # the prompt follows "--"
        assert "--no-daemon" in options, started
        assert "exec" not in options  # the interactive TUI, not the one-turn mode
        # Its commands run with Orange's PATH, not a login shell's (issue 25, finding 4:
        # codex-cli 0.171.0's login shell lost the venv's `orange` and the reviewer's
        # binary; `allow_login_shell=false` kept them, seen with the real program).
        at = options.index("allow_login_shell=false")
        assert options[at - 1] == "-c", started
