"""``orange doctor``: what would stop a first task on this machine, and what to run.

Each finding is one line: ``ok``, ``warn`` (a task runs, something is worse than it
should be) or ``error`` (a first task would not start, or would wait on a screen nobody
sees).  Checked: tmux and git and their versions, a registered project, each coding
agent on PATH, and for Claude Code and codex the settings that answer their first-use
screens (`orange.ops.firstuse`), Claude Code as root without ``IS_SANDBOX=1``, a stop
hook that `orange install` would rewrite, whether ``orange`` is on codex's
login-shell PATH, and the ``harness_env:``, ``notify:`` and ``prices:`` of config.yml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from orange import projects
from orange.errors import NotFound, OrangeError
from orange.ops import firstuse
from orange.ops.install import stale_stop_files
from orange.runtime import notices, prices
from orange.runtime.harness import DEFAULT_ORDER, DEMO, harness_env, load_harnesses

TMUX_MIN = (3, 0)
GIT_MIN = (2, 25)  # git worktree add/remove/prune as Orange uses them
SHELL_TIMEOUT = 5.0


class Finding(NamedTuple):
    check: str
    level: str  # ok, warn, error
    message: str
    fix: str = ""

    def line(self) -> str:
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{self.level:5} {self.check}: {self.message}{fix}"


def _version(text: str) -> tuple[int, ...] | None:
    found = re.search(r"(\d+)\.(\d+)", text)
    return (int(found.group(1)), int(found.group(2))) if found else None


def _program(check: str, argv: list[str], least: tuple[int, int], install: str) -> Finding:
    if shutil.which(argv[0]) is None:
        return Finding(check, "error", f"{argv[0]} is not on PATH", install)
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Finding(check, "error", f"`{' '.join(argv)}` failed: {exc}", install)
    version = _version(out.stdout + out.stderr)
    shown = " ".join((out.stdout or out.stderr).split())
    if version is None or version < least:
        need = ".".join(map(str, least))
        return Finding(check, "error", f"{shown or argv[0]}: Orange needs {need} or newer", install)
    return Finding(check, "ok", shown)


def check(
    home: Path | None = None, cwd: Path | None = None, *, root: bool | None = None
) -> list[Finding]:
    """Every finding, in order (``root``: whether agents run as root; default: this
    process's effective user is root)."""
    home = Path.home() if home is None else home
    if root is None:
        root = hasattr(os, "geteuid") and os.geteuid() == 0
    found = [
        _program("tmux", ["tmux", "-V"], TMUX_MIN, "install tmux 3.0 or newer"),
        _program("git", ["git", "--version"], GIT_MIN, "install git 2.25 or newer"),
    ]
    registered = projects.load_all()
    found.append(_project(registered, cwd))
    table = load_harnesses()
    names = [*DEFAULT_ORDER, *(n for n in table if n not in DEFAULT_ORDER and n != DEMO)]
    installed = [n for n in names if n in table and table[n].installed()]
    if not installed:
        found.append(
            Finding(
                "agents",
                "error",
                "no coding agent on PATH (looked for " + ", ".join(names) + ")",
                "install Claude Code, codex, opencode or pi, or try `--harness demo`",
            )
        )
    for name in installed:
        found.append(
            Finding(name, "ok", f"{table[name].binary} is {shutil.which(table[name].binary)}")
        )
        try:
            harness_env(name)  # its agents would not start
        except OrangeError as exc:
            found.append(Finding(name, "error", exc.message, "correct it in config.yml"))
            continue
        found.extend(_harness(name, home, registered, root=root))
    try:
        notices.settings()
    except OrangeError as exc:  # tasks run; nobody is told when one waits
        found.append(Finding("notify", "warn", exc.message, "correct it in config.yml"))
    wrong = prices.table_or_shipped()[1]
    if wrong:  # the ledger prices with the shipped table meanwhile, and says so
        found.append(Finding("prices", "warn", wrong, "correct `prices:` in config.yml"))
    return found


def _project(registered: list[projects.Project], cwd: Path | None) -> Finding:
    if not registered:
        return Finding(
            "project",
            "error",
            "no project registered",
            "run `orange project add` in your repository",
        )
    try:
        here = projects.infer(cwd or Path.cwd())
    except (NotFound, OrangeError):
        names = ", ".join(p.name for p in registered)
        return Finding("project", "ok", f"registered: {names} (this folder is in none)")
    return Finding("project", "ok", f"{here.name} is registered ({here.path})")


def _harness(
    name: str, home: Path, registered: list[projects.Project], *, root: bool
) -> list[Finding]:
    found: list[Finding] = []
    if name == "claude" and root:
        sandbox = harness_env("claude").get("IS_SANDBOX", os.environ.get("IS_SANDBOX"))
        if sandbox != "1":
            found.append(
                Finding(
                    "claude",
                    "error",
                    "running as root: Claude Code refuses --dangerously-skip-permissions "
                    "unless IS_SANDBOX=1 (it exits at once)",
                    'where you accept that, add `harness_env: {claude: {IS_SANDBOX: "1"}}` '
                    "to config.yml",
                )
            )
    if name in firstuse.HARNESSES:
        try:
            settings = firstuse.missing(name, home, registered)
        except OrangeError as exc:
            return [*found, Finding(name, "error", exc.message, exc.hint or "")]
        by_screen: dict[tuple[str, Path], int] = {}
        for setting in settings:
            by_screen[(setting.screen, setting.path)] = (
                by_screen.get((setting.screen, setting.path), 0) + 1
            )
        for (screen, path), count in by_screen.items():
            what = "setting" if count == 1 else "settings"
            found.append(
                Finding(
                    name,
                    "error",
                    f"a first task would wait on the {screen} ({count} {what} missing in {path})",
                    f"orange install --harness {name}",
                )
            )
    for path in stale_stop_files(name, home):
        found.append(
            Finding(
                name,
                "warn",
                f"{path} was written by an older or another Orange installation",
                f"orange install --harness {name}",
            )
        )
    if name == "codex":
        found.extend(_codex_shell(home))
    return found


def _codex_shell(home: Path) -> list[Finding]:
    """codex runs an agent's commands in a login shell: is `orange` on its PATH?"""
    shell = os.environ.get("SHELL") or "/bin/sh"
    found: list[Finding] = []
    try:
        out = subprocess.run(
            [shell, "-lc", "command -v orange"],
            capture_output=True,
            text=True,
            timeout=SHELL_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        on_path = out.returncode == 0 and bool(out.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        on_path = False
    if not on_path:
        where = str(Path(sys.executable).parent)  # where this `orange` is
        found.append(
            Finding(
                "codex",
                "warn",
                f"`orange` is not on the PATH of a login shell ({shell} -l), where codex "
                "runs an agent's commands",
                f"add {where} to PATH in your shell profile",
            )
        )
    hooks = home / ".codex" / "hooks.json"
    try:
        has_hook = "orange-stop" in hooks.read_text(encoding="utf-8")
    except OSError:
        has_hook = False
    if has_hook:
        found.append(
            Finding(
                "codex",
                "warn",
                'codex asks once to trust Orange\'s stop hook ("Hooks need review")',
                "open /hooks in codex once and trust orange-stop.sh",
            )
        )
    return found


def blocking(findings: list[Finding]) -> bool:
    return any(f.level == "error" for f in findings)


def as_json(findings: list[Finding]) -> dict[str, object]:
    """``orange doctor --json``: also what this host tells another one that drives it
    over SSH (`orange.hosts.probe`)."""
    return {"ok": not blocking(findings), "findings": [f._asdict() for f in findings]}
