"""Never lose work; prompts and names that try to break shells and tmux (tests 5–9)."""

from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path
from signal import SIGKILL

import pytest

from orange.home import orange_home
from orange.store import layout
from tests.conftest import git
from tests.e2e.conftest import World, wait_for

HOLD = [
    sys.executable,
    "-c",
    "import sys, time; open('argv.txt', 'w').write(sys.argv[1]); time.sleep(600)",
    "{prompt}",
]


def held(world: World, branch: str, summary: str) -> tuple[str, Path]:
    """A task whose agent (``HOLD``) writes its prompt and waits: its id and worktree."""
    world.set_harness("hold", HOLD)
    task_id = world.create(branch, summary, "--harness", "hold")
    shown = json.loads(world.ok("task", "show", task_id, "--json").out)
    return task_id, Path(shown["workspace_path"])


# The agents' part of the default workflow, done by hand: a section, then the move it allows.
STEPS = [
    ("Plan", "APPROACH: a\nTOUCHING: b\n", "working"),
    ("Handoff", "DONE: x\n", "agent-review"),
    ("Review", "Verdict: PASS\n", "reviewing"),
]


def walk(world: World, task_id: str, until: str) -> None:
    """Write each section and make each move of ``STEPS`` up to the move to ``until``."""
    for heading, text, status in STEPS:
        world.edit(task_id, heading, text)
        world.ok("task", "update", task_id, "--status", status)
        if status == until:
            return


def test_cancel_with_uncommitted_work_is_refused_then_forced_and_restored(world: World) -> None:
    task_id, worktree = held(world, "keep-me", "Do not lose this")
    (worktree / "precious.txt").write_text("hours of work\n")
    tip = git(world.repo, "rev-parse", layout.TASKS_REF)
    refused = world.orange("task", "cancel", task_id, "--yes")
    assert refused.code == 1 and "unsaved work" in refused.err and "--force" in refused.err
    assert git(world.repo, "rev-parse", layout.TASKS_REF) == tip
    assert world.status(task_id) == "planning"
    forced = world.ok("task", "cancel", task_id, "--yes", "--force")
    assert f"refs/orange/snapshots/{task_id}/1" in forced.out
    assert world.status(task_id) == "cancelled"
    assert not (worktree / "precious.txt").exists()
    restored = world.ok("task", "restore", task_id)
    branch = restored.out.split("on branch ")[1].strip()
    assert git(world.repo, "show", f"{branch}:precious.txt") == "hours of work\n"


def test_update_over_unsaved_work_names_a_command_that_has_force(world: World) -> None:
    """`task update` has no --force: its refusal names the commands that do."""
    task_id, worktree = held(world, "keep-me-too", "Do not lose this either")
    (worktree / "precious.txt").write_text("hours of work\n")
    refused = world.orange("task", "update", task_id, "--status", "cancelled")
    assert refused.code == 1 and "unsaved work" in refused.err
    assert "pass --force" not in refused.err
    assert f"`orange task cancel {task_id} --force`" in refused.err
    assert world.status(task_id) == "planning"
    world.ok("task", "cancel", task_id, "--yes", "--force")  # the named command has it
    assert world.status(task_id) == "cancelled"


def test_prompt_reaches_the_agent_byte_for_byte(world: World) -> None:
    world.set_harness("hold", HOLD)
    summary = "Fix \"quotes\" 'and' $(touch pwned) `uname` $HOME ünïcødé ; && | > x;"
    task_id = world.create("prompt-test", summary, "--harness", "hold")
    worktree = Path(json.loads(world.ok("task", "show", task_id, "--json").out)["workspace_path"])
    received = wait_for(
        lambda: (worktree / "argv.txt").exists() and (worktree / "argv.txt").read_text(),
        what="the prompt",
    )
    from orange.engine.catalog import load_named
    from orange.engine.prompts import build_prompt

    expected = build_prompt(
        load_named("default").prompts["worker"], dict(world.task(task_id).fields)
    )
    assert received == expected
    assert summary in received and "\n" in received
    assert not (worktree / "pwned").exists() and not (world.repo / "pwned").exists()


MARKER = "pwned"


def markers(world: World, root: Path) -> list[Path]:
    """Every file named like the marker under the test's temp dir (repo, worktrees,
    ORANGE_HOME, HOME) and in this process's working directory."""
    return [*root.rglob(f"{MARKER}*"), *Path.cwd().glob(f"{MARKER}*")]


@pytest.mark.parametrize(
    "branch",
    [
        "semi;colon",
        "$(touch${IFS}pwned)",
        "back`touch${IFS}pwned`",
        "a&&touch${IFS}pwned||b>c",
        "quote'\"pwned",
    ],
    ids=["semicolon", "subshell", "backtick", "and-or-redirect", "quotes"],
)
def test_legal_hostile_branch_names_are_taken_literally(
    world: World, tmp_path: Path, branch: str
) -> None:
    """Names git allows are accepted as they are: the task's branch, the worktree's
    checked-out branch and its tmux session all come from the literal name, and no
    shell ever runs the text."""
    assert git(world.repo, "check-ref-format", "--branch", branch).strip() == branch
    world.set_harness("hold", HOLD)
    created = world.orange("task", "create", "--harness", "hold", "--json", "--", branch, "s")
    assert created.code == 0, created.err
    task_id = json.loads(created.out)["id"]
    task = world.task(task_id)
    assert task.branch == branch
    worktree = orange_home() / "workspaces" / task.str_field("workspace")
    wait_for(lambda: (worktree / "argv.txt").exists(), what="the agent to start")
    assert git(worktree, "symbolic-ref", "--short", "HEAD").strip() == branch
    assert git(world.repo, "rev-parse", "--verify", "-q", f"refs/heads/{branch}").strip()
    session = task.str_field("tmux_session")
    assert "." not in session and ":" not in session
    assert world.tmux("list-sessions", "-F", "#{session_name}").splitlines() == [session]
    assert markers(world, tmp_path) == []


# Each refused in turn in one project: a refusal leaves nothing behind for the next.
REFUSED = [
    "-leading",
    "dot..dot",
    "colon:name",
    "two words",
    "@",
    "HEAD",
    "refs/heads/main",
    "heads/main",
    "tags/v1",
    "remotes/origin/main",
    "orange/tasks",
    "FETCH_HEAD",
]


def test_branch_names_git_refuses_or_that_read_as_something_else_are_refused(
    world: World, tmp_path: Path
) -> None:
    world.set_harness("hold", HOLD)
    tip = git(world.repo, "rev-parse", "-q", "--verify", layout.TASKS_REF, check=False)
    for branch in REFUSED:
        refused = world.orange("task", "create", "--harness", "hold", "--", branch, "s")
        assert refused.code == 1, (branch, refused.err)
        assert refused.err.startswith(f"orange: {branch!r} is not a valid branch name")
        assert refused.err.count("\n") == 1 and refused.out == ""
        assert git(world.repo, "rev-parse", "-q", "--verify", layout.TASKS_REF, check=False) == tip
        assert json.loads(world.ok("task", "list", "--json").out)["tasks"] == []
        assert world.tmux("list-sessions", "-F", "#{session_name}") == ""
        assert not (orange_home() / "workspaces").exists() or not any(
            (orange_home() / "workspaces").iterdir()
        )
        assert markers(world, tmp_path) == []


def test_two_agents_transitioning_at_once_both_land(world: World) -> None:
    world.set_harness("hold", HOLD)
    a = world.create("race-a", "A", "--harness", "hold")
    b = world.create("race-b", "B", "--harness", "hold")
    for task_id in (a, b):
        world.edit(task_id, "Plan", "APPROACH: go\nTOUCHING: x\n")
    results = {}

    def go(task_id: str) -> None:
        results[task_id] = world.process("task", "update", task_id, "--status", "working")

    threads = [threading.Thread(target=go, args=(t,)) for t in (a, b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(r.code == 0 for r in results.values()), {k: v.err for k, v in results.items()}
    assert world.status(a) == world.status(b) == "working"


def test_request_changes_keeps_the_agents_unsaved_edits(world: World) -> None:
    task_id, worktree = held(world, "edits", "Edits")
    copy = worktree / "TASK.md"
    walk(world, task_id, "reviewing")
    # The agent is writing notes in its working copy, not yet taken into the ref ...
    copy.write_text(copy.read_text() + "\n## Notes\n\nagent's unsaved thought\n")
    # ... when a human requests changes.
    world.ok("task", "request-changes", task_id, "--message", "Please rename the flag")
    ref_body = world.task(task_id).body
    assert "Please rename the flag" in ref_body
    copy_text = copy.read_text()
    assert "agent's unsaved thought" in copy_text and "Please rename the flag" in copy_text
    # The agent's next call takes its copy in: both words are in the ref.
    world.ok("task", "update", task_id, "--summary", "Edits, renamed")
    final = world.task(task_id).body
    assert "agent's unsaved thought" in final and "Please rename the flag" in final


def test_request_changes_respawns_a_dead_worker_with_the_feedback(world: World) -> None:
    """Issue 25, finding 6: a worker that died in reviewing was respawned by
    request-changes with its respawn prompt alone, which never says ## Feedback."""
    task_id, worktree = held(world, "dead-fix", "Fix after a death")
    walk(world, task_id, "reviewing")
    worker = f"{world.task(task_id).str_field('tmux_session')}:worker"
    os.kill(int(world.tmux("display-message", "-p", "-t", worker, "#{pane_pid}")), SIGKILL)

    def dead() -> bool:
        return world.tmux("display-message", "-p", "-t", worker, "#{pane_dead}").strip() == "1"

    wait_for(dead, 10, "the worker's death")
    world.ok("task", "request-changes", task_id, "--message", "Please rename the flag")

    def respawned() -> str | None:
        said = (worktree / "argv.txt").read_text()
        return said if said.startswith("# Resuming") else None

    prompt = wait_for(respawned, 15, "the respawned worker")
    assert "Read ## Feedback in TASK.md" in prompt
    assert world.status(task_id) == "working"


def test_commands_inside_a_workspace_infer_the_task(world: World) -> None:
    task_id, worktree = held(world, "infer-me", "Infer me")
    (worktree / "sub").mkdir()
    world.edit(task_id, "Plan", "APPROACH: a\nTOUCHING: b\n")
    moved = world.ok("task", "update", "--status", "working", cwd=worktree / "sub")
    assert f"task {task_id}: planning -> working" in moved.out


def test_cancel_refuses_committed_but_unpushed_work_and_force_snapshots_it(
    world: World,
) -> None:
    task_id, worktree = held(world, "unpushed", "Committed, not merged")
    (worktree / "work.txt").write_text("committed work\n")
    git(worktree, "add", "work.txt")
    git(worktree, "commit", "-q", "-m", "real work")
    refused = world.orange("task", "cancel", task_id, "--yes")
    assert refused.code == 1
    assert "1 commit on unpushed neither merged into main nor pushed" in refused.err
    assert world.status(task_id) == "planning"
    forced = world.ok("task", "cancel", task_id, "--yes", "--force")
    snapshot = f"refs/orange/snapshots/{task_id}/1"
    assert snapshot in forced.out
    assert git(world.repo, "show", f"{snapshot}:work.txt") == "committed work\n"


def test_notifying_a_dead_worker_respawns_it_with_its_respawn_prompt(world: World) -> None:
    task_id, worktree = held(world, "dead-worker", "Dead worker")
    walk(world, task_id, "agent-review")
    argv = worktree / "argv.txt"
    # The reviewer writes its argv when it has started: only then is the file ours to
    # clear (clearing it earlier let the reviewer's late write pass for the worker's).
    wait_for(
        lambda: argv.exists() and argv.read_text().startswith("# Review:"), what="the reviewer"
    )
    session = world.task(task_id).str_field("tmux_session")
    world.tmux("kill-window", "-t", f"{session}:worker")  # the worker dies during review
    argv.unlink()
    world.edit(task_id, "Review", "Verdict: FAIL\n\nAdd a test.\n")
    world.ok("task", "update", task_id, "--status", "working")
    prompt = wait_for(
        lambda: argv.exists() and argv.read_text(),
        what="the respawned worker",
    )
    assert prompt.startswith("# Resuming:") and "Review round: 1" in prompt
    assert world.task(task_id).str_field("attention") == ""
