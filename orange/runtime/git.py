"""The one choke point for ``git`` subprocesses (STYLE §4).

Reports the command, exit code and stderr on failure, and strips ``GIT_*`` variables
(``GIT_DIR``, ``GIT_INDEX_FILE`` ...) that a surrounding git hook sets, which would
otherwise point our commands at the wrong repository.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from orange.errors import OrangeError

# Identity and config isolation are the user's choice; everything else is the hook's.
_KEEP = {
    "GIT_AUTHOR_NAME",
    "GIT_AUTHOR_EMAIL",
    "GIT_COMMITTER_NAME",
    "GIT_COMMITTER_EMAIL",
    "GIT_CONFIG_NOSYSTEM",
    "GIT_CONFIG_GLOBAL",
    "GIT_SSH",
    "GIT_SSH_COMMAND",
    "GIT_ASKPASS",
    "GIT_TERMINAL_PROMPT",
}


class GitFailed(OrangeError):
    """A git command failed; the message carries the command and its stderr."""

    def __init__(self, args: Sequence[str], code: int, stderr: str) -> None:
        tail = " ".join(stderr.split())[-300:]
        super().__init__(f"`git {' '.join(args)}` failed (exit {code}): {tail}")
        self.code = code
        self.stderr = stderr


def no_git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP}
    env.update(extra or {})
    return env


def git(
    *args: str,
    cwd: Path | str,
    env: Mapping[str, str] | None = None,
    check: bool = True,
    input: str | None = None,
    timeout: float | None = None,
) -> str:
    """Run git and return stdout (stripped of its final newline); ``timeout``: seconds
    before it is stopped and reported as failed (exit 124)."""
    try:
        result = subprocess.run(
            ["git", *args],
            cwd=cwd,
            env=no_git_env(env),
            capture_output=True,
            text=True,
            input=input,
            check=False,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(args, 124, f"timed out after {timeout:.0f} s") from None
    if check and result.returncode != 0:
        raise GitFailed(args, result.returncode, result.stderr)
    return result.stdout.removesuffix("\n")


def git_started(*args: str, cwd: Path | str, input: str) -> subprocess.Popen[bytes]:
    """Start git with ``input`` on its stdin and its output dropped, for work that
    runs alongside Orange's own (the caller waits for it, or stops it)."""
    process = subprocess.Popen(
        ["git", *args],
        cwd=cwd,
        env=no_git_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert process.stdin is not None
    with process.stdin:  # a few lines: the pipe holds them
        process.stdin.write(input.encode())
    return process


def git_ok(*args: str, cwd: Path | str) -> bool:
    """True when git exits 0 (for yes/no questions such as ``rev-parse --verify``)."""
    result = subprocess.run(
        ["git", *args], cwd=cwd, env=no_git_env(), capture_output=True, check=False
    )
    return result.returncode == 0


def merge_file(ours: str, base: str, theirs: str, labels: tuple[str, str, str]) -> tuple[str, bool]:
    """Three-way merge of texts with ``git merge-file``; returns (text, had_conflicts).

    A conflict keeps both versions between the usual markers.
    """

    with tempfile.TemporaryDirectory(prefix="orange-merge-") as tmp:
        paths = []
        for name, text in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_text(text)
            paths.append(str(path))
        result = subprocess.run(
            ["git", "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2], *paths],
            env=no_git_env(),
            capture_output=True,
            text=True,
            check=False,
        )
    if result.returncode < 0 or result.returncode > 127:
        raise GitFailed(["merge-file"], result.returncode, result.stderr)
    return result.stdout, result.returncode > 0


def tracks(path: Path, name: str) -> bool:
    """Whether the project itself tracks ``name`` in this worktree."""
    return bool(git("ls-files", "--", name, cwd=path))
