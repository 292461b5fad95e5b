"""Worktrees made ready before the agent (docs/worktrees.md): the paths
where setup fails, times out or is not trusted, so no agent (no tmux) is ever started.

Real git worktrees, real setup processes; the harness named is never reached."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from orange.home import orange_home
from orange.runtime import settingup
from orange.store.store import TaskStore
from tests.conftest import Cli, git, orange_bin
from tests.helpers import retry_until

HOLD = {"command": ["sh", "-c", "sleep 600", "{prompt}"]}


@pytest.fixture
def project(repo: Path, cli: Cli) -> Path:
    orange_home().mkdir(parents=True, exist_ok=True)
    (orange_home() / "config.yml").write_text(yaml.safe_dump({"harnesses": {"hold": HOLD}}))
    cli.ok("project", "add", "--pool-size", "1", cwd=repo)
    return repo


def _slot(cli: Cli) -> dict[str, object]:
    rows = cli.ok("workspace", "list", "--json").json()["workspaces"]
    assert len(rows) == 1
    return dict(rows[0])


def test_a_failing_setup_leaves_the_task_pending_and_the_worktree_free(
    project: Path, cli: Cli
) -> None:
    cli.ok("project", "update", "--setup", "echo begun > begun.txt", "--setup", "exit 3")
    result = cli("task", "create", "fix-it", "Fix it", "--harness", "hold", "--json")
    assert result.code == 1
    task_id = result.json()["id"]
    error = result.json()["spawn_error"]
    log = orange_home() / "logs" / "worktrees" / "proj" / f"{task_id}.log"
    assert error == (
        f"setup command 'exit 3' exited with status 3 in workspace proj--1 (see {log})"
    )
    assert result.err.strip().count("\n") == 0  # one line
    assert TaskStore.open(project).get(task_id).status == "pending"
    slot = _slot(cli)
    assert slot["task"] is None and slot["setting_up"] is False
    worktree = Path(str(slot["path"]))
    assert git(worktree, "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached again
    assert not (worktree / "begun.txt").exists()  # what setup made went with the reset
    assert settingup.live("proj") == []
    assert "$ echo begun > begun.txt\n$ exit 3\n" in log.read_text()
    shown = cli.ok("task", "show", task_id, "--json").json()
    assert shown["setup_log"] == str(log)


def test_a_setup_past_its_timeout_is_stopped(project: Path, cli: Cli) -> None:
    config = {"harnesses": {"hold": HOLD}, "setup_timeout": 1}
    (orange_home() / "config.yml").write_text(yaml.safe_dump(config))
    cli.ok("project", "update", "--setup", "sleep 60")
    started = time.monotonic()
    result = cli("task", "create", "slow", "Slow", "--harness", "hold", "--json")
    assert time.monotonic() - started < 20
    assert result.code == 1
    assert (
        "setup command 'sleep 60' ran past 1 s and was stopped in workspace proj--1"
        in (result.json()["spawn_error"])
    )
    assert TaskStore.open(project).get(result.json()["id"]).status == "pending"
    assert _slot(cli)["task"] is None


def test_the_repository_file_runs_only_once_its_content_is_trusted(
    project: Path, cli: Cli, tmp_path: Path
) -> None:
    events = tmp_path / "events"
    record = f"echo repo-$ORANGE_WORKSPACE-$ORANGE_WORKSPACE_INDEX >> {events}"
    shared = {"setup": [record], "copy": [".env"]}
    (project / ".orange").mkdir()
    (project / ".orange" / "worktree.yml").write_text(yaml.safe_dump(shared))
    git(project, "add", ".orange")
    git(project, "commit", "-q", "-m", "share the worktree set-up")
    (project / ".env").write_text("KEY=1\n")  # untracked: copied once the file is trusted
    # The local setup fails after the repository's, so the spawn stops before any agent.
    cli.ok("project", "update", "--setup", f"if [ -e .env ]; then echo env >> {events}; fi; exit 1")

    first = cli("task", "create", "t1", "One", "--harness", "hold")
    assert first.code == 1
    warnings = [line for line in first.err.splitlines() if "not trusted" in line]
    assert warnings == [
        "orange: proj's .orange/worktree.yml is not trusted on this host: its commands do "
        "not run and its files are not copied (review and trust it with "
        "`orange project trust-setup proj`)"
    ]
    assert not events.exists()

    listed = cli.ok("project", "trust-setup", "--yes")
    assert "setup: echo repo-$ORANGE_WORKSPACE-$ORANGE_WORKSPACE_INDEX" in listed.out
    task_id = json.loads(cli("task", "list", "--json").out)["tasks"][0]["id"]
    assert cli("task", "spawn", task_id).code == 1
    assert events.read_text() == "repo-proj--1-0\nenv\n"
    assert cli.ok("project", "trust-setup", "--json").json()["already"] is True

    shared["setup"] = [f"echo changed >> {events}"]
    (project / ".orange" / "worktree.yml").write_text(yaml.safe_dump(shared))
    git(project, "commit", "-q", "-am", "change the set-up")
    again = cli("task", "spawn", task_id)
    assert again.code == 1
    assert "is not trusted on this host" in again.err
    assert events.read_text() == "repo-proj--1-0\nenv\n"


@pytest.mark.parametrize("glob", ["../secret", "/etc/passwd", "a/../../b"], ids=str)
def test_a_copy_glob_reaching_outside_the_checkout_is_refused(
    project: Path, cli: Cli, glob: str
) -> None:
    before = (orange_home() / "projects.json").read_text()
    result = cli("project", "update", "--copy", glob, "--json")
    assert result.code == 1
    assert "reaches outside the checkout" in result.json()["error"]
    assert (orange_home() / "projects.json").read_text() == before


def test_while_its_setup_runs_a_task_shows_as_setting_up_and_holds_its_slot(
    project: Path, cli: Cli, tmp_path: Path
) -> None:
    began, go = tmp_path / "began", tmp_path / "go"
    wait = f"touch {began}; while [ ! -e {go} ]; do sleep 0.05; done"
    cli.ok("project", "update", "--setup", wait, "--setup", "exit 1")
    creating = subprocess.Popen(
        [orange_bin(), "task", "create", "first", "First", "--harness", "hold"],
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        retry_until(began.exists, timeout=30)
        assert "pending (setting up)" in cli.ok("task", "list").out
        (listed,) = cli.ok("task", "list", "--json").json()["tasks"]
        assert listed["setting_up"] is True
        slot = _slot(cli)
        assert (slot["task"], slot["setting_up"]) == (listed["id"], True)
        assert "(setting up)" in cli.ok("workspace", "list").out
        # The one slot is taken while its move is not committed yet: the next task waits.
        second = cli("task", "create", "second", "Second", "--harness", "hold", "--json")
        assert (second.code, second.json().get("queued")) == (0, True)
    finally:
        go.touch()
        creating.communicate(timeout=60)
    assert creating.returncode == 1
    assert "setting up" not in cli.ok("task", "list").out
    assert "setting_up" not in json.dumps(cli.ok("task", "list", "--json").json())


def _release_branch(repo: Path) -> str:
    """A ``release`` branch with a commit the default branch lacks; its tip."""
    git(repo, "checkout", "-q", "-b", "release")
    (repo / "RELEASE").write_text("1.0\n")
    git(repo, "add", "RELEASE")
    git(repo, "commit", "-q", "-m", "release 1.0")
    git(repo, "checkout", "-q", "main")
    return git(repo, "rev-parse", "release").strip()


def test_an_unknown_base_is_an_error_at_create(project: Path, cli: Cli) -> None:
    result = cli("task", "create", "fix", "Fix", "--base", "nope", "--no-spawn", "--json")
    assert result.code == 1
    assert result.json() == {
        "error": "no branch 'nope' in proj, here or on origin; give an existing branch to "
        "--base (see `git branch -a`)"
    }
    assert cli.ok("task", "list", "--json").json()["tasks"] == []


def test_a_task_with_a_base_merges_into_it(project: Path, cli: Cli) -> None:
    release = _release_branch(project)
    main = git(project, "rev-parse", "main").strip()
    git(project, "branch", "fix", "release")
    git(project, "worktree", "add", "-q", str(project.parent / "fixing"), "fix")
    (project.parent / "fixing" / "FIX").write_text("fixed\n")
    git(project.parent / "fixing", "add", "FIX")
    git(project.parent / "fixing", "commit", "-q", "-m", "the fix")
    created = cli.ok(
        "task", "create", "fix", "Fix", "--base", "release", "--status", "reviewing",
        "--no-spawn", "--json",
    ).json()  # fmt: skip
    assert created["base"] == "release"
    merged = cli.ok("task", "merge", created["id"])
    assert "fast-forwarded release to fix" in merged.out
    assert git(project, "rev-parse", "release") == git(project, "rev-parse", "fix")
    assert git(project, "rev-parse", "release^").strip() == release
    assert git(project, "rev-parse", "main").strip() == main  # the default branch untouched


def test_trust_setup_asked_on_a_terminal_shows_the_commands_first(project: Path) -> None:
    """With --json too: the commands and the question on stderr, one JSON object out."""
    (project / ".orange").mkdir()
    (project / ".orange" / "worktree.yml").write_text("setup: [make deps]\n")
    main, terminal = os.openpty()
    try:
        asking = subprocess.Popen(
            [orange_bin(), "project", "trust-setup", "--json"],
            cwd=project,
            stdin=terminal,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        os.write(main, b"y\n")
        out, err = asking.communicate(timeout=60)
    finally:
        os.close(main)
        os.close(terminal)
    assert asking.returncode == 0, err
    assert json.loads(out)["trusted"][0]["name"] == "proj:.orange/worktree.yml"
    assert err.index("setup: make deps") < err.index("run these commands")
