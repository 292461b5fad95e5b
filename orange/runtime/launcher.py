"""Pane launcher: ``python -P -m orange.runtime.launcher SPEC``.

`orange.runtime.tmux.Tmux.start` writes ``{"argv": [...], "env": {...}, "cwd": ...}`` to
a private file and has tmux run this module on it, so the agent's argv never passes
through a shell or through tmux's argument parsing.  The launcher reads and deletes the
file, sets the environment, changes directory and execs argv: the agent then *is* the
pane's process, and its exit status is the pane's.  Its process id goes in the agent's
environment as ``ORANGE_AGENT_PID``: the stop hook (`orange.agent_hooks.stop`) acts only
for that process, never for a session started inside it, which inherits the variable
but not the ancestry.

When the program cannot be started the launcher prints why and exits 127 (not found) or
126 (not executable), like a shell would; with ``remain-on-exit`` the pane then shows
as dead with that status.  ``-P`` keeps the worktree (the pane's directory) off
``sys.path``, so a project that has its own ``orange`` package cannot shadow this one.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

NOT_FOUND = 127
NOT_EXECUTABLE = 126
AGENT_PID = "ORANGE_AGENT_PID"


def _fail(message: str, code: int) -> int:
    print(f"orange: {message}", file=sys.stderr, flush=True)
    return code


def main(args: list[str] | None = None) -> int:
    args = sys.argv[1:] if args is None else args
    if len(args) != 1:
        return _fail("usage: python -m orange.runtime.launcher SPEC", 2)
    path = Path(args[0])
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return _fail(f"cannot read launch file {path}: {exc}", NOT_FOUND)
    finally:
        path.unlink(missing_ok=True)
    argv = spec.get("argv") if isinstance(spec, dict) else None
    env = spec.get("env", {}) if isinstance(spec, dict) else None
    cwd = spec.get("cwd") if isinstance(spec, dict) else None
    if (
        not isinstance(argv, list)
        or not argv
        or not all(isinstance(arg, str) for arg in argv)
        or not isinstance(env, dict)
        or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())
        or not isinstance(cwd, str)
    ):
        return _fail(f"malformed launch file {path}", NOT_FOUND)
    os.environ.update(env)
    os.environ[AGENT_PID] = str(os.getpid())  # exec keeps it: the agent's own id
    try:
        os.chdir(cwd)
    except OSError as exc:
        return _fail(f"cannot change to {cwd}: {exc.strerror}", NOT_FOUND)
    try:
        os.execvp(argv[0], argv)
    except FileNotFoundError:
        return _fail(f'cannot start "{argv[0]}": not found on PATH', NOT_FOUND)
    except PermissionError:
        return _fail(f'cannot start "{argv[0]}": permission denied', NOT_EXECUTABLE)
    except OSError as exc:
        return _fail(f'cannot start "{argv[0]}": {exc.strerror}', NOT_EXECUTABLE)


if __name__ == "__main__":
    sys.exit(main())
