"""``orange dashboard`` (and a bare ``orange`` on a terminal): the Textual dashboard."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from orange import projects
from orange.cli.context import current_project
from orange.errors import InvalidInput, NotFound
from orange.runtime.watcher import ensure_running

# (Not `orange.cli.task`'s: importing that module loads every task command's modules.)
ProjectOpt = Annotated[str | None, typer.Option("--project", help="Project name.")]


def dashboard(
    project: ProjectOpt = None,
    all_projects: Annotated[
        bool, typer.Option("--all-projects", help="Tasks of every registered project.")
    ] = False,
    exit_on_attach: Annotated[
        bool, typer.Option("--exit-on-attach", help="Quit once attached to a task's agent.")
    ] = False,
) -> None:
    """Watch every task live and steer them (keys from each task's workflow; ? for help).
    Outside a project it shows every registered project."""
    here = None if all_projects else current_project(project)
    scope = [here] if here is not None else projects.load_all()
    if not scope:
        raise NotFound("no registered project", hint="register one with `orange project add`")
    if not (sys.stdin.isatty() and sys.stdout.isatty()):  # it would wait for keys forever
        raise InvalidInput(
            "orange dashboard needs a terminal: stdin and stdout are not one",
            hint="run it in a terminal; `orange task list` prints the tasks",
        )
    # textual is loaded by this command only: no other command pays its start-up.
    from orange.dashboard.app import make_app

    ensure_running()  # the dashboard makes sure a monitor runs (DESIGN §6)
    make_app(scope, exit_on_attach=exit_on_attach).run()
