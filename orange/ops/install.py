"""``orange install``: teach the installed coding agents Orange's protocol.

For each harness it writes two skills (the task protocol for workers and reviewers, and
the orchestrator's) where that agent looks for user skills, and for Claude Code also
allows the ``orange`` command and registers the seed-003 stop hook.  Every write is
idempotent: a file whose content is already right is reported "unchanged" and not
touched; JSON settings are merged, never replaced.

Skill locations (Agent Skills format: a folder with a SKILL.md whose YAML frontmatter
has ``name`` and ``description``):

- claude: ``~/.claude/skills/<name>/SKILL.md`` (https://code.claude.com/docs/en/skills,
  "personal skills").
- pi: ``~/.pi/agent/skills/`` (pi 0.19.0 release notes: "Pi-native formats
  (~/.pi/agent/skills/, .pi/skills/)").
- opencode: ``~/.config/opencode/skills/`` (https://opencode.ai/docs/skills, "Global
  config"); names must match ``^[a-z0-9]+(-[a-z0-9]+)*$`` and the folder name.
- codex: ``~/.agents/skills/`` (https://developers.openai.com/codex/skills: user skills
  live in ``$HOME/.agents/skills``; ``~/.codex/skills`` was the old location).

Claude Code settings (``~/.claude/settings.json``): ``permissions.allow`` gets
``Bash(orange:*)`` (https://code.claude.com/docs/en/permissions), and ``hooks.Stop``
gets ``{"hooks": [{"type": "command", "command": ...}]}`` (no matcher: Stop does not
use one; https://code.claude.com/docs/en/hooks).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

from orange.errors import InvalidInput
from orange.hooks.harness import BUILTINS, ORANGE_PERMISSION, load_harnesses

Outcome = Literal["written", "unchanged"]

SKILL_DIRS: dict[str, str] = {
    "claude": ".claude/skills",
    "pi": ".pi/agent/skills",
    "opencode": ".config/opencode/skills",
    "codex": ".agents/skills",
}
STOP_HOOK = "orange-stop.sh"

TASK_SKILL = """\
---
name: orange-task
description: How to work on an Orange task as its worker or its reviewer. Use whenever \
your prompt mentions an Orange task, TASK.md, or `orange task` commands.
---

# Working on an Orange task

Orange gave you one task and a git worktree of your own. The task is `TASK.md` at the
root of the worktree (`ORANGE-TASK.md` if your prompt says so): frontmatter, then
markdown sections. Edit it in place; Orange keeps it in step with its own copy.

Status changes go through `orange task update --status STATUS` (the task id defaults to
this worktree's). Orange checks each change against the task's workflow and tells you
what is missing; fix that and run the command again. Never edit the frontmatter fields
`status`, `review_round` or `crash_count` by hand.

Never `git push` and never merge: commit on the task branch and leave the rest to the
human. Never post to GitHub.

## As the worker

1. Read `TASK.md`: the summary, any context, and any `## Review` or feedback from an
   earlier round.
2. Unclear requirements: write `## Questions` with two or three specific questions, run
   `orange task update --status clarification`, and wait for the human.
3. Plan: write

       ## Plan
       APPROACH: <how you will do it>
       TOUCHING: <files or modules you will change>

   then `orange task update --status working`.
4. Implement. Run the tests and linters. Commit with descriptive messages.
5. Hand off: write

       ## Handoff
       DONE: <what you finished>
       REMAINING: <what is left, or "nothing">
       DECISIONS: <choices you made and why>
       UNCERTAIN: <what you are unsure about>

   then ask for review: `orange task update --status agent-review` (in the
   self-review workflow: `orange task complete`, or `orange task stuck --reason "..."`
   when you cannot finish). Never set `reviewing` yourself: a reviewer does that.
6. When Orange tells you a review failed, read the new `## Review`, fix, and hand off
   again.

## As the reviewer

1. Read `TASK.md` (`## Plan`, `## Handoff`) and review the branch's commits against the
   default branch: correctness, tests, style, edge cases. Do not change the code.
2. Write `## Review`. Its first line is exactly `Verdict: PASS` or `Verdict: FAIL`;
   then your findings, most important first, each with file and line.
3. PASS: `orange task update --status reviewing`. FAIL: `orange task update --status
   working` (the worker is told to fix it).
"""

ORCHESTRATOR_SKILL = """\
---
name: orange-orchestrator
description: Break a request into parallel Orange tasks and watch them run. Use when \
the user asks you to plan, split up, delegate or orchestrate work with Orange.
---

# Orchestrating with Orange

You decompose work; you do not plan the implementation. Each task's own agent plans
and implements it.

1. Refine vague requests first: ask the user clarifying questions and wait for the
   answers.
2. Break the work into independent tasks that can run in parallel, each with a clear
   one-line summary and its own branch.
3. Create each task, passing requirements and constraints on stdin:

       orange task create BRANCH "summary" --context - <<'EOF'
       requirements, constraints, pointers to code
       EOF

   An empty summary starts a clarification session instead.
4. Watch progress with `orange task list` (and `orange task show ID` for one task).
   Tasks in `reviewing` wait for the human; tell the user which ones are ready.
"""


def _orange_bin() -> str:
    beside = Path(sys.executable).with_name("orange")
    return str(beside) if beside.exists() else "orange"


# The stop hook reads .orange-task and reports the outcome (seed 003).  It is a shell
# shim that execs Python (no jq, no JSON parsing in sh); the task id and reason reach
# `orange` as argv, never through a shell.  After a successful report the outcome is
# removed from the file, so later stops do not report it again.
_STOP_CODE = """\
import json, os, subprocess, sys
orange = sys.argv[1]
try:
    with open(".orange-task", encoding="utf-8") as handle:
        data = json.load(handle)
except (OSError, ValueError):
    sys.exit(0)
if not isinstance(data, dict):
    sys.exit(0)
task, outcome, reason = data.get("id"), data.get("outcome"), data.get("reason")
if not isinstance(task, str) or not task or outcome not in ("passed", "stuck"):
    sys.exit(0)
if outcome == "passed":
    command = [orange, "task", "complete", task]
else:
    command = [orange, "task", "stuck", task]
    if isinstance(reason, str) and reason.strip():
        command.append("--reason=" + reason)
if subprocess.run(command, check=False).returncode == 0:
    with open(".orange-task.tmp", "w", encoding="utf-8") as handle:
        json.dump({"id": task}, handle)
    os.replace(".orange-task.tmp", ".orange-task")
"""


def stop_hook_script() -> str:
    assert "'" not in _STOP_CODE
    return (
        "#!/bin/sh\n"
        "# Orange stop hook for Claude Code (seed 003); installed by `orange install`.\n"
        '# Reads .orange-task ({"id": ..., "outcome": "passed"|"stuck", "reason": ...})\n'
        "# and runs `orange task complete ID` or `orange task stuck ID --reason ...`.\n"
        "# Always exits 0, so Claude can stop.\n"
        'cd "${CLAUDE_PROJECT_DIR:-.}" 2>/dev/null || exit 0\n'
        "[ -f .orange-task ] || exit 0\n"
        f"{shlex.quote(sys.executable)} -P -c '{_STOP_CODE}' {shlex.quote(_orange_bin())}\n"
        "exit 0\n"
    )


def install(harness: str | None = None, *, home: Path | None = None) -> list[tuple[Path, Outcome]]:
    """Install Orange's skills (and Claude Code's settings) for ``harness``, or for every
    built-in harness found on PATH.  Returns each file with what happened to it."""
    home = Path.home() if home is None else home
    if harness:
        if harness not in load_harnesses():
            raise InvalidInput(f'unknown harness "{harness}" (known: {", ".join(BUILTINS)})')
        if harness not in SKILL_DIRS:
            raise InvalidInput(
                f'harness "{harness}" is user-defined: Orange does not know where it reads skills',
                hint="give it the task protocol in its own instructions",
            )
        targets = [harness]
    else:
        targets = [name for name in SKILL_DIRS if BUILTINS[name].installed()]
        if not targets:
            raise InvalidInput(
                "no coding agent found on PATH (looked for " + ", ".join(SKILL_DIRS) + ")",
                hint="install one, or name it: orange install --harness claude",
            )
    results: list[tuple[Path, Outcome]] = []
    for name in targets:
        skills = home / SKILL_DIRS[name]
        results.append(_write(skills / "orange-task" / "SKILL.md", TASK_SKILL))
        results.append(_write(skills / "orange-orchestrator" / "SKILL.md", ORCHESTRATOR_SKILL))
        if name == "claude":
            results.extend(_install_claude(home))
    return results


def _install_claude(home: Path) -> list[tuple[Path, Outcome]]:
    script = home / ".claude" / "hooks" / STOP_HOOK
    results = [_write(script, stop_hook_script(), mode=0o755)]
    settings = home / ".claude" / "settings.json"
    data = _read_json(settings)
    before = json.dumps(data, sort_keys=True)
    permissions = _mapping(data, "permissions", settings)
    allow = permissions.setdefault("allow", [])
    if not isinstance(allow, list):
        raise InvalidInput(f"{settings}: permissions.allow: must be a list")
    if ORANGE_PERMISSION not in allow:
        allow.append(ORANGE_PERMISSION)
    hooks = _mapping(data, "hooks", settings)
    stop = hooks.setdefault("Stop", [])
    if not isinstance(stop, list):
        raise InvalidInput(f"{settings}: hooks.Stop: must be a list")
    if not any(STOP_HOOK in command for command in _commands(stop)):
        stop.append({"hooks": [{"type": "command", "command": shlex.quote(str(script))}]})
    if settings.exists() and json.dumps(data, sort_keys=True) == before:
        results.append((settings, "unchanged"))
    else:
        results.append(_write(settings, json.dumps(data, indent=2) + "\n"))
    return results


def _read_json(path: Path) -> dict[str, Any]:
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise InvalidInput(
            f"{path}: not valid JSON ({exc}); Orange will not overwrite it",
            hint="fix the file, then run `orange install` again",
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path}: must be a JSON object")
    return data


def _mapping(data: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = data.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: {key}: must be an object")
    return value


def _commands(stop: list[Any]) -> list[str]:
    found = []
    for group in stop:
        for hook in group.get("hooks", []) if isinstance(group, dict) else []:
            if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                found.append(hook["command"])
    return found


def _write(path: Path, content: str, *, mode: int | None = None) -> tuple[Path, Outcome]:
    """Write ``content`` unless the file already holds it (and has ``mode``)."""
    try:
        same = path.read_text(encoding="utf-8") == content
    except (OSError, UnicodeDecodeError):
        same = False
    if same and (mode is None or (path.stat().st_mode & 0o777) == mode):
        return path, "unchanged"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.orange-tmp")
    tmp.write_text(content, encoding="utf-8")
    if mode is not None:
        tmp.chmod(mode)
    os.replace(tmp, path)
    return path, "written"
