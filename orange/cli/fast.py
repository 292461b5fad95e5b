"""A fast path for the commands agents run all the time, and the dashboard, without typer.

``task update [ID] --summary S | --status S | --branch [B]``, ``task list``, ``task
show [ID]``, ``sync [REMOTE]`` and ``dashboard`` (a person's bare ``orange``) with their
plain options,
``hook-impl NAME ARGS...`` (git runs one for every commit, merge and push in a
project) and ``monitor --once`` (tmux runs one for every agent that exits).  Anything
else — help, an unknown or repeated option, a missing value — returns None and typer
handles the command as usual, so the fast path never changes what a command means; it
only skips typer's start-up cost.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

# option -> takes a value?
_UPDATE = {
    "--summary": True,
    "--status": True,
    "--branch": True,
    "--project": True,
    "--json": False,
}
_LIST = {
    "--status": True,
    "--project": True,
    "--all": False,
    "--all-projects": False,
    "--body": False,
    "--json": False,
}
_SHOW = {
    "--project": True,
    "--json": False,
}
_SYNC = {
    "--project": True,
    "--setup": False,
    "--json": False,
}
_DASHBOARD = {
    "--project": True,
    "--all-projects": False,
    "--exit-on-attach": False,
}


def _parse(
    args: list[str], spec: dict[str, bool], positionals: int
) -> tuple[list[str], dict[str, str | bool]] | None:
    found: dict[str, str | bool] = {}
    plain: list[str] = []
    index = 0
    while index < len(args):
        arg = args[index]
        if arg.startswith("-"):
            name, eq, inline = arg.partition("=")
            if name not in spec or name in found:
                return None
            if spec[name]:
                if eq:
                    found[name] = inline
                elif index + 1 < len(args) and not args[index + 1].startswith("-"):
                    index += 1
                    found[name] = args[index]
                else:
                    return None
            elif eq:
                return None
            else:
                found[name] = True
        else:
            plain.append(arg)
        index += 1
    if len(plain) > positionals:
        return None
    return plain, found


def _text(options: dict[str, str | bool], name: str) -> str | None:
    value = options.get(name)
    return value if isinstance(value, str) else None


def _hook(name: str, hook_args: list[str]) -> Callable[[], int]:
    """A git hook's logic, as typer's ``hook-impl`` runs it: its exit code is git's."""

    def hook() -> int:
        from orange.githooks import impl  # this command's module only

        return impl.run(name, hook_args)

    return hook


def _wake(hook_args: list[str]) -> Callable[[], None]:
    """Git's reference-transaction hook: a process per fetch or update-ref touching
    ``refs/orange/*``, so it loads neither typer nor the engine."""

    def wake() -> None:
        from orange.githooks.wake import reference_transaction  # this command's module only

        reference_transaction(Path.cwd(), hook_args)

    return wake


def _once() -> None:
    # Each fast command loads its own module only: that is the point of the path.
    from orange.monitor.once import run_once

    report = run_once()  # None: another process's passes cover this request
    for line in report.actions if report is not None else ():
        print(line)
    if report is not None and report.stopped:
        from orange.runtime.watcher import STOPPED_SAID

        print(STOPPED_SAID, file=sys.stderr)


def fast_command(args: list[str]) -> Callable[[], int | None] | None:
    """The command to run for ``args`` if the fast path knows it, else None; what it
    returns is the exit code (None: 0)."""
    if args[:2] == ["hook-impl", "reference-transaction"]:
        return _wake(args[2:])
    if args[:1] == ["hook-impl"] and len(args) > 1 and not any(a.startswith("-") for a in args):
        return _hook(args[1], args[2:])
    if args == ["monitor", "--once"]:
        return _once
    if args[:1] == ["sync"]:
        return _sync(args[1:])
    if args[:1] == ["dashboard"]:
        return _dashboard(args[1:])
    if len(args) < 2 or args[0] != "task":
        return None
    if args[1] == "update":
        parsed = _parse(args[2:], _UPDATE, positionals=1)
        if parsed is None:
            return None
        plain, opts = parsed

        def update() -> None:
            # Each fast command loads its own module only: that is the point of the path.
            from orange.cli.update import update_task

            update_task(
                task=plain[0] if plain else None,
                summary=_text(opts, "--summary"),
                status=_text(opts, "--status"),
                branch=_text(opts, "--branch"),
                project=_text(opts, "--project"),
                json_out=bool(opts.get("--json")),
            )

        return update
    if args[1] == "list":
        parsed = _parse(args[2:], _LIST, positionals=0)
        if parsed is None:
            return None
        _, opts = parsed

        def list_() -> None:
            # Each fast command loads its own module only: that is the point of the path.
            from orange.cli.listing import list_tasks

            list_tasks(
                status=_text(opts, "--status"),
                all_=bool(opts.get("--all")),
                all_projects=bool(opts.get("--all-projects")),
                body=bool(opts.get("--body")),
                project=_text(opts, "--project"),
                json_out=bool(opts.get("--json")),
            )

        return list_
    if args[1] == "show":
        parsed = _parse(args[2:], _SHOW, positionals=1)
        if parsed is None:
            return None
        plain, opts = parsed

        def show() -> None:
            # Each fast command loads its own module only: that is the point of the path.
            from orange.cli.showing import show_task

            show_task(
                task=plain[0] if plain else None,
                project=_text(opts, "--project"),
                json_out=bool(opts.get("--json")),
            )

        return show
    return None


def _sync(args: list[str]) -> Callable[[], None] | None:
    parsed = _parse(args, _SYNC, positionals=1)
    if parsed is None:
        return None
    plain, opts = parsed

    def sync() -> None:
        # Each fast command loads its own module only: that is the point of the path.
        from orange.cli.syncing import run_sync

        run_sync(
            remote=plain[0] if plain else None,
            project=_text(opts, "--project"),
            setup=bool(opts.get("--setup")),
            json_out=bool(opts.get("--json")),
        )

    return sync


def _dashboard(args: list[str]) -> Callable[[], None] | None:
    parsed = _parse(args, _DASHBOARD, positionals=0)
    if parsed is None:
        return None
    _, opts = parsed

    def dashboard() -> None:
        # Each fast command loads its own module only: that is the point of the path.
        from orange.cli.dashboarding import open_dashboard

        open_dashboard(
            project=_text(opts, "--project"),
            all_projects=bool(opts.get("--all-projects")),
            exit_on_attach=bool(opts.get("--exit-on-attach")),
        )

    return dashboard
