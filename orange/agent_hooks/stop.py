"""The stop hook of Claude Code and codex for Orange (seed 003):
``python -P -m orange.agent_hooks.stop``.

`orange install --harness claude` (or ``codex``) registers a two-line shell shim that
execs this module.  When the agent stops, it reads ``.orange-task`` in the project directory
(``{"id": ..., "outcome": "passed"|"stuck", "reason": ...}``) and reports the outcome:
``orange task complete ID`` or ``orange task stuck ID --reason ...``, with the id and
reason as arguments, never through a shell.  After a successful report the outcome is
removed from the file, so later stops do not report it again.

In the self-review workflow the outcome file is the agent's artifact (seed 003): while
Orange's worker of such a task is ``working``, a stop with the file missing or invalid,
or with a report Orange refused, exits with Claude Code's "keep going" status (2: the
stop is blocked and stderr is shown to the agent; https://code.claude.com/docs/en/hooks)
and one message saying exactly what is missing.  Codex treats a Stop hook's exit 2 the
same way: the stop is blocked and stderr becomes the agent's next prompt
(https://developers.openai.com/codex/hooks; codex-rs/hooks/src/events/stop.rs).  Claude
Code names the project in ``CLAUDE_PROJECT_DIR``; codex runs the hook in the session's
directory, which is the worktree.  Any other stop exits 0: a session
that is not an Orange worker (no ``ORANGE_TASK_ID``/``ORANGE_AGENT_ROLE=worker``), a
task of another workflow (its worker stops between turns and waits for a
notification), or a task that has already left ``working``.  A failure of the hook
itself never keeps the agent running.

It never loops (issue 25: a nested review looped 46 model calls in 30 s):

- It acts only for the agent process Orange started, whose id the pane launcher puts in
  ``ORANGE_AGENT_PID`` (`orange.runtime.launcher`).  A session started inside the agent
  (a ``claude -p`` or ``codex exec`` review run from its shell) inherits that variable
  and every other, but not the ancestry: between this hook and the agent's process lie
  only the shell the harness runs its hook in, or, for a session nested in the agent,
  that session's own process and the agent's tool shell that started it.  Such a
  session's stops are never refused and report nothing.
- It honours the hook input's ``stop_hook_active`` (Claude Code and codex: true while
  the agent continues because a stop hook refused a stop): the refusals are counted in a
  row (kept in the worktree's git directory, per task and agent process), from zero
  again when the stop follows a new prompt (false).  Without input (opencode, pi) every
  stop counts.  After `MAX_REFUSALS` in a row the stop is let through and the task is
  handed to a person: ``orange task stuck ID --reason ...`` (the worker's own move, which
  notifies), saying why.

opencode and pi cannot refuse a stop: their plugin / extension (`orange.agent_hooks.idle`)
runs this same module in the session's directory and sends its exit-2 message as the
agent's next prompt.

It imports nothing of Orange: it runs on every stop of every Claude Code, codex, opencode
or pi session.
"""

from __future__ import annotations

import io
import json
import os
import select
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

STATE_FILE = ".orange-task"
KEEP_GOING = 2  # Claude Code and codex: exit 2 from a Stop hook blocks the stop
# Design choice: the workflows whose worker reports through the outcome file are named
# here, since this hook runs outside Orange and reads only `orange task show --json`.
# A user workflow that follows seed 003 under another name gets no blocking stop.
OUTCOME_WORKFLOWS = ("self-review",)
AWAITING_STATUS = "working"
MAX_REFUSALS = 3
AGENT_PID = "ORANGE_AGENT_PID"  # set by orange.runtime.launcher (not imported: see above)
STREAK_FILE = "orange-stop-refusals.json"
INPUT_WAIT = 1.0  # seconds: Claude Code and codex write the hook input at once
# Process names of shells: a harness runs its hooks in one (Claude Code `sh -c`, codex
# `$SHELL -lc`), and an agent's tools run commands in one.
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "busybox"})


class Problem(Exception):
    """What keeps the agent from stopping, in one message for the agent."""


def _example(task: str) -> str:
    return (
        f'{{"id": "{task}", "outcome": "passed"}} when your self-review passed, or '
        f'{{"id": "{task}", "outcome": "stuck", "reason": "..."}} when you are stuck'
    )


def read_outcome(path: Path, task: str | None) -> tuple[str, str, str] | None:
    """(task, outcome, reason) from the file; None when it holds no outcome (absent,
    or only the id left after a report).  Raises `Problem` for an invalid file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise Problem(f"{path} cannot be read ({exc})") from None
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise Problem(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise Problem(f"{path} must hold one JSON object")
    found, outcome, reason = data.get("id"), data.get("outcome"), data.get("reason")
    if not isinstance(found, str) or not found:
        raise Problem(f'{path} has no "id" (the task id, a string)')
    if task and found != task:
        raise Problem(f'{path} names task "{found}", but this agent works on task "{task}"')
    if outcome is None:
        return None
    if outcome not in ("passed", "stuck"):
        raise Problem(f'{path}: "outcome" must be "passed" or "stuck", not {json.dumps(outcome)}')
    if outcome == "stuck" and not (isinstance(reason, str) and reason.strip()):
        raise Problem(f'{path}: an "outcome" of "stuck" needs a "reason" saying what blocks you')
    return found, outcome, reason if isinstance(reason, str) else ""


def report(directory: Path, orange: str, task: str | None = None) -> str | None:
    """Report the outcome recorded in ``directory``; the command run, or None when the
    file holds no outcome.  Raises `Problem` when the file is invalid or Orange refuses."""
    path = directory / STATE_FILE
    found = read_outcome(path, task)
    if found is None:
        return None
    task, outcome, reason = found
    command = [orange, "task", "complete" if outcome == "passed" else "stuck", task]
    if outcome == "stuck":
        command.append("--reason=" + reason)
    done = subprocess.run(command, check=False, cwd=directory, capture_output=True, text=True)
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        raise Problem(f"`{' '.join(command[1:])}` was refused: {said[-1] if said else '?'}")
    temporary = path.with_name(f"{STATE_FILE}.tmp")
    temporary.write_text(json.dumps({"id": task}), encoding="utf-8")
    os.replace(temporary, path)
    return " ".join(command)


def awaits_outcome(directory: Path, orange: str, task: str) -> bool:
    """Whether ``task`` is a self-review task still waiting for its worker's outcome."""
    shown = subprocess.run(
        [orange, "task", "show", task, "--json"],
        check=False,
        cwd=directory,
        capture_output=True,
        text=True,
    )
    try:
        data = json.loads(shown.stdout)
    except ValueError:
        return False
    return (
        isinstance(data, dict)
        and data.get("workflow") in OUTCOME_WORKFLOWS
        and data.get("status") == AWAITING_STATUS
    )


def check(directory: Path, orange: str, task: str | None) -> str | None:
    """The message that keeps the agent going, or None when it may stop."""
    try:
        if report(directory, orange, task) is not None or not task:
            return None
    except Problem as problem:
        if task and awaits_outcome(directory, orange, task):
            return f"Orange: {problem}. Fix it before stopping: write {_example(task)}."
        return None
    if not awaits_outcome(directory, orange, task):
        return None
    return (
        f"Orange: task {task} has no outcome: {directory / STATE_FILE} is missing or "
        f"holds no outcome. Before stopping, write {_example(task)}."
    )


def _process(pid: int) -> tuple[int, str] | None:
    """(parent id, name) of process ``pid``: from /proc, else from ``ps``."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        done = subprocess.run(
            ["ps", "-o", "ppid=,comm=", "-p", str(pid)], check=False, capture_output=True, text=True
        )
        parts = done.stdout.split(None, 1)
        if done.returncode != 0 or len(parts) != 2 or not parts[0].isdigit():
            return None
        return int(parts[0]), os.path.basename(parts[1].strip()).lstrip("-")
    name, _, rest = stat.partition("(")[2].rpartition(")")
    fields = rest.split()
    return (int(fields[1]), name) if len(fields) > 1 and fields[1].isdigit() else None


def started_by_orange(agent: str | None, pid: int) -> bool:
    """Whether a hook whose parent is ``pid`` runs for the agent process ``agent``
    (``ORANGE_AGENT_PID``) and not for a session nested in it: between the two lie only
    the shell the harness runs its hook in and, for a harness started through a wrapper,
    the wrapper's own processes -- never a shell (the agent's tool shell that started a
    nested session) nor another process of the agent's own name (a session it ``exec``s).
    Without the variable (an agent Orange started before it set one) the hook acts, as
    it did then."""
    if not agent:
        return True
    if not agent.isdigit():
        return False
    target, between = int(agent), []
    for _ in range(64):
        if pid == target:
            break
        found = _process(pid)
        if found is None or pid <= 1:
            return False  # not inside the agent at all
        between.append(found[1])
        pid = found[0]
    else:
        return False
    while between and between[0] in SHELLS:
        between.pop(0)  # the hook's own shell
    own = _process(target)
    return not any(name in SHELLS or (own and name == own[1]) for name in between)


def _streak_path(directory: Path) -> Path | None:
    """Where the refusals in a row are kept: the worktree's own git directory (never the
    worktree, never committed); None outside a git checkout."""
    done = subprocess.run(
        ["git", "rev-parse", "--absolute-git-dir"],
        check=False,
        cwd=directory,
        capture_output=True,
        text=True,
    )
    found = done.stdout.strip()
    return Path(found) / STREAK_FILE if done.returncode == 0 and found else None


def refusals(path: Path, key: str, *, add: int | None = None) -> int:
    """The refusals in a row recorded for ``key`` (task and agent process); with ``add``,
    record that many more than that (0: none in a row) and return the new count."""
    seen = 0
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and isinstance(data.get(key), int):
            seen = data[key]
    except (OSError, ValueError):
        pass
    if add is None:
        return seen
    count = seen + add if add else 0
    if count != seen:
        temporary = path.with_name(f"{path.name}.tmp")
        temporary.write_text(json.dumps({key: count}), encoding="utf-8")
        os.replace(temporary, path)
    return count


def read_event(stream: TextIO) -> dict[str, Any]:
    """The hook input (Claude Code and codex write one JSON object on stdin); empty when
    there is none (opencode and pi run the check without input, a person in a terminal)."""
    try:
        if stream.isatty():
            return {}
        try:
            ready, _, _ = select.select([stream], [], [], INPUT_WAIT)
        except (OSError, ValueError, io.UnsupportedOperation):
            ready = [stream]  # no file descriptor (a test's text stream): read it
        if not ready:
            return {}  # an open input nobody writes to never holds the agent
        data = json.loads(stream.read(1 << 20) or "{}")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def give_up(directory: Path, orange: str, task: str, message: str) -> None:
    """After `MAX_REFUSALS` in a row: hand the task to a person, saying why."""
    reason = (
        f"Orange's stop hook refused this agent's stop {MAX_REFUSALS} times in a row and "
        f"then let it stop; the last refusal: {message}"
    )
    subprocess.run(
        [orange, "task", "stuck", task, "--reason=" + reason],
        check=False,
        cwd=directory,
        capture_output=True,
        text=True,
    )


def main(argv: list[str], stdin: TextIO | None = None) -> int:
    orange = argv[0] if argv else "orange"
    directory = Path(os.environ.get("CLAUDE_PROJECT_DIR") or ".").resolve()
    if os.environ.get("ORANGE_AGENT_ROLE", "worker") != "worker":
        return 0  # a reviewer reports nothing through the outcome file
    task = os.environ.get("ORANGE_TASK_ID") or None
    try:
        if not started_by_orange(os.environ.get(AGENT_PID), os.getppid()):
            return 0  # a session nested in the agent: its stops are its own
        event = read_event(sys.stdin if stdin is None else stdin)
        message = check(directory, orange, task)
        path, key = _streak_path(directory), f"{task}@{os.environ.get(AGENT_PID, '')}"
        if path is None or task is None:
            return 0  # no place to count refusals: none without a limit
        if message is None:
            refusals(path, key, add=0)
            return 0
        # stop_hook_active false: the agent stops after a new prompt, not after a refusal
        if event.get("stop_hook_active") is False:
            refusals(path, key, add=0)
        if refusals(path, key) >= MAX_REFUSALS:
            refusals(path, key, add=0)
            give_up(directory, orange, task, message)
            return 0
        if refusals(path, key, add=1) == MAX_REFUSALS:
            message += (
                f" (refusal {MAX_REFUSALS} in a row: at your next stop Orange lets you stop "
                "and hands the task to a person)"
            )
    except Exception:  # a broken hook must never keep the agent running
        return 0
    print(message, file=sys.stderr)
    return KEEP_GOING


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
