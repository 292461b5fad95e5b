"""Hermetic test environment: each test gets its own HOME, ORANGE_HOME and git identity."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import Phase, settings

from orange.cli.main import run as cli_run
from orange.runtime.tmux import Tmux
from tests.processes import kill_all, wait_gone

REPO_ROOT = Path(__file__).resolve().parents[1]


def hermetic_env(root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The environment every test runs in (its HOME under ``root``, returned): the
    autouse `hermetic` fixture's, and a module-scoped set-up's while it builds what
    its tests share."""
    home = root / "home"
    home.mkdir()
    for key in list(os.environ):
        if key.startswith(("GIT_", "ORANGE_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ORANGE_HOME", str(home / "orange"))
    monkeypatch.setenv("ORANGE_HOST", "testhost")
    # No background monitor unless a test asks for one (the e2e `world` does): it would
    # react to set-up tasks whose agents never ran, racing the test's own writes.
    monkeypatch.setenv("ORANGE_MONITOR", "off")
    # Desktop notifications go to a silent stand-in: a developer's `make test` shows no
    # pop-ups (tests of notifying put their own recording notify-send first on PATH).
    quiet = root / "quiet-bin"
    quiet.mkdir()
    (quiet / "notify-send").write_text("#!/bin/sh\nexit 0\n")
    (quiet / "notify-send").chmod(0o755)
    monkeypatch.setenv("PATH", f"{quiet}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
    monkeypatch.setenv("GIT_AUTHOR_NAME", "Test User")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "test@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "Test User")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "test@example.com")
    # Output as a pipe shows it, whatever terminal (or pytest-xdist worker) runs the suite.
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.delenv("LINES", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    monkeypatch.delenv("VISUAL", raising=False)
    (home / ".gitconfig").write_text(
        "[user]\n\tname = Test User\n\temail = test@example.com\n"
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
    )
    return home


@pytest.fixture(autouse=True)
def hermetic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    home = hermetic_env(tmp_path, monkeypatch)
    yield home
    _no_process_outlives(tmp_path)


# A process may be on its way out when its test ends (told to stop, tmux server killed).
LEFTOVER_GRACE = float(os.environ.get("ORANGE_TEST_LEFTOVER_GRACE", "10"))


def _no_process_outlives(tmp_path: Path) -> None:
    """Fail the test (at teardown) if anything it started still runs: a monitor, a tmux
    server, an agent, anything whose environment or command line points into its temp
    dir.  They are killed, and named in the failure."""
    left = wait_gone(tmp_path, LEFTOVER_GRACE)
    if left:
        kill_all(left)
        names = "\n  ".join(str(p) for p in left)
        pytest.fail(f"processes outlived the test (killed now):\n  {names}", pytrace=False)


def git(cwd: Path | str, *args: str, check: bool = True) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {result.stderr}")
    return result.stdout


def packs(repo: Path) -> dict[str, set[str]]:
    """Each pack of a repository (by name) -> the ids of the objects it holds."""
    found = {}
    for index in (repo / ".git" / "objects" / "pack").glob("pack-*.idx"):
        listed = git(repo, "verify-pack", "-v", str(index)).splitlines()
        found[index.name] = {line.split()[0] for line in listed if len(line.split()[0]) == 40}
    return found


def _git_bytes(repo: Path, *args: str, given: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", *args], cwd=repo, input=given, capture_output=True, check=True
    ).stdout


def copy_task_folder(repo: Path, task_id: str, places: list[tuple[bytes, bytes]]) -> None:
    """Commit, with plain git, a copy of a task's folder at ``tasks/<shard>/<name>`` for
    each (shard, name) given as bytes: git takes any bytes but NUL and "/" in a name, so
    a teammate's hand-made ref may hold names that are not UTF-8 text."""
    ref = "refs/orange/tasks"
    sha = hashlib.sha1(task_id.encode()).hexdigest()[:2]  # as orange.store.layout shards
    folder = _git_bytes(repo, "rev-parse", f"{ref}:tasks/{sha}/{task_id}").strip()

    def listing(path: str) -> dict[bytes, bytes]:  # name -> its ls-tree line
        found = _git_bytes(repo, "ls-tree", "-z", f"{ref}:{path}" if path else ref)
        return {line.split(b"\t", 1)[1]: line + b"\0" for line in found.split(b"\0") if line}

    def mktree(entries: dict[bytes, bytes]) -> bytes:
        return _git_bytes(repo, "mktree", "-z", given=b"".join(entries.values())).strip()

    shards = listing("tasks")
    for shard in {shard for shard, _name in places}:
        entries = listing(f"tasks/{shard.decode()}") if shard in shards else {}
        for _shard, name in (place for place in places if place[0] == shard):
            entries[name] = b"040000 tree " + folder + b"\t" + name + b"\0"
        shards[shard] = b"040000 tree " + mktree(entries) + b"\t" + shard + b"\0"
    root = listing("")
    root[b"tasks"] = b"040000 tree " + mktree(shards) + b"\ttasks\0"
    tree = mktree(root).decode()
    commit = git(repo, "commit-tree", "-p", ref, "-m", "copies by hand", tree).strip()
    git(repo, "update-ref", ref, commit)


def make_repo(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "-q", "-b", "main")
    (path / "README.md").write_text("# project\n")
    git(path, "add", "README.md")
    git(path, "commit", "-q", "-m", "initial commit")
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "proj")


@pytest.fixture
def tmux(monkeypatch: pytest.MonkeyPatch) -> Iterator[Tmux]:
    """Orange's tmux adapter on a tmux server of the test's own (killed afterwards)."""
    socket = f"orange-test-{uuid.uuid4().hex[:10]}"
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", socket)
    server = Tmux()
    assert server.socket_name == socket
    yield server
    server.kill_server()


@dataclass
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        import json

        return json.loads(self.out)


class Cli:
    """Runs ``orange`` in-process (fast) with a working directory."""

    def __init__(self, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
        self.capsys = capsys
        self.monkeypatch = monkeypatch

    def __call__(self, *args: str, cwd: Path | None = None, stdin: str | None = None) -> Result:
        import io

        if cwd is not None:
            self.monkeypatch.chdir(cwd)
        if stdin is not None:
            self.monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        self.capsys.readouterr()
        code = cli_run(list(args))
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def ok(self, *args: str, cwd: Path | None = None, stdin: str | None = None) -> Result:
        result = self(*args, cwd=cwd, stdin=stdin)
        assert result.code == 0, (
            f"orange {' '.join(args)} -> {result.code}\n{result.err}{result.out}"
        )
        return result


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Cli:
    return Cli(capsys, monkeypatch)


def orange_here(*args: str, cwd: Path, stdin: str | None = None) -> Result:
    """Runs ``orange`` in this process, as `run_orange` does in a new one: the same entry
    point and exit codes, without paying a Python start-up and Orange's imports each time
    (a third of a second of CPU a call).  Not for commands that replace the process
    (``task attach``) or for calls from several threads at once (it changes the working
    directory and ``sys.std*``)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    before = os.getcwd()
    saved_stdin = sys.stdin
    os.chdir(cwd)
    sys.stdin = io.StringIO(stdin or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli_run(list(args))
    finally:
        sys.stdin = saved_stdin
        os.chdir(before)
    return Result(code, out.getvalue(), err.getvalue())


def orange_bin() -> str:
    return str(Path(sys.executable).with_name("orange"))


def run_orange(
    *args: str, cwd: Path, stdin: str | None = None, env: dict[str, str] | None = None
) -> Result:
    """Runs ``orange`` as a real process."""
    result = subprocess.run(
        [orange_bin(), *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    return Result(result.returncode, result.stdout, result.stderr)


# Hypothesis: CI runs few, reproducible examples; HYPOTHESIS_PROFILE=long explores.
settings.register_profile("ci", max_examples=15, derandomize=True, deadline=None)
settings.register_profile("long", max_examples=300, deadline=None)
# HYPOTHESIS_PROFILE=ci-noshrink: the CI examples, a failure reported unshrunk (fast).
settings.register_profile("ci-noshrink", settings.get_profile("ci"), phases=[Phase.generate])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def examples(ci: int, **more: Any) -> settings:
    """The loaded profile (and ``more`` settings), with ``ci`` examples where CI's few
    are too few for a cheap test whose edges need many draws; a profile asking for more
    (long) gets its own count."""
    return settings(max_examples=max(ci, settings().max_examples), **more)


def damage(repo: Path, object_id: str, content: bytes = b"not an object") -> bytes:
    """Write ``content`` as a loose object of ``repo`` (a damaged clone, or one repaired);
    returns what it held ("" when it was missing)."""
    loose = repo / ".git" / "objects" / object_id[:2] / object_id[2:]
    held = b""
    if loose.exists():
        held = loose.read_bytes()
        loose.chmod(0o644)
    loose.parent.mkdir(exist_ok=True)  # (a repack removes the emptied folders)
    loose.write_bytes(content)
    return held
