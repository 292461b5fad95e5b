"""Installing the shims, chaining a user's hook, and the hooks of a code checkout."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from orange.githooks import impl as hookimpl
from orange.githooks import shims as githooks
from orange.store.repo import open_repo
from tests.conftest import Cli, git, orange_bin

USER_HOOK = '#!/bin/sh\necho "ran $*" >> "$(git rev-parse --git-common-dir)/user-hook-ran"\n'


def commit(
    repo: Path, name: str, text: str = "x\n", *, force: bool = False, path: str | None = None
) -> tuple[int, str]:
    """Stage and commit one file with real git (which runs the shims); ``path``: the
    PATH git and its hooks run with."""
    (repo / name).parent.mkdir(parents=True, exist_ok=True)
    (repo / name).write_text(text)
    git(repo, "add", *(["-f"] if force else []), name)
    env = {**os.environ, "PATH": path} if path is not None else None
    result = subprocess.run(
        ["git", "commit", "-q", "-m", f"add {name}"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    return result.returncode, result.stderr


def shims(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if githooks.is_orange_shim(p))


@pytest.fixture
def project(cli: Cli, repo: Path) -> Path:
    cli.ok("project", "add", cwd=repo)
    return repo


def test_install_bakes_this_orange_and_is_idempotent(cli: Cli, project: Path) -> None:
    hooks = project / ".git" / "hooks"
    cli.ok("hooks", "install", cwd=project)
    cli.ok("hooks", "install", "--project", "proj", cwd=project)
    assert shims(hooks) == sorted(githooks.PROJECT_HOOKS)
    text = (hooks / "pre-commit").read_text()
    assert f"ORANGE_BIN={orange_bin()}\n" in text
    assert not list(hooks.glob("*.orange-chained"))


def test_a_user_hook_is_chained_once_and_restored(cli: Cli, project: Path) -> None:
    hooks = project / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "pre-commit").write_text(USER_HOOK)
    (hooks / "pre-commit").chmod(0o755)
    githooks.install_hooks(project)
    githooks.install_hooks(project)
    assert (hooks / "pre-commit.orange-chained").read_text() == USER_HOOK
    assert githooks.is_orange_shim(hooks / "pre-commit")

    assert commit(project, "a.txt")[0] == 0
    assert (project / ".git" / "user-hook-ran").read_text().count("ran") == 1

    # the user's hook failing still blocks the commit
    (hooks / "pre-commit.orange-chained").write_text("#!/bin/sh\necho no >&2\nexit 3\n")
    code, err = commit(project, "b.txt")
    assert code != 0 and "no" in err

    cli.ok("hooks", "uninstall", cwd=project)
    assert (hooks / "pre-commit").read_text() == "#!/bin/sh\necho no >&2\nexit 3\n"
    assert shims(hooks) == []
    assert not list(hooks.glob("*.orange-chained"))


def test_install_and_uninstall_speak_json(cli: Cli, project: Path) -> None:
    hooks = project / ".git" / "hooks"
    cli.ok("hooks", "uninstall", cwd=project)
    installed = cli.ok("hooks", "install", "--json", cwd=project).json()
    assert sorted(installed["installed"]) == [
        str(hooks / name) for name in sorted(githooks.PROJECT_HOOKS)
    ]
    removed = cli.ok("hooks", "uninstall", "--json", cwd=project).json()
    assert sorted(removed["removed"]) == sorted(installed["installed"])
    assert cli.ok("hooks", "uninstall", "--json", cwd=project).json() == {"removed": []}
    refused = cli("hooks", "install", "--trusted-workflows", "x", "--json", cwd=project)
    assert refused.code == 1 and "--trusted-workflows" in refused.json()["error"]


def test_project_add_installs_the_hooks(project: Path) -> None:
    assert shims(project / ".git" / "hooks") == [
        "post-commit",
        "post-merge",
        "pre-commit",
        "pre-merge-commit",
        "reference-transaction",
    ]


def test_core_hooks_path_is_respected(cli: Cli, repo: Path) -> None:
    project = repo
    git(project, "config", "core.hooksPath", "my-hooks")
    cli.ok("project", "add", cwd=repo)
    written = githooks.install_hooks(project)
    assert {Path(p).parent for p in written} == {project / "my-hooks"}
    assert not (project / ".git" / "hooks" / "pre-commit").exists()
    # git runs them from there: the chained-hook protection works
    code, err = commit(project, "TASK.md", force=True)
    assert code == 1 and "TASK.md is Orange's file" in err


def test_a_linked_worktree_uses_the_common_hooks(project: Path, tmp_path: Path) -> None:
    git(project, "worktree", "add", "-q", str(tmp_path / "wt"))
    written = githooks.install_hooks(tmp_path / "wt")
    assert {Path(p).parent for p in written} == {project / ".git" / "hooks"}


def test_task_worktree_refuses_orange_files(project: Path, tmp_path: Path) -> None:
    githooks.install_hooks(project)
    worktree = tmp_path / "wt"
    git(project, "worktree", "add", "-q", "-b", "feature", str(worktree))
    assert commit(worktree, "src/app.py")[0] == 0  # ordinary work commits
    # a minimal PATH: the shim finds this Orange by the path baked into it
    code, err = commit(worktree, "TASK.md", force=True, path="/usr/bin:/bin")
    assert code == 1
    assert "TASK.md is Orange's file" in err
    git(worktree, "rm", "-q", "--cached", "TASK.md")
    for name in (".claude/settings.json", "opencode.json", ".orange-task", "docs/TASK.md"):
        (worktree / name).parent.mkdir(parents=True, exist_ok=True)
        (worktree / name).write_text("x\n")
        git(worktree, "add", "-f", name)
    problems = hookimpl.check_worktree_commit(open_repo(worktree))
    assert [p.split()[0] for p in problems] == [
        ".claude/settings.json",
        ".orange-task",
        "opencode.json",
    ]


def test_a_project_may_track_its_own_task_md(cli: Cli, repo: Path) -> None:
    project = repo
    assert commit(project, "TASK.md", "the project's own\n")[0] == 0  # before the hooks
    cli.ok("project", "add", cwd=repo)  # installs them
    code, err = commit(project, "TASK.md", "edited\n")
    assert code == 0, err


def _wake_lines(repo: Path) -> int:
    wake = repo / ".git" / "orange" / "wake"
    return len(wake.read_text().splitlines()) if wake.exists() else 0


RECORDING_ORANGE = '#!/bin/sh\necho "$*" >> "${0%/*}/calls"\n'


def run_to_the_end(repo: Path, *args: str) -> None:
    """Run ``git ARGS`` and return only once every process it started has ended, the
    hooks' background children included: they all inherit the write end of a pipe
    (nothing in a shim closes it), so its read end sees EOF exactly then."""
    read_end, write_end = os.pipe()
    try:
        result = subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, pass_fds=(write_end,)
        )
        os.close(write_end)
        assert result.returncode == 0, result.stderr
        assert os.read(read_end, 1) == b""  # blocks until the last holder exits
    finally:
        os.close(read_end)


def test_reference_transaction_starts_orange_only_for_orange_refs(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shim's filter, observed synchronously: the shim runs the Orange baked into
    it, here a script recording each call."""
    fake = tmp_path / "fake-bin" / "orange"
    fake.parent.mkdir()
    fake.write_text(RECORDING_ORANGE)
    fake.chmod(0o755)
    calls = fake.parent / "calls"
    monkeypatch.setattr(githooks, "orange_executable", lambda: str(fake))
    githooks.install_hooks(project)

    def reference_transactions() -> list[str]:
        lines = calls.read_text().splitlines() if calls.exists() else []
        return [line for line in lines if "reference-transaction" in line]

    (project / "a.txt").write_text("x\n")
    git(project, "add", "a.txt")
    run_to_the_end(project, "commit", "-q", "-m", "code")
    run_to_the_end(project, "branch", "other")
    run_to_the_end(project, "update-ref", "refs/heads/third", "HEAD")
    assert reference_transactions() == []  # ordinary ref updates never start Orange

    run_to_the_end(project, "update-ref", "refs/orange/tasks", "HEAD")
    assert reference_transactions() == ["hook-impl reference-transaction committed"]


def test_reference_transaction_wakes_the_monitor(project: Path) -> None:
    """The real Orange behind the shim: git moving refs/orange/* wakes the monitor."""
    githooks.install_hooks(project)
    head = git(project, "rev-parse", "HEAD").strip()
    run_to_the_end(project, "update-ref", "refs/orange/tasks", head)
    assert _wake_lines(project) >= 1


def test_reference_transaction_chains_with_stdin(project: Path) -> None:
    hooks = project / ".git" / "hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "reference-transaction").write_text(
        '#!/bin/sh\ncat >> "$(git rev-parse --git-common-dir)/seen-$1"\n'
    )
    (hooks / "reference-transaction").chmod(0o755)
    githooks.install_hooks(project)
    git(project, "branch", "topic")
    seen = (project / ".git" / "seen-prepared").read_text()
    assert "refs/heads/topic" in seen
    # a chained hook refusing the transaction still refuses it
    (hooks / "reference-transaction.orange-chained").write_text(
        '#!/bin/sh\ncat >/dev/null\n[ "$1" = prepared ] && exit 1\nexit 0\n'
    )
    result = subprocess.run(
        ["git", "branch", "blocked"], cwd=project, capture_output=True, check=False
    )
    assert result.returncode != 0
    assert git(project, "branch", "--list", "blocked") == ""


def test_server_install_into_a_bare_repository(cli: Cli, tmp_path: Path) -> None:
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    result = cli.ok("hooks", "install", "--server", str(hub), cwd=tmp_path)
    assert str(hub / "hooks" / "update") in result.out
    assert shims(hub / "hooks") == ["update"]
