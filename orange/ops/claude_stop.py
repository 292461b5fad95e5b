"""The stop hook of Claude Code and codex for Orange (seed 003):
``python -P -m orange.ops.claude_stop``.

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

opencode and pi cannot refuse a stop: their plugin / extension (`orange.ops.idle_hooks`)
runs this same module in the session's directory and sends its exit-2 message as the
agent's next prompt.

It imports nothing of Orange: it runs on every stop of every Claude Code, codex, opencode
or pi session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STATE_FILE = ".orange-task"
KEEP_GOING = 2  # Claude Code and codex: exit 2 from a Stop hook blocks the stop
# Design choice: the workflows whose worker reports through the outcome file are named
# here, since this hook runs outside Orange and reads only `orange task show --json`.
# A user workflow that follows seed 003 under another name gets no blocking stop.
OUTCOME_WORKFLOWS = ("self-review",)
AWAITING_STATUS = "working"


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


def main(argv: list[str]) -> int:
    orange = argv[0] if argv else "orange"
    directory = Path(os.environ.get("CLAUDE_PROJECT_DIR") or ".").resolve()
    if os.environ.get("ORANGE_AGENT_ROLE", "worker") != "worker":
        return 0  # a reviewer reports nothing through the outcome file
    task = os.environ.get("ORANGE_TASK_ID") or None
    try:
        message = check(directory, orange, task)
    except Exception:  # a broken hook must never keep the agent running
        return 0
    if message is None:
        return 0
    print(message, file=sys.stderr)
    return KEEP_GOING


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
