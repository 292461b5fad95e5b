"""Making a worktree ready: copying local files, running commands, ports, the repo file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from orange.errors import InvalidInput
from orange.home import orange_home
from orange.projects import Project
from orange.runtime import ready
from orange.runtime.prepare import (
    Settings,
    SetupFailed,
    copy_local_files,
    read_repo_file,
    run_commands,
    slot_port,
)
from tests.conftest import Cli, git
from tests.processes import wait_gone


@pytest.fixture
def trees(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    (repo / ".gitignore").write_text(".env\nsecrets/\n")
    (repo / "config.json").write_text("{}\n")
    git(repo, "add", ".gitignore", "config.json")
    git(repo, "commit", "-q", "-m", "ignore")
    worktree = tmp_path / "wt"
    git(repo, "worktree", "add", "-q", "-b", "task", str(worktree))
    return repo, worktree


def test_copies_ignored_and_untracked_files_never_tracked_ones(trees: tuple[Path, Path]) -> None:
    main, worktree = trees
    (main / ".env").write_text("KEY=1\n")
    (main / "secrets").mkdir()
    (main / "secrets" / "a.key").write_text("a\n")
    (main / "local.txt").write_text("untracked\n")
    (main / "config.json").write_text('{"changed": "locally"}\n')  # tracked: never copied
    os.symlink(".env", main / ".env.link")
    copied = copy_local_files(main, worktree, [".env*", "secrets", "local.txt", "config.json"])
    assert copied == [".env", ".env.link", "local.txt", "secrets/a.key"]
    assert (worktree / ".env").read_text() == "KEY=1\n"
    assert os.readlink(worktree / ".env.link") == ".env"  # a link stays a link
    assert json.loads((worktree / "config.json").read_text()) == {}


def test_a_file_an_earlier_task_left_is_replaced_by_the_main_checkouts(
    trees: tuple[Path, Path], tmp_path: Path
) -> None:
    """A reused worktree keeps ignored files (the reset cleans only untracked ones): its
    next task gets the main checkout's .env as it is now, not the last task's."""
    main, worktree = trees
    (main / ".env").write_text("rotated\n")
    (main / "secrets").mkdir()
    (main / "secrets" / "a.key").write_text("new\n")
    (worktree / ".env").write_text("stale\n")
    outside = tmp_path / "elsewhere.key"
    outside.write_text("not ours\n")
    (worktree / "secrets").mkdir()
    os.symlink(outside, worktree / "secrets" / "a.key")  # an earlier agent's link
    assert copy_local_files(main, worktree, [".env", "secrets"]) == [".env", "secrets/a.key"]
    assert (worktree / ".env").read_text() == "rotated\n"
    assert not (worktree / "secrets" / "a.key").is_symlink()
    assert (worktree / "secrets" / "a.key").read_text() == "new\n"
    assert outside.read_text() == "not ours\n"  # replaced the link, not written through it


def test_nothing_outside_the_checkout_is_read(trees: tuple[Path, Path], tmp_path: Path) -> None:
    main, worktree = trees
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "passwd").write_text("root\n")
    os.symlink(outside, main / "escape")
    assert copy_local_files(main, worktree, ["escape/*"]) == []
    for glob in ("../outside/passwd", "/etc/passwd", "a/../../x", "~/x"):
        with pytest.raises(InvalidInput, match="reaches outside the checkout"):
            copy_local_files(main, worktree, [glob])


def test_nothing_is_written_outside_the_worktree(trees: tuple[Path, Path], tmp_path: Path) -> None:
    """A branch (pushed by anyone) that makes a folder a link elsewhere does not get the
    local files copied through it."""
    main, worktree = trees
    outside = tmp_path / "outside"
    outside.mkdir()
    (main / "config").mkdir()
    (main / "config" / "dev.local").write_text("KEY=1\n")
    os.symlink(outside, worktree / "config")
    git(worktree, "add", "config")
    git(worktree, "commit", "-q", "-m", "config is a link")
    assert copy_local_files(main, worktree, ["config/*.local"]) == []
    assert list(outside.iterdir()) == []


def test_commands_run_in_order_with_their_environment_and_a_log(tmp_path: Path) -> None:
    log = tmp_path / "logs" / "setup.log"
    run_commands(
        ["echo one > order", "echo two >> order", 'echo "port=$ORANGE_PORT"'],
        tmp_path,
        {"ORANGE_PORT": "4010"},
        log,
    )
    assert (tmp_path / "order").read_text() == "one\ntwo\n"
    assert "port=4010" in log.read_text() and "$ echo two >> order" in log.read_text()


def test_a_command_does_not_act_as_the_agent_or_git_hook_whose_move_started_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ORANGE_AGENT_ROLE", "worker")
    monkeypatch.setenv("GIT_DIR", "/somewhere/else")
    log = tmp_path / "setup.log"
    run_commands(['echo "role=${ORANGE_AGENT_ROLE-none} git=${GIT_DIR-none}"'], tmp_path, {}, log)
    assert "role=none git=none\n" in log.read_text()


def test_a_failing_command_stops_the_rest_and_names_itself(tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    with pytest.raises(SetupFailed) as failed:
        run_commands(["echo broken; exit 3", "touch never"], tmp_path, {}, log)
    assert (
        str(failed.value) == f"setup command 'echo broken; exit 3' exited with status 3 (see {log})"
    )
    assert not (tmp_path / "never").exists() and "broken" in log.read_text()


def test_a_command_past_its_timeout_is_stopped_with_its_children(tmp_path: Path) -> None:
    log = tmp_path / "setup.log"
    with pytest.raises(SetupFailed, match=r"ran past 0\.5 s"):
        run_commands(["sleep 30 & wait"], tmp_path, {"MARK": str(tmp_path)}, log, timeout=0.5)
    assert wait_gone(tmp_path, timeout=5) == []  # the background sleep was stopped too


def test_ports_per_slot_local_settings_first() -> None:
    project = Project("p", "/x", "main", pool_size=3, port_base=4000)
    assert [slot_port(project, i) for i in range(3)] == [4000, 4010, 4020]
    shared = Settings(port_base=5000, port_stride=2)
    assert slot_port(Project("p", "/x", "main"), 2, shared) == 5004
    assert slot_port(project, 1, shared) == 4010
    assert slot_port(Project("p", "/x", "main"), 1) is None


def test_the_repository_file_is_read_and_checked(tmp_path: Path) -> None:
    assert read_repo_file(tmp_path) is None
    (tmp_path / ".orange").mkdir()
    path = tmp_path / ".orange" / "worktree.yml"
    path.write_text("copy: [.env]\nsetup: [npm ci]\nports: {base: 3000, stride: 5}\n")
    found = read_repo_file(tmp_path)
    assert found is not None and found.text == path.read_text()
    assert found.settings == Settings((".env",), ("npm ci",), (), 3000, 5)
    for bad, why in (
        ("copy: [../x]\n", "reaches outside the checkout"),
        ("run: [x]\n", "unknown key run"),
        ("setup: npm ci\n", "setup must be a list"),
        ("ports: {base: 70000}\n", "ports.base must be a port number"),
        ("a: &a [1]\nb: *a\n", "anchors or aliases"),
    ):
        path.write_text(bad)
        with pytest.raises(InvalidInput, match=why):
            read_repo_file(tmp_path)


def test_project_update_keeps_the_settings_and_refuses_escaping_globs(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    cli.ok("project", "update", "--copy", ".env", "--copy", "config/*.local", "--setup", "true")
    cli.ok("project", "update", "--copy", ".env", "--teardown", "rm -f x", "--port-base", "4000")
    shown = json.loads(cli.ok("project", "list", "--json").out)["projects"][0]
    assert shown["copy"] == [".env", "config/*.local"]
    assert (shown["setup"], shown["teardown"]) == (["true"], ["rm -f x"])
    assert (shown["port_base"], shown["port_stride"]) == (4000, 10)
    for glob in ("../secrets", "/etc/passwd"):
        refused = cli("project", "update", "--copy", glob)
        assert refused.code == 1 and "reaches outside the checkout" in refused.err
    too_high = cli("project", "update", "--port-base", "65530")
    assert too_high.code == 1 and "not all valid ports" in too_high.err
    negative = cli("project", "update", "--port-base", "-1")
    assert negative.err == "orange: port base must be 1 or more (got -1)\n"
    no_stride = cli("project", "update", "--port-stride", "0")
    assert no_stride.code == 1 and "port stride must be at least 1 (got 0)" in no_stride.err
    empty = cli("project", "update", "--copy", "")
    assert empty.code == 1 and "a copy glob is empty" in empty.err
    cli.ok("project", "update", "--clear-copy", "--clear-ports", "--copy", ".env.local")
    shown = json.loads(cli.ok("project", "list", "--json").out)["projects"][0]
    assert shown["copy"] == [".env.local"] and shown["port_base"] is None
    assert shown["setup"] == ["true"]
    cli.ok("project", "update", "--clear-setup", "--setup", "make", "--clear-teardown")
    shown = json.loads(cli.ok("project", "list", "--json").out)["projects"][0]
    assert (shown["setup"], shown["teardown"], shown["copy"]) == (["make"], [], [".env.local"])


def test_each_command_may_run_ten_minutes_unless_configured() -> None:
    assert ready.timeout() == 600
    (orange_home() / "config.yml").parent.mkdir(parents=True, exist_ok=True)
    (orange_home() / "config.yml").write_text("setup_timeout: 30\n")
    assert ready.timeout() == 30
