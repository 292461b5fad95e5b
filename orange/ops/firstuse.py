"""What an agent program asks on first use, and the settings of its own that answer it
ahead of time (issue 25): `orange install` writes them with the user's consent,
`orange doctor` says which are missing.

Claude Code 2.1.197 (seen in its pane with a fresh HOME, and in its settings files):

- the theme picker before onboarding: ``"hasCompletedOnboarding": true`` in
  ``~/.claude.json``;
- the folder trust question, once per project: ``projects[<path>].hasTrustDialogAccepted``
  in ``~/.claude.json`` (a git worktree uses its main checkout's entry; the pool's
  worktrees get one each as well, in case a release keys them on their own path);
- the bypass-permissions warning, once per HOME (its default, "1. No, exit", quits):
  ``"skipDangerousModePermissionPrompt": true`` in ``~/.claude/settings.json``;
- the API-key approval for ``ANTHROPIC_API_KEY`` users: the key's last 20 characters in
  ``customApiKeyResponses.approved`` of ``~/.claude.json`` (seen with the real program:
  with them there it asks nothing).  The key is the one agents get: ``harness_env`` of
  claude in config.yml, else the environment `orange install` runs in.  A key the
  person rejected (``customApiKeyResponses.rejected``) is their decision: left alone.

codex-cli 0.171.0: "Trust this folder?" once per repository root:
``[projects."<path>"] trust_level = "trusted"`` in ``~/.codex/config.toml``
(https://developers.openai.com/codex/config-reference, ``projects.<path>.trust_level``).
Its "Hooks need review" for Orange's stop hook is answered in codex (``/hooks``); codex
keeps a hash per hook that Orange does not compute.
"""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import NamedTuple

from orange.errors import InvalidInput
from orange.ops.install import read_json_object
from orange.projects import Project
from orange.runtime.harness import harness_env
from orange.runtime.places import pool_name, pool_path


class Setting(NamedTuple):
    """One setting a program needs so a screen does not stop an agent."""

    harness: str
    screen: str  # the screen it answers (`orange.runtime.harness.SCREENS` names)
    path: Path  # the program's own settings file
    key: str  # where in it, as a person reads it


class Write(NamedTuple):
    """A settings file's new content and the settings it adds."""

    path: Path
    content: str
    settings: tuple[Setting, ...]


HARNESSES = ("claude", "codex")
API_KEY_VARIABLE = "ANTHROPIC_API_KEY"


def project_paths(projects: list[Project]) -> list[str]:
    """The checkouts agents run in: each project's main checkout and pool worktrees."""
    paths: list[str] = []
    for project in projects:
        paths.append(str(Path(project.path).resolve()))
        for n in range(1, project.pool_size + 1):
            slot = pool_path(project.name, pool_name(project.name, n))
            if slot is not None:
                paths.append(str(slot.resolve()))
    return list(dict.fromkeys(paths))


def plan(harness: str, home: Path, projects: list[Project]) -> list[Write]:
    """The files to write so that ``harness`` asks nothing on first use (none when all
    is settled); raises `InvalidInput` on a settings file Orange cannot read."""
    if harness == "claude":
        return [w for w in (_claude_state(home, projects), _claude_settings(home)) if w]
    if harness == "codex":
        found = _codex(home, projects)
        return [found] if found else []
    return []


def missing(harness: str, home: Path, projects: list[Project]) -> list[Setting]:
    return [setting for write in plan(harness, home, projects) for setting in write.settings]


def apply(writes: list[Write]) -> None:
    for write in writes:
        write.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = write.path.with_name(f".{write.path.name}.orange-tmp")
        tmp.write_text(write.content, encoding="utf-8")
        if write.path.exists():
            tmp.chmod(write.path.stat().st_mode & 0o777)
        else:
            tmp.chmod(0o600)
        os.replace(tmp, write.path)


def _claude_state(home: Path, projects: list[Project]) -> Write | None:
    path = home / ".claude.json"
    data = read_json_object(path)
    added: list[Setting] = []
    if data.get("hasCompletedOnboarding") is not True:
        data["hasCompletedOnboarding"] = True
        added.append(Setting("claude", "theme picker", path, "hasCompletedOnboarding = true"))
    entries = data.setdefault("projects", {})
    if not isinstance(entries, dict):
        raise InvalidInput(f"{path}: projects is not an object; Orange will not change it")
    for where in project_paths(projects):
        entry = entries.setdefault(where, {})
        if isinstance(entry, dict) and entry.get("hasTrustDialogAccepted") is not True:
            entry["hasTrustDialogAccepted"] = True
            key = f"projects[{json.dumps(where)}].hasTrustDialogAccepted = true"
            added.append(Setting("claude", "folder trust question", path, key))
    # The key the agents get: config.yml's harness_env for claude, else this shell's.
    key = harness_env("claude").get(API_KEY_VARIABLE) or os.environ.get(API_KEY_VARIABLE, "")
    if key:
        responses = data.setdefault("customApiKeyResponses", {})
        approved = responses.setdefault("approved", []) if isinstance(responses, dict) else None
        rejected = responses.get("rejected", []) if isinstance(responses, dict) else []
        refused = isinstance(rejected, list) and key[-20:] in rejected
        if isinstance(approved, list) and key[-20:] not in approved and not refused:
            approved.append(key[-20:])
            what = "customApiKeyResponses.approved += last 20 characters of ANTHROPIC_API_KEY"
            added.append(Setting("claude", "API key approval", path, what))
    if not added:
        return None
    return Write(path, json.dumps(data, indent=2) + "\n", tuple(added))


def _claude_settings(home: Path) -> Write | None:
    path = home / ".claude" / "settings.json"
    data = read_json_object(path)
    if data.get("skipDangerousModePermissionPrompt") is True:
        return None
    data["skipDangerousModePermissionPrompt"] = True
    setting = Setting(
        "claude", "bypass-permissions warning", path, "skipDangerousModePermissionPrompt = true"
    )
    return Write(path, json.dumps(data, indent=2) + "\n", (setting,))


def _codex(home: Path, projects: list[Project]) -> Write | None:
    path = home / ".codex" / "config.toml"
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path}: not valid TOML ({exc}); Orange will not change it") from None
    known = data.get("projects", {})
    if not isinstance(known, dict):
        raise InvalidInput(f"{path}: projects is not a table; Orange will not change it")
    added: list[Setting] = []
    blocks: list[str] = []
    for where in project_paths(projects):
        entry = known.get(where)
        if isinstance(entry, dict) and "trust_level" in entry:
            continue  # trusted, or a person's own decision (untrusted): never changed
        if entry is not None:
            continue  # a table Orange would have to edit: left to the person
        blocks.append(f'\n[projects.{json.dumps(where)}]\ntrust_level = "trusted"\n')
        key = f"[projects.{json.dumps(where)}] trust_level = trusted"
        added.append(Setting("codex", "folder trust question", path, key))
    if not added:
        return None
    content = text + ("" if not text or text.endswith("\n") else "\n") + "".join(blocks)
    try:
        tomllib.loads(content)
    except tomllib.TOMLDecodeError as exc:
        raise InvalidInput(f"{path}: Orange cannot add project trust to it ({exc})") from None
    return Write(path, content, tuple(added))
