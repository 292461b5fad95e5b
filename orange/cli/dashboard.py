"""``orange dashboard`` (and a bare ``orange`` on a terminal): the Textual dashboard (a
thin layer: the work is `orange.cli.dashboarding`, which the fast path runs without
typer)."""

from __future__ import annotations

from typing import Annotated

import typer

from orange.cli.dashboarding import open_dashboard

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
    open_dashboard(project=project, all_projects=all_projects, exit_on_attach=exit_on_attach)
