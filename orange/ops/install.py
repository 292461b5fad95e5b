"""``orange install``: teach the installed coding agents Orange's protocol.

For each harness it writes two skills (the task protocol for workers and reviewers, and
the orchestrator's) where that agent looks for user skills; for Claude Code it also
allows the ``orange`` commands an agent may run; for Claude Code and codex it registers
the seed-003 stop hook, and for opencode and pi it writes the plugin / extension that
does the same job (`orange.agent_hooks.idle`).  Every write is idempotent: a file whose
content is already right is reported "unchanged" and not touched; JSON settings are
merged, never replaced.

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

Claude Code settings (``~/.claude/settings.json``): ``permissions.allow`` gets a rule
for each ``orange`` command an agent may run (``Bash(orange task update:*)`` ...,
`orange.runtime.harness.ORANGE_PERMISSIONS`; https://code.claude.com/docs/en/permissions)
and loses the ``Bash(orange:*)``, every command, that Orange wrote before; ``hooks.Stop``
gets ``{"hooks": [{"type": "command", "command": ...}]}`` (no matcher: Stop does not
use one; https://code.claude.com/docs/en/hooks), and ``hooks.Notification`` the same
for Orange's ear for a waiting agent (`orange.monitor.notified`; no matcher: the module
picks the kinds of notification that wait for a person).

codex (``~/.codex/hooks.json``, https://developers.openai.com/codex/hooks): ``hooks.Stop``
gets the same group.  Codex runs a command hook as ``$SHELL -lc COMMAND`` in the
session's directory with the event as JSON on stdin, and a Stop hook that exits 2 with
a message on stderr blocks the stop and hands the message to the agent as its next
prompt (codex-rs/hooks/src/engine/command_runner.rs and src/events/stop.rs).  Codex
runs a hook it does not manage only once a person has trusted it in ``/hooks`` (trust
is kept per hook definition, which Orange keeps byte-stable).

opencode (``~/.config/opencode/plugins/orange-stop.js``) and pi
(``~/.pi/agent/extensions/orange-stop.js``): a file of Orange's own in the directory the
tool loads at startup, beside the user's own plugins, which are never touched.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any, Literal

from orange.agent_hooks.idle import FILE_NAME, IDLE_HOOK_DIRS, idle_hook_source
from orange.errors import InvalidInput
from orange.ops.skills import SKILLS, Skill
from orange.runtime.harness import BUILTINS, DEMO, allow_agent_commands, load_harnesses

Outcome = Literal["written", "unchanged"]

SKILL_DIRS: dict[str, str] = {
    "claude": ".claude/skills",
    "pi": ".pi/agent/skills",
    "opencode": ".config/opencode/skills",
    "codex": ".agents/skills",
}
STOP_HOOK = "orange-stop.sh"
NOTIFY_HOOK = "orange-notify.sh"  # Claude Code's Notification hook (orange.monitor.notified)
# Where each harness with a stop hook keeps Orange's shim and its hook settings file.
STOP_HOOKS: dict[str, tuple[str, str]] = {
    "claude": (".claude/hooks", ".claude/settings.json"),
    "codex": (".codex/hooks", ".codex/hooks.json"),
}
TOOL_NAMES = {"claude": "Claude Code", "codex": "codex"}
CODEX_TRUST = (
    "codex runs Orange's stop hook only once you trust it: open /hooks in codex and "
    "trust orange-stop.sh (once; again only if the hook changes)"
)
# What a person does after Orange wrote (or changed) the opencode plugin / pi extension.
RELOAD = {
    "opencode": "opencode loads Orange's stop plugin (plugins/orange-stop.js) when it "
    "starts: restart any opencode already running",
    "pi": "pi loads Orange's stop extension (extensions/orange-stop.js) when it starts: "
    "restart any pi already running, or run /reload in it",
}


def notes(results: list[tuple[Path, Outcome]]) -> list[str]:
    """What a person still has to do after ``results``: trusting a newly written codex
    hook in codex itself (https://developers.openai.com/codex/hooks), restarting an
    opencode or pi that runs without the stop file just written."""
    codex = Path(STOP_HOOKS["codex"][1]).parts
    written = [path for path, outcome in results if outcome == "written"]
    todo = [CODEX_TRUST] if any(path.parts[-2:] == codex for path in written) else []
    for harness, folder in IDLE_HOOK_DIRS.items():
        if any(path.parent.as_posix().endswith(folder) for path in written):
            todo.append(RELOAD[harness])
    return todo


def _orange_bin() -> str:
    beside = Path(sys.executable).with_name("orange")
    return str(beside) if beside.exists() else "orange"


def hook_command() -> list[str]:
    """The stop check every harness's hook runs: `orange.agent_hooks.stop` with this
    Python and this ``orange``."""
    return [sys.executable, "-P", "-m", "orange.agent_hooks.stop", _orange_bin()]


def stop_hook_script(harness: str = "claude") -> str:
    """The shell shim ``harness`` runs on stop: it execs `hook_command`."""
    return (
        "#!/bin/sh\n"
        f"# Orange stop hook for {TOOL_NAMES[harness]} (seed 003); installed by `orange install`.\n"
        "# Reports the outcome in .orange-task: see orange/agent_hooks/stop.py.\n"
        f"exec {shlex.join(hook_command())} || exit 0\n"
    )


def notify_hook_script() -> str:
    """The shell shim Claude Code runs on a Notification: it execs
    `orange.monitor.notified` with this Python."""
    command = [sys.executable, "-P", "-m", "orange.monitor.notified"]
    return (
        "#!/bin/sh\n"
        "# Orange's ear for Claude Code's notifications; installed by `orange install`.\n"
        "# A waiting agent's task gets attention at once: see orange/monitor/notified.py.\n"
        f"exec {shlex.join(command)} || exit 0\n"
    )


def targets(harness: str | None) -> list[str]:
    """The harnesses `install` writes for: ``harness``, or every built-in on PATH."""
    if harness:
        if harness not in load_harnesses():
            raise InvalidInput(f'unknown harness "{harness}" (known: {", ".join(BUILTINS)})')
        if harness == DEMO and load_harnesses()[DEMO].builtin:
            raise InvalidInput(
                f'harness "{DEMO}" is Orange\'s scripted stand-in: it needs nothing installed'
            )
        if harness not in SKILL_DIRS:
            raise InvalidInput(
                f'harness "{harness}" is user-defined: Orange does not know where it reads skills',
                hint="give it the task protocol in its own instructions",
            )
        return [harness]
    found = [name for name in SKILL_DIRS if BUILTINS[name].installed()]
    if not found:
        raise InvalidInput(
            "no coding agent found on PATH (looked for " + ", ".join(SKILL_DIRS) + ")",
            hint="install one, or name it: orange install --harness claude",
        )
    return found


def install(harness: str | None = None, *, home: Path | None = None) -> list[tuple[Path, Outcome]]:
    """Install Orange's skills (and Claude Code's settings) for ``harness``, or for every
    built-in harness found on PATH.  Returns each file with what happened to it."""
    home = Path.home() if home is None else home
    results: list[tuple[Path, Outcome]] = []
    for name in targets(harness):
        skills = home / SKILL_DIRS[name]
        for skill in SKILLS:
            results.append(_write_skill(skills / skill.name / "SKILL.md", skill))
        if name in STOP_HOOKS:
            results.extend(_install_stop_hook(home, name))
        if name in IDLE_HOOK_DIRS:
            source = idle_hook_source(name, hook_command())
            results.append(_write(home / IDLE_HOOK_DIRS[name] / FILE_NAME, source))
    return results


def stale_stop_files(harness: str, home: Path) -> list[Path]:
    """The stop files of ``harness`` under ``home`` that an `orange install` would
    change: written by an older Orange (its check then named `orange.ops.claude_stop`,
    which still runs) or by another installation of Orange."""
    if harness in STOP_HOOKS:
        wanted = {home / STOP_HOOKS[harness][0] / STOP_HOOK: stop_hook_script(harness)}
    elif harness in IDLE_HOOK_DIRS:
        source = idle_hook_source(harness, hook_command())
        wanted = {home / IDLE_HOOK_DIRS[harness] / FILE_NAME: source}
    else:
        return []
    stale = []
    for path, content in wanted.items():
        try:
            if path.read_text(encoding="utf-8") != content:
                stale.append(path)
        except FileNotFoundError:
            continue
        except (OSError, UnicodeDecodeError):
            stale.append(path)
    return stale


def _install_stop_hook(home: Path, harness: str) -> list[tuple[Path, Outcome]]:
    """The stop hook's shim and its entry under ``hooks.Stop`` in the harness's settings
    (for Claude Code also the permissions to run an agent's ``orange`` commands), merged,
    never replaced."""
    folder, settings_file = STOP_HOOKS[harness]
    script = home / folder / STOP_HOOK
    results = [_write(script, stop_hook_script(harness), mode=0o755)]
    settings = home / settings_file
    data = read_json_object(settings)
    before = json.dumps(data, sort_keys=True)
    if harness == "claude":
        permissions = _mapping(data, "permissions", settings)
        allow = permissions.setdefault("allow", [])
        if not isinstance(allow, list):
            raise InvalidInput(f"{settings}: permissions.allow: must be a list")
        allow_agent_commands(allow)
    hooks = _mapping(data, "hooks", settings)
    stop = hooks.setdefault("Stop", [])
    if not isinstance(stop, list):
        raise InvalidInput(f"{settings}: hooks.Stop: must be a list")
    if not any(STOP_HOOK in command for command in _commands(stop)):
        stop.append({"hooks": [{"type": "command", "command": shlex.quote(str(script))}]})
    if harness == "claude":
        shim = home / folder / NOTIFY_HOOK
        results.append(_write(shim, notify_hook_script(), mode=0o755))
        notification = hooks.setdefault("Notification", [])
        if not isinstance(notification, list):
            raise InvalidInput(f"{settings}: hooks.Notification: must be a list")
        if not any(NOTIFY_HOOK in command for command in _commands(notification)):
            entry = {"type": "command", "command": shlex.quote(str(shim))}
            notification.append({"hooks": [entry]})
    if settings.exists() and json.dumps(data, sort_keys=True) == before:
        results.append((settings, "unchanged"))
    else:
        results.append(_write(settings, json.dumps(data, indent=2) + "\n"))
    return results


def read_json_object(path: Path) -> dict[str, Any]:
    """A settings file of an agent program, as a JSON object ({} when it does not
    exist); one that cannot be read as one is `InvalidInput`, and Orange leaves it."""
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
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


def _write_skill(path: Path, skill: Skill) -> tuple[Path, Outcome]:
    try:
        if skill.matches(path.read_text(encoding="utf-8")):
            return path, "unchanged"
    except (OSError, UnicodeDecodeError):
        pass
    return _write(path, skill.render())


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
