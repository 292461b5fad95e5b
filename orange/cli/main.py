"""The ``orange`` command: a thin typer layer over the core (STYLE §1)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable
from importlib import import_module
from typing import TYPE_CHECKING

from orange.cli.coercion import plain
from orange.cli.errors import EXIT_USAGE, report_bug, report_usage_error, report_user_error
from orange.cli.fast import fast_command
from orange.engine.caller import from_env
from orange.errors import EnvironmentProblem, InvalidInput, OrangeError

if TYPE_CHECKING:
    import typer


APP_HELP = (
    "Run many coding agents on one project, every transition gated and recorded in "
    "git.  Starting an agent also starts a background monitor (one per host) that "
    "notices agents that die: `orange monitor status`, `orange monitor stop` (until "
    "`orange monitor start`)."
)


# Every top-level name, in the order help lists them, with where it lives: a group made
# of the `COMMANDS` of one or more modules of `orange.cli` (help and callback from the
# first), `run`'s own group, or one command (`module:function`).  Only the entry a
# command line names is imported (as click's lazy groups do): a command pays for its own
# modules, not for the dashboard's and every other's.
_ENTRIES: tuple[tuple[str, str], ...] = (
    ("project", "project"),
    ("task", "task moves runtime"),
    ("workflow", "workflow"),
    ("workspace", "workspace"),
    ("monitor", "monitor"),
    ("dashboard", "dashboard:dashboard"),
    ("demo", "demo:demo"),
    ("install", "install:install"),
    ("doctor", "doctor:doctor"),
    ("notify", "notify:notify"),
    ("sync", "sync:sync_command"),
    ("host", "host"),
    ("run", "run:group"),
    ("stats", "stats:stats"),
    ("hooks", "githooks"),
    ("tasks", "tasks_checkout"),
    ("hook-impl", "githooks:hook_impl"),
)
_HIDDEN = ("hook-impl",)
# The variable a shell's completion script sets (typer's own scheme: `_<PROG>_COMPLETE`).
COMPLETE_VAR = "_ORANGE_COMPLETE"


def build_app(first: str | None = None) -> typer.Typer:
    """The typer application: every command, or only the top-level entry named
    ``first`` when it is one (a mistyped or missing name gets them all, for help)."""
    # typer (and the pydantic it loads) and the command modules cost more than an
    # agent's whole `task update`: only a command the fast path does not take loads them.
    import typer

    app = typer.Typer(
        name="orange",
        help=APP_HELP,
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )
    # A callback keeps `orange` a group when one command is all it holds (typer would
    # otherwise run that command as the whole program and take its name for an argument).
    app.callback()(_with_version_option(_root))
    names = {name for name, _ in _ENTRIES}
    for name, where in _ENTRIES:
        if first in names and name != first:
            continue
        if ":" not in where:
            modules = [import_module(f"orange.cli.{m}") for m in where.split()]
            commands = [c for module in modules for c in module.COMMANDS]
            callback = getattr(modules[0], "CALLBACK", None)
            hidden = getattr(modules[0], "HIDDEN", ())
            group = _group(modules[0].HELP, commands, callback=callback, hidden=hidden)
            app.add_typer(group, name=name)
            continue
        module, attribute = where.split(":")
        function = getattr(import_module(f"orange.cli.{module}"), attribute)
        if name == "run":
            app.add_typer(function(), name=name)
        else:
            app.command(name, hidden=name in _HIDDEN)(function)
    return app


def _root() -> None:
    pass


def _with_version_option(root: Callable[[], None]) -> Callable[..., None]:
    """``root`` with a ``--version`` option, for --help to list it: `run` answers it
    before typer is loaded."""
    import typer  # see build_app

    def callback(
        version: bool = typer.Option(
            False, "--version", help="Print Orange's version (with --json: as JSON)."
        ),
    ) -> None:
        root()

    return callback


def version_text() -> str:
    """This installation's version, as the package metadata has it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("orange")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _print_version(json_out: bool) -> None:
    if json_out:
        from orange.cli.output import emit_json

        emit_json({"version": version_text()})
    else:
        print(f"orange {version_text()}")


def _group(
    help_text: str,
    commands: Iterable[tuple[str, Callable[..., None]]],
    *,
    callback: Callable[..., None] | None = None,
    hidden: tuple[str, ...] = (),
) -> typer.Typer:
    """A command group: its commands registered here, explicitly, by name (those in
    ``hidden`` left out of its help: run by Orange itself)."""
    import typer  # see build_app

    group = typer.Typer(
        help=help_text,
        no_args_is_help=callback is None,
        invoke_without_command=callback is not None,
    )
    if callback is not None:
        group.callback()(callback)
    for name, command in commands:
        group.command(name, hidden=name in hidden)(command)
    return group


def run(argv: list[str] | None = None) -> int:
    """Entry point: run the command and map every outcome to an exit code."""
    args = _optional_values(list(sys.argv[1:] if argv is None else argv))
    if COMPLETE_VAR in os.environ:  # a shell asks for completions: the whole command tree
        return _run_typer(args)
    if not args and sys.stdin.isatty() and sys.stdout.isatty():
        args = ["dashboard"]  # a person at a terminal; agents (no terminal) get help
    if args[:1] == ["--version"] and set(args[1:]) <= {"--json"}:
        _print_version("--json" in args)  # anyone may ask; nothing else is loaded
        return 0
    try:
        _check_text(args)
        _confine(args)
        started = time.time()
        command = fast_command(args)
        code = _run_typer(args) if command is None else command() or 0
        _tell_hosts(args, started)
        return code
    except OrangeError as exc:
        return report_user_error(exc, args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the environment said no (DESIGN §8 "Operational")
        return report_user_error(EnvironmentProblem.of(exc), args)
    except Exception as exc:
        return report_bug(exc, args)


_READING = frozenset({"list", "show", "log", "peek"})  # task commands that write nothing


def _tell_hosts(args: list[str], started: float) -> None:
    """After a person's task command, the hosts of a project whose tasks it changed
    sync now (`orange.hosts.nudge`).  ``--host`` commands asked their host already;
    an agent's moves reach the hosts by the automatic sync."""
    if args[:1] != ["task"] or set(args[1:2]) & _READING or "--host" in args:
        return
    if from_env(os.environ).kind == "agent":
        return
    from orange.home import hosts_file

    if hosts_file().is_file():  # no host registered: nothing more loaded
        from orange.hosts.nudge import after_command

        after_command(started)


def _check_text(args: list[str]) -> None:
    """Every argument is text Orange can write: bytes that are not UTF-8 (a shell's
    ``$'\xed...'``, a file name in another encoding) arrive as lone surrogates, which no
    commit, file or terminal can take."""
    for number, arg in enumerate(args, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidInput(
                f"argument {number} is not UTF-8 text",
                hint="pass it as UTF-8 text, as a terminal types it",
            ) from None


def _confine(args: list[str]) -> None:
    """An agent's process runs only an agent's commands (`orange.engine.caller`): asked
    here, before the fast path or typer parses anything, so a refused command runs
    nothing.  A request for a command's help (its path, then ``--help``, and nothing
    else) is answered for anyone."""
    caller = from_env(os.environ)
    if caller.kind != "agent":
        return
    path = command_path(args)
    if path and args[len(path) :] != ["--help"]:
        caller.check_command(" ".join(path))


_GROUPS = frozenset(name for name, where in _ENTRIES if ":" not in where or name == "run")


def command_path(args: list[str]) -> list[str]:
    """The command ``args`` name: a top-level name, and a group's subcommand after it
    (``["task", "update"]``).  [] when they name none: they are empty, start with an
    option (``orange`` itself has only ``--help``) or with what no command is called
    (typer refuses it).  A group's next argument that cannot be a command's name (the
    request of ``orange run "..."``) is not part of the path."""
    if not args or not _is_name(args[0]):
        return []
    if args[0] in _GROUPS and len(args) > 1 and _is_name(args[1]):
        return args[:2]
    return args[:1]


def _is_name(arg: str) -> bool:
    """``arg`` could be a command's name: lowercase ASCII letters and inner hyphens."""
    return arg.isascii() and arg[:1].isalpha() and arg.replace("-", "").isalpha() and arg.islower()


def _run_typer(args: list[str]) -> int:
    """Run through typer; its own exceptions become usage errors and exit codes."""
    import typer.main  # typer: loaded off the fast path only (see build_app)
    from typer import Abort, Exit
    from typer._click import exceptions as click_exc

    try:
        command = plain(typer.main.get_command(build_app(args[0] if args else None)))
        result = command(args=args, prog_name="orange", standalone_mode=False)
    except click_exc.NoArgsIsHelpError as exc:
        exc.show()
        return EXIT_USAGE
    except click_exc.ClickException as exc:
        return report_usage_error(exc.format_message(), args)
    except Abort:
        print("orange: aborted", file=sys.stderr)
        return 1
    except Exit as exc:
        return int(exc.exit_code)
    return result if isinstance(result, int) else 0


# Options whose value may be left out (`task update --branch` adopts the worktree's
# branch).  click cannot express that directly; an option followed by nothing or by
# another option gets an empty value.  A branch name can never start with '-'.
_OPTIONAL_VALUE = ("--branch",)


def _optional_values(args: list[str]) -> list[str]:
    out = []
    for index, arg in enumerate(args):
        following = args[index + 1] if index + 1 < len(args) else None
        if arg in _OPTIONAL_VALUE and (following is None or following.startswith("-")):
            out.append(f"{arg}=")
        else:
            out.append(arg)
    return out


__all__ = ["EXIT_USAGE", "build_app", "run"]
