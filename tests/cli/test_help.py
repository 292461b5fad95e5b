"""Every command explains itself: each option has help text, and help reads as text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import typer

from orange.cli.main import build_app
from tests.conftest import Cli


def _commands(command: Any, path: str) -> Iterator[tuple[str, Any]]:
    subcommands = getattr(command, "commands", None)
    if subcommands is None:
        yield path, command
        return
    for name, sub in subcommands.items():
        yield from _commands(sub, f"{path} {name}")


def _all() -> list[tuple[str, Any]]:
    return list(_commands(typer.main.get_command(build_app()), "orange"))


def test_every_option_has_help_text() -> None:
    missing = [
        f"{path} {'/'.join(param.opts)}"
        for path, command in _all()
        for param in command.params
        if type(param).__name__.endswith("Option") and param.name != "help" and not param.help
    ]
    assert missing == []


def test_help_texts_show_no_rest_markup() -> None:
    marked = [path for path, command in _all() if "``" in (command.help or "")]
    assert marked == []


def test_monitor_stop_and_install_speak_json(cli: Cli, hermetic: Path) -> None:
    assert json.loads(cli.ok("monitor", "stop", "--json").out) == {"stopped": False}
    installed = json.loads(cli.ok("install", "--harness", "pi", "--json").out)["files"]
    assert installed == [
        {"path": str(hermetic / ".pi/agent/skills/orange-task/SKILL.md"), "outcome": "written"},
        {
            "path": str(hermetic / ".pi/agent/skills/orange-orchestrator/SKILL.md"),
            "outcome": "written",
        },
        {"path": str(hermetic / ".pi/agent/extensions/orange-stop.js"), "outcome": "written"},
    ]


# Commands that print nothing a machine would read: `demo` narrates a throwaway run for
# a person, `hook-impl` speaks git's hook protocol (exit status and stderr), and
# `task attach` hands the terminal to tmux, `dashboard` is a full-screen application,
# `host nudge` is Orange's own detached helper (its lines go to a log, never a person).
NO_JSON = {
    "orange dashboard",
    "orange demo",
    "orange hook-impl",
    "orange host nudge",
    "orange task attach",
}


def test_every_command_that_prints_takes_json() -> None:
    lacking = [
        path
        for path, command in _all()
        if path not in NO_JSON and not any("--json" in param.opts for param in command.params)
    ]
    assert lacking == []


def test_run_help_lists_the_options_of_a_run(cli: Cli) -> None:
    # `orange run REQUEST` is `orange run start REQUEST`: a user reading `orange run
    # --help` must see how to pass answers or the number of agents there.
    page = cli("run", "--help").out
    options = page.split("Options of a run", 1)[1]
    for option in ("--answers", "--agents", "--architect", "--swe", "--no-pr"):
        assert option in options
