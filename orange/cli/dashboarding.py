"""What ``orange dashboard`` (and a bare ``orange`` on a terminal) does, without typer:
the command runs on the fast path (`orange.cli.fast`) as well as through typer
(`orange.cli.dashboard`)."""

from __future__ import annotations

import sys

from orange import projects
from orange.cli.context import current_project
from orange.errors import InvalidInput, NotFound
from orange.runtime.watcher import ensure_running


def open_dashboard(*, project: str | None, all_projects: bool, exit_on_attach: bool) -> None:
    """Run the dashboard over this project (``project``, else the one here), or every
    registered project (``all_projects``, or outside a project) until the user quits."""
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

    ensure_running()  # a monitor runs (DESIGN §6), unless a person stopped it
    make_app(scope, exit_on_attach=exit_on_attach).run()
