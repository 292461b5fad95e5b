"""Claude Code's stop hook for Orange (seed 003): ``python -P -m orange.ops.claude_stop``.

`orange install --harness claude` registers a two-line shell shim that execs this
module.  When the agent stops, it reads ``.orange-task`` in the project directory
(``{"id": ..., "outcome": "passed"|"stuck", "reason": ...}``) and reports the outcome:
``orange task complete ID`` or ``orange task stuck ID --reason ...``, with the id and
reason as arguments, never through a shell.  After a successful report the outcome is
removed from the file, so later stops do not report it again.  It always exits 0, so
Claude can stop.

It imports nothing of Orange: it runs on every stop of every Claude session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

STATE_FILE = ".orange-task"


def report(directory: Path, orange: str) -> str | None:
    """Report the outcome recorded in ``directory``; the command run, or None."""
    path = directory / STATE_FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    task, outcome, reason = data.get("id"), data.get("outcome"), data.get("reason")
    if not isinstance(task, str) or not task or outcome not in ("passed", "stuck"):
        return None
    command = [orange, "task", "complete" if outcome == "passed" else "stuck", task]
    if outcome == "stuck" and isinstance(reason, str) and reason.strip():
        command.append("--reason=" + reason)
    if subprocess.run(command, check=False, cwd=directory).returncode != 0:
        return None
    temporary = path.with_name(f"{STATE_FILE}.tmp")
    temporary.write_text(json.dumps({"id": task}), encoding="utf-8")
    os.replace(temporary, path)
    return " ".join(command)


def main(argv: list[str]) -> int:
    orange = argv[0] if argv else "orange"
    directory = Path(os.environ.get("CLAUDE_PROJECT_DIR") or ".")
    try:
        report(directory, orange)
    except Exception:  # a hook must never keep the agent from stopping
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
