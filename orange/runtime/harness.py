"""The harness table: how to start each coding agent, and the files it reads.

A harness is an argv template per role.  ``{prompt}`` in an element becomes the whole
prompt inside that one argument (substituted literally, never split or formatted); an
empty prompt drops every element that holds ``{prompt}``.  The result goes to
`orange.runtime.tmux.Tmux.start`, which runs it with no shell in between.

Flags of the built-ins, each checked against the tool's documentation (flags change
between releases; the comment on each table entry says where it comes from).
User-defined harnesses come from ``$ORANGE_HOME/config.yml``::

    harnesses:
      mine:
        command: [my-agent, --yes, "{prompt}"]
        review_command: [my-agent, --read-only, "{prompt}"]   # default: command
        reduced_worker_command: [my-agent, --sandboxed, "{prompt}"]  # default: command

``review_command`` starts every reviewer; ``reduced_worker_command`` starts a worker
that a workflow asks for with ``permissions: reduced``.  (The latter was called
``respawn_command`` until issue 10, a name that said nothing of what it is for: the old
key still works, with a one-line deprecation warning on stderr.)
        effort_flag: --effort                                 # optional
        effort_levels: [low, high]                            # optional
        exec_command: [my-agent, --print, "{prompt}"]         # optional, for `orange run`

``exec_command`` runs the agent non-interactively for `orange run` (architect and SWE):
one turn, the answer on stdout (`orange.run.headless` reads it).

A user-defined harness named like a built-in replaces it.

Built-ins: claude, pi, opencode, codex, and ``demo``, Orange's own scripted stand-in
(`orange.demo_agent`: no model, no real edits) for trying Orange without a coding agent;
it runs only when named.

Effort: a harness with an effort flag gets ``FLAG LEVEL`` right after its binary (codex:
``-c model_reasoning_effort=LEVEL``), and a level it does not list is an error.  Asking
for an effort when creating a task with a harness that has none (opencode, most
user-defined ones) is refused; a task that keeps its effort while moving to such a
harness starts without it, since effort is a hint the task keeps for later.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NamedTuple

from orange.engine.caller import AGENT_COMMANDS
from orange.errors import InvalidInput
from orange.home import host_name, load_config, orange_home
from orange.runtime.git import git_ok
from orange.store.files import replace_file

Role = Literal["worker", "reviewer", "reduced_worker"]
PROMPT = "{prompt}"

# Paths a worktree's info/exclude gets, so agent files never show up as changes.
EXCLUDES: tuple[str, ...] = (
    "TASK.md",
    ".claude/",
    ".pi/",
    ".codex/",
    ".opencode/",
    "opencode.json",
    ".orange-task",
)

# The usage readers a harness may name (`orange.runtime.usage.READERS`, not imported:
# every agent start loads this module, the readers only a record does).
USAGE_READERS: tuple[str, ...] = ("claude", "codex", "pi", "opencode")
NO_USAGE = "none"  # a harness whose program calls no model: it costs nothing

# Preference order when no harness is named (HARNESSES.md); user-defined ones follow.
DEFAULT_ORDER: tuple[str, ...] = ("claude", "pi", "opencode", "codex")

# Claude Code permission rules (https://code.claude.com/docs/en/permissions, a prefix
# per rule): the `orange` commands an agent may run, the CLI's own list.  Orange used to
# allow every command (`Bash(orange:*)`): a settings file it merges loses that rule.
ORANGE_PERMISSIONS: tuple[str, ...] = tuple(f"Bash(orange {c}:*)" for c in AGENT_COMMANDS)
FORMER_PERMISSION = "Bash(orange:*)"

_NAME = re.compile(r"[a-z0-9][a-z0-9_-]*")
_KEYS = {
    "command",
    "review_command",
    "reduced_worker_command",
    "effort_flag",
    "effort_levels",
    "exec_command",
    "usage",
}
# Config keys renamed, old name -> new name: the old one is read with a warning.
RENAMED_KEYS: Mapping[str, str] = {"respawn_command": "reduced_worker_command"}


@dataclass(frozen=True)
class Harness:
    name: str
    binary: str
    worker: tuple[str, ...]
    reviewer: tuple[str, ...]
    reduced_worker: tuple[str, ...]  # a worker started with `permissions: reduced`
    effort_flag: str | None = None
    effort_levels: tuple[str, ...] = ()
    # The value after the flag, ``{effort}`` standing for the level (codex takes a config
    # override, ``-c model_reasoning_effort=high``, where the others take the level).
    effort_value: str = "{effort}"
    excludes: tuple[str, ...] = ()
    builtin: bool = True
    exec_command: tuple[str, ...] = ()  # a user harness's non-interactive argv (`orange run`)
    usage: str = ""  # whose session files hold its token use (`orange.runtime.usage`)

    def command(
        self, prompt: str, *, role: Role = "worker", effort: str | None = None
    ) -> list[str]:
        """The argv that starts this agent in ``role`` with ``prompt``."""
        roles = {
            "worker": self.worker,
            "reviewer": self.reviewer,
            "reduced_worker": self.reduced_worker,
        }
        template = roles[role]
        argv = [arg.replace(PROMPT, prompt) for arg in template if prompt or PROMPT not in arg]
        if effort and self.effort_flag:
            self.check_effort(effort)
            argv[1:1] = [self.effort_flag, self.effort_value.replace("{effort}", effort)]
        return argv

    def check_effort(self, effort: str) -> None:
        """Refuse an effort this harness cannot pass on: a level it does not list, or any
        level when it has no effort setting at all (asked for explicitly, an effort that
        would be dropped silently is a surprise)."""
        if not self.effort_flag:
            raise InvalidInput(
                f'harness "{self.name}" has no effort setting',
                hint="leave out --effort/--review-effort for it",
            )
        if self.effort_levels and effort not in self.effort_levels:
            raise InvalidInput(
                f'harness "{self.name}" has no effort level "{effort}"',
                hint=f"use one of {', '.join(self.effort_levels)}",
            )

    def installed(self) -> bool:
        return self.path() is not None

    def path(self) -> str | None:
        """The absolute path of the binary: found on PATH (and then recorded for this
        host), else as this host last found it (`binary_paths`), else None."""
        found = shutil.which(self.binary)
        if found is not None:
            found = str(Path(found).absolute())
            if self.builtin or not os.path.isabs(self.binary):
                _remember(self.name, found)
            return found
        recorded = binary_paths().get(self.name)
        if recorded and os.path.isabs(recorded) and os.access(recorded, os.X_OK):
            return recorded
        return None

    def setup(self, worktree: Path) -> list[Path]:
        """Write the files this harness reads into ``worktree`` (never over a file the
        project tracks); returns the files written."""
        writes: list[Path] = []
        if self.name == "claude" and self.builtin:
            # Project-local settings, untracked by convention:
            # https://code.claude.com/docs/en/settings (.claude/settings.local.json).
            path = worktree / ".claude" / "settings.local.json"
            if _merge_json(worktree, path, _allow_orange):
                writes.append(path)
        elif self.name == "opencode" and self.builtin:
            # `"permission": "allow"` sets every permission at once:
            # https://opencode.ai/docs/permissions ("set all permissions at once").
            path = worktree / "opencode.json"
            if _merge_json(worktree, path, _allow_all):
                writes.append(path)
        return writes


# Built-ins.  Sources:
#   claude  https://code.claude.com/docs/en/cli-reference (flags table, mirrored at
#           docs.arantic.com/claude-code/flags): --dangerously-skip-permissions,
#           --disallowedTools with permission rules like "Bash(git log:*)",
#           --effort low|medium|high|xhigh|max.  --disallowedTools is variadic and would
#           swallow the prompt, so "--" ends the options (anthropics/claude-code#25978;
#           escoffier-labs/brigade#451 verified "--" against Claude Code 2.1.217).
#   pi      pi 0.73.1 `--help`: `pi [options] [@files...] [messages...]` starts the
#           interactive mode with a first message; --thinking off|minimal|low|medium|
#           high|xhigh (no max in this release).  No "--": older releases reject it, so
#           a prompt must not start with "-" or "@".
#   opencode opencode 1.18.33 `--help`: `opencode [project]` starts the TUI, `--prompt`
#           gives it a first prompt (as `--prompt=TEXT`, so a prompt starting with "-"
#           stays a value); `opencode run` is one non-interactive turn.  No effort flag.
#   codex   codex-cli 0.169.0 `--help`: `codex [OPTIONS] [PROMPT]` ("if no subcommand
#           is specified, options will be forwarded to the interactive CLI"),
#           --dangerously-bypass-approvals-and-sandbox, -s/--sandbox workspace-write for
#           the reduced role; `codex exec` is the one-turn, non-interactive mode.  Effort
#           is a config override, `-c model_reasoning_effort=LEVEL` (minimal, low,
#           medium, high, xhigh in codex's configuration reference).  codex-cli
#           0.171.0 `--help`: `--no-daemon` ("run without the shared background
#           server, even if it is already running").  Without it the TUI runs its tool
#           calls in one app-server daemon per HOME, started by the first TUI with that
#           TUI's environment: a second task's commands ran as the first task's agent
#           (issue 25).  `codex exec` never uses the daemon (and rejects the flag).
#           Seen with codex-cli 0.171.0: a TUI given `-c` overrides or
#           `--dangerously-bypass-hook-trust` also runs without the daemon (options the
#           shared server cannot take per client), so `--no-daemon` is what keeps it so
#           should those go; tests/agents/test_codex_together.py runs two tasks beside a
#           daemon started with another task's environment (red without all three).
#           `-c allow_login_shell=false` (a key of codex 0.171's config.toml): codex runs
#           an agent's commands in a login shell by default, whose profile resets PATH,
#           so an Orange in an activated venv was `orange: command not found` and the
#           agent's move to agent-review found no reviewer binary (issue 25).  Seen
#           with codex-cli 0.171.0 and a scripted model: a directory first on codex's
#           PATH was gone from its commands' PATH by default and kept with the setting.
#   demo    Orange's own scripted stand-in (`orange.demo_agent`, run by this Python): no
#           model, no real edits.  The worker leaves the plan to a person, then commits
#           a note file, hands off, and its reviewer passes the work.  For trying Orange
#           (the README tour) where no coding agent is installed; never picked unless
#           named (`--harness demo`).
# Workers and reviewers run interactively (a persistent worker lives through reviews,
# and a human who attaches finds the agent to talk to); tests check every command line
# against the `--help` text of each tool's release, kept under tests/fixtures.
_CLAUDE = ("claude", "--dangerously-skip-permissions")
_NO_GH_POSTS = ("--disallowedTools", "Bash(gh pr review:*)", "Bash(gh pr comment:*)")
# Each agent's commands in its own process, with the PATH Orange started it with (above).
_CODEX = ("codex", "--no-daemon", "-c", "allow_login_shell=false")
# Full permissions, and the hooks Orange installed run without codex's "Hooks need
# review" screen: codex 0.171 asks a person to trust each hook (a hash Orange cannot
# write), so an agent started after `orange install --harness codex` waited on it.
# `--dangerously-bypass-hook-trust` ("for automation that already vets hook sources")
# adds nothing an agent that bypasses approvals and the sandbox could not already run;
# the reduced role keeps codex's hook trust.
_CODEX_FULL = ("--dangerously-bypass-approvals-and-sandbox", "--dangerously-bypass-hook-trust")
_DEMO = (sys.executable, "-P", "-m", "orange.demo_agent")  # -P: never a worktree's orange
DEMO = "demo"  # the stand-in: a built-in, but only ever run when named

BUILTINS: dict[str, Harness] = {
    "claude": Harness(
        name="claude",
        binary="claude",
        worker=(*_CLAUDE, "--", PROMPT),
        reviewer=(*_CLAUDE, *_NO_GH_POSTS, "--", PROMPT),
        reduced_worker=(*_CLAUDE, "--", PROMPT),
        effort_flag="--effort",
        effort_levels=("low", "medium", "high", "xhigh", "max"),
        excludes=(".claude/",),
        usage="claude",
    ),
    "pi": Harness(
        name="pi",
        binary="pi",
        worker=("pi", PROMPT),
        reviewer=("pi", PROMPT),
        reduced_worker=("pi", PROMPT),
        effort_flag="--thinking",
        effort_levels=("off", "minimal", "low", "medium", "high", "xhigh"),
        excludes=(".pi/",),
        usage="pi",
    ),
    "opencode": Harness(
        name="opencode",
        binary="opencode",
        worker=("opencode", f"--prompt={PROMPT}"),
        reviewer=("opencode", f"--prompt={PROMPT}"),
        reduced_worker=("opencode", f"--prompt={PROMPT}"),
        excludes=(".opencode/", "opencode.json"),
        usage="opencode",
    ),
    "codex": Harness(
        name="codex",
        binary="codex",
        worker=(*_CODEX, *_CODEX_FULL, "--", PROMPT),
        reviewer=(*_CODEX, *_CODEX_FULL, "--", PROMPT),
        reduced_worker=(*_CODEX, "--sandbox", "workspace-write", "--", PROMPT),
        effort_flag="-c",
        effort_value="model_reasoning_effort={effort}",
        effort_levels=("minimal", "low", "medium", "high", "xhigh"),
        excludes=(".codex/",),
        usage="codex",
    ),
    DEMO: Harness(
        name=DEMO,
        binary=sys.executable,
        worker=(*_DEMO, "--role", "worker", "--plan-by", "human", "--", PROMPT),
        reviewer=(*_DEMO, "--role", "reviewer", "--", PROMPT),
        reduced_worker=(*_DEMO, "--role", "worker", "--plan-by", "human", "--", PROMPT),
        usage="claude",  # the stand-in writes Claude Code's session format when told to
    ),
}


class Screen(NamedTuple):  # not a dataclass: read by every monitor pass
    """A screen on which an agent program waits for a person (a first-use question, a
    login), known by ``text``: words it shows, matched with runs of white space taken
    as one space (a TUI wraps its lines where the pane's width says).  ``fix`` is what
    to do, for the task's ``attention``; ``exits``: the program shows it as it exits,
    so it is read from the dead pane (the agent waits for nobody, but will not start)."""

    name: str
    text: str
    fix: str
    exits: bool = False


_INSTALL = "run `orange install --harness {h}` (it settles this for every task), or attach"
# The screens of each built-in, as the programs showed them in a pane (each release
# named).  Claude Code 2.1.197, run with a fresh HOME: the theme picker on first start
# (before onboarding), the folder trust question (per main checkout), the API-key
# approval (ANTHROPIC_API_KEY users), the bypass-permissions warning (once per HOME,
# default "1. No, exit"), the login choice; as root without IS_SANDBOX=1 it prints the
# refusal and exits 1 (its source: `process.getuid()===0&&process.env.IS_SANDBOX!=="1"`).
# Without onboarding done and no way to api.anthropic.com it says it cannot connect, exits 1.
# codex-cli 0.171.0 with a fresh HOME: the sign-in choice, "Trust this folder?" (per
# repository root), "Hooks need review" (a hook it does not know yet, e.g. Orange's stop
# hook).  opencode 1.18.33 and pi 0.73.1 showed no blocking screen with a provider set;
# with a fresh HOME in tmux: opencode falls back to its own free model and, offline,
# says it cannot connect and idles; where its permission is "ask" (a project's own
# tracked opencode.json, which Orange leaves alone) it asks before each command.  pi
# with no provider says "No API key found for the selected model" and idles; with one it
# cannot reach, "Error: Retry failed after 3 attempts: Connection error." and idles.
SCREENS: dict[str, tuple[Screen, ...]] = {
    "claude": (
        Screen(
            "theme picker",
            "Choose the text style that looks best with your terminal",
            _INSTALL.format(h="claude") + " and pick a style",
        ),
        Screen(
            "folder trust question",
            "Is this a project you created or one you trust?",
            _INSTALL.format(h="claude") + " and answer 1",
        ),
        Screen(
            "API key approval",
            "Do you want to use this API key?",
            "attach and answer 1. Yes (once per key)",
        ),
        Screen(
            "bypass-permissions warning",
            "Claude Code running in Bypass Permissions mode",
            _INSTALL.format(h="claude") + " and answer 2 (its default, 1, exits)",
        ),
        Screen(
            "login choice",
            "Select login method:",
            "run `claude` once in a terminal and log in",
        ),
        Screen(
            "root refusal",
            "--dangerously-skip-permissions cannot be used with root/sudo privileges",
            "Claude Code refuses to run as root unless IS_SANDBOX=1: where you accept "
            'that, set `harness_env: {claude: {IS_SANDBOX: "1"}}` in config.yml, then '
            "`orange task respawn`",
            exits=True,
        ),
        Screen(
            "connection check",
            "Unable to connect to Anthropic services",
            "Claude Code checks its connection to Anthropic once, before onboarding: "
            "`orange install --harness claude` marks onboarding done (no check), or let "
            "it reach the network, then `orange task respawn`",
            exits=True,
        ),
    ),
    "codex": (
        Screen(
            "sign-in choice",
            "Choose how you want to use Codex",
            "run `codex login` once in a terminal",
        ),
        Screen(
            "folder trust question",
            "Trust this folder?",
            _INSTALL.format(h="codex") + " and answer 1",
        ),
        Screen(
            "hooks review",
            "Hooks need review",
            _INSTALL.format(h="codex") + " and trust Orange's stop hook",
        ),
    ),
    "opencode": (
        Screen(
            "permission prompt",
            "Allow once Allow always Reject",
            "attach and answer; the project's own opencode.json asks before commands: "
            'set "permission": "allow" in it for agents to run unattended',
        ),
        Screen(
            "connection error",
            "Cannot connect to API:",
            "opencode could not reach its model: configure a provider in "
            "~/.config/opencode/opencode.json (or run `opencode providers login`), then "
            "`orange task respawn`",
        ),
    ),
    "pi": (
        Screen(
            "missing API key",
            "No API key found for the selected model",
            "run `pi` once in a terminal and /login, or add a provider to "
            "~/.pi/agent/models.json, then `orange task respawn`",
        ),
        Screen(
            "connection error",
            "Error: Retry failed after",
            "pi could not reach its model: check its provider (~/.pi/agent/models.json, "
            "/login) and the network, then attach and say go on",
        ),
    ),
}


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def waiting_screen(harness: str, pane_text: str, *, dead: bool = False) -> Screen | None:
    """The known screen of ``harness`` that ``pane_text`` shows (``dead``: the last
    output of an agent that exited), or None."""
    shown = _squeezed(pane_text)
    for screen in SCREENS.get(harness, ()):
        if screen.exits == dead and _squeezed(screen.text) in shown:
            return screen
    return None


def orange_executable() -> str:
    """The absolute path of this `orange` (beside this Python, as a venv has it), else
    the one on PATH, else plain ``orange``."""
    beside = Path(sys.executable).with_name("orange")
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which("orange") or "orange"


def _paths_file() -> Path:
    host = host_name().replace(os.sep, "_").replace("\0", "_") or "_"
    return orange_home() / "harness-paths" / f"{host}.json"


def binary_paths() -> dict[str, str]:
    """Each harness's binary as this host last found it on a PATH: a command run from
    an agent's shell (whose PATH may be its shell profile's, as codex's login shell)
    still starts a reviewer.  A local record, never anything from the tasks ref."""
    try:
        data = json.loads(_paths_file().read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _remember(name: str, path: str) -> None:
    known = binary_paths()
    if known.get(name) == path:
        return
    known[name] = path
    try:
        _paths_file().parent.mkdir(parents=True, exist_ok=True)
        replace_file(_paths_file(), json.dumps(known, indent=1))
    except OSError:
        pass  # a read-only home: the next spawn looks on PATH again


def harness_env(name: str) -> dict[str, str]:
    """What the user adds to the environment of ``name``'s agents: ``harness_env:`` in
    config.yml, a mapping of harness name to variables (``IS_SANDBOX: "1"`` for Claude
    Code as root, where the user accepts it)."""
    path, config = _config()
    table = config.get("harness_env") or {}
    if not isinstance(table, Mapping):
        raise InvalidInput(f"{path}: harness_env: must map a harness name to variables")
    env = table.get(name) or {}
    if not isinstance(env, Mapping) or not all(
        isinstance(k, str) and k and "=" not in k and isinstance(v, str | int)
        for k, v in env.items()
    ):
        raise InvalidInput(
            f'{path}: harness_env.{name}: must map variable names to strings (IS_SANDBOX: "1")'
        )
    return {k: str(v) for k, v in env.items()}


def _config() -> tuple[Path, dict[str, Any]]:

    return orange_home() / "config.yml", load_config()


def load_harnesses() -> dict[str, Harness]:
    """Built-ins, then the user's harnesses from config.yml (in file order)."""
    path, config = _config()
    table = dict(BUILTINS)
    raw = config.get("harnesses")
    if raw is None:
        return table
    if not isinstance(raw, Mapping):
        raise InvalidInput(f"{path}: harnesses: must be a mapping of name to harness")
    for name, entry in raw.items():
        table[str(name)] = _parse(path, name, entry)
    return table


def _parse(path: Path, name: object, entry: object) -> Harness:
    where = f"{path}: harnesses.{name}"
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInput(f"{where}: a harness name uses lowercase letters, digits, - and _")
    if not isinstance(entry, Mapping):
        raise InvalidInput(f"{where}: must be a mapping with a command")
    entry = _renamed(where, entry)
    unknown = sorted(set(map(str, entry)) - _KEYS)
    if unknown:
        raise InvalidInput(f"{where}: unknown key {unknown[0]} (known: {', '.join(sorted(_KEYS))})")
    command = _argv(where, "command", entry.get("command"))
    if not any(PROMPT in arg for arg in command):
        raise InvalidInput(f'{where}.command: must contain "{PROMPT}" where the prompt goes')
    review = entry.get("review_command")
    reduced = entry.get("reduced_worker_command")
    flag = entry.get("effort_flag")
    if flag is not None and (not isinstance(flag, str) or not flag.startswith("-")):
        raise InvalidInput(f"{where}.effort_flag: must be an option such as --effort")
    run = entry.get("exec_command")
    exec_command = () if run is None else _argv(where, "exec_command", run)
    if run is not None and not any(PROMPT in arg for arg in exec_command):
        raise InvalidInput(f'{where}.exec_command: must contain "{PROMPT}" where the prompt goes')
    usage = entry.get("usage") or ""
    if usage not in ("", NO_USAGE, *USAGE_READERS):
        raise InvalidInput(
            f"{where}.usage: must name a built-in usage reader: {', '.join(USAGE_READERS)} "
            f"(or {NO_USAGE}: a program that calls no model)"
        )
    levels = entry.get("effort_levels") or []
    if not isinstance(levels, list) or not all(isinstance(x, str) for x in levels):
        raise InvalidInput(f"{where}.effort_levels: must be a list of strings")
    return Harness(
        name=name,
        binary=command[0],
        worker=command,
        reviewer=command if review is None else _argv(where, "review_command", review),
        reduced_worker=(
            command if reduced is None else _argv(where, "reduced_worker_command", reduced)
        ),
        effort_flag=flag,
        effort_levels=tuple(levels),
        builtin=False,
        exec_command=exec_command,
        usage=str(usage),
    )


_warned: set[str] = set()  # deprecation warnings already given by this process


def _renamed(where: str, entry: Mapping[Any, Any]) -> Mapping[Any, Any]:
    """``entry`` with each old key name read as its new one; one warning per key per
    process on stderr (the table is loaded many times by one command).  Both names at
    once is an error: which one is meant is not for Orange to guess."""
    out = dict(entry)
    for old, new in RENAMED_KEYS.items():
        if old not in out:
            continue
        if new in out:
            raise InvalidInput(f"{where}: both {old} and {new} given; keep only {new}")
        out[new] = out.pop(old)
        message = f"{where}.{old} is deprecated: rename it to {new} (same meaning)"
        if message not in _warned:
            _warned.add(message)
            print(f"warning: {message}", file=sys.stderr)
    return out


def _argv(where: str, key: str, value: object) -> tuple[str, ...]:
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(arg, str) for arg in value)
        or not value[0]
    ):
        raise InvalidInput(
            f"{where}.{key}: must be a non-empty list of strings (the program, then its "
            f'arguments, with "{PROMPT}" where the prompt goes)'
        )
    return tuple(value)


def resolve(name: str | None) -> Harness:
    """The named harness, or the first installed one in the default order."""
    table = load_harnesses()
    if name:
        harness = table.get(name)
        if harness is None:
            raise InvalidInput(f'unknown harness "{name}" (known: {", ".join(table)})')
        if not harness.installed():
            raise InvalidInput(
                f'harness "{name}" is not installed: "{harness.binary}" not found on PATH'
            )
        return harness
    order = [*DEFAULT_ORDER, *(n for n in table if n not in DEFAULT_ORDER)]
    # The stand-in is never a default: a task meant for a real agent must not quietly
    # get a scripted one (a user's own harness named demo is picked like any other).
    order = [n for n in order if n != DEMO or not table[DEMO].builtin]
    for candidate in order:
        if candidate in table and table[candidate].installed():
            return table[candidate]
    path, _ = _config()
    raise InvalidInput(
        "no coding agent found on PATH (looked for " + ", ".join(order) + ")",
        hint=f"install one of claude, pi, opencode, codex, define a harness under "
        f"`harnesses:` in {path}, or try Orange with its scripted stand-in: --harness demo",
    )


def check_some_effort(effort: str) -> None:
    """Refuse an effort level no harness of this host takes (for a task whose harness
    is chosen only when it starts): that start would be refused, and a task's effort
    is not changed after it is created.  A harness with an effort setting that lists
    no levels takes any."""
    table = load_harnesses().values()
    flagged = [h for h in table if h.effort_flag]
    if not flagged or any(not h.effort_levels for h in flagged):
        return
    levels = sorted({level for h in flagged for level in h.effort_levels})
    if effort not in levels:
        raise InvalidInput(
            f'no harness has effort level "{effort}" (levels: {", ".join(levels)})',
            hint="pass one of them, or --harness to choose the agent",
        )


def installed_names() -> list[str]:
    """The installed harnesses, in the order `resolve` prefers them, for a person to
    choose from: the ``demo`` stand-in is offered, last, never first."""
    table = load_harnesses()
    order = [*DEFAULT_ORDER, *(n for n in table if n not in DEFAULT_ORDER)]
    found = [name for name in order if name in table and table[name].installed()]
    return sorted(found, key=lambda name: name == DEMO and table[name].builtin)


def review_name(explicit: str | None, task_harness: str) -> str:
    """The reviewer's harness: ``--review-harness``, else config ``review_harness``, else
    the task's own harness."""
    if explicit:
        return explicit
    path, config = _config()
    configured = config.get("review_harness")
    if configured is not None and not isinstance(configured, str):
        raise InvalidInput(f"{path}: review_harness: must be a harness name")
    return configured or task_harness


# -- worktree files -----------------------------------------------------------------


def allow_agent_commands(allow: list[Any]) -> None:
    """Make a settings file's ``permissions.allow`` list the agent's `orange` commands
    (`ORANGE_PERMISSIONS`), and no longer every command; other rules are kept."""
    allow[:] = [rule for rule in allow if rule != FORMER_PERMISSION]
    allow.extend(rule for rule in ORANGE_PERMISSIONS if rule not in allow)


def _allow_orange(data: dict[str, Any]) -> None:
    permissions = data.setdefault("permissions", {})
    if not isinstance(permissions, dict):
        raise ValueError("permissions is not a mapping")
    allow = permissions.setdefault("allow", [])
    if not isinstance(allow, list):
        raise ValueError("permissions.allow is not a list")
    allow_agent_commands(allow)


def _allow_all(data: dict[str, Any]) -> None:
    data.setdefault("$schema", "https://opencode.ai/config.json")
    data["permission"] = "allow"


def _merge_json(worktree: Path, path: Path, change: Any) -> bool:
    """Apply ``change`` to the JSON object at ``path`` (created when absent); leaves a
    file the project tracks, or one that is not a JSON object, alone.  True if written."""

    relative = str(path.relative_to(worktree))
    if git_ok("ls-files", "--error-unmatch", "--", relative, cwd=worktree):
        return False
    data: Any = {}
    if path.exists():
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
    if not isinstance(data, dict):
        return False
    before = json.dumps(data, sort_keys=True)
    try:
        change(data)
    except ValueError:
        return False
    if path.exists() and json.dumps(data, sort_keys=True) == before:
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return True
