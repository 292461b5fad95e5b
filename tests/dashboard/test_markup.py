"""Task data in the dialogs and views is shown as it is, never read as Textual markup:
`[id]` would vanish, `[bold]` would style instead of showing, and `[/]` would stop the
app (MarkupError).  Summaries, branches, paths in a diff and error lines come from
other people and agents."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Label, Static

from orange.dashboard.screens import ConfirmScreen, TextPrompt
from orange.dashboard.views import DiffView, PoolView, TaskFileView
from orange.runtime import settingup
from tests.dashboard.conftest import app_for, commit_on_branch, drive, put_task

TRICKY = "src/[id]/page.tsx a [/] b [bold]c[/bold]"


def _shown(widget: Any) -> str:
    return str(widget.render())


def test_the_cancel_and_delete_questions_show_the_summary_as_it_is(project: Path) -> None:
    put_task(project, "aaaa0001", status="reviewing", summary=TRICKY)
    put_task(project, "aaaa0002", status="done", summary=TRICKY,
             updated_at="2026-01-01T00:00:00+00:00")  # fmt: skip
    app = app_for(project)

    async def script(pilot: Any) -> None:
        for keys, question in (
            (["x"], f"cancel task aaaa0001 ({TRICKY})?"),
            (["f", "j", "d"], f"delete task aaaa0002 ({TRICKY})?"),  # all: done is second
        ):
            await pilot.press(*keys)
            assert isinstance(app.screen, ConfirmScreen)
            assert _shown(app.screen.query_one("#question", Label)) == question
            await pilot.press("n")
            assert not isinstance(app.screen, ConfirmScreen)

    drive(app, script)


def test_a_question_shows_control_characters_made_visible(project: Path) -> None:
    """As everywhere else in the app (DESIGN §8): no escape reaches the terminal."""
    put_task(project, "aaaa0001", status="reviewing", summary="a\x1b[31mred\x07")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("x")
        question = _shown(app.screen.query_one("#question", Label))
        assert question == "cancel task aaaa0001 (a\\x1b[31mred\\x07)?"

    drive(app, script)


def test_a_view_shows_the_branch_in_its_title_and_a_message_as_they_are(project: Path) -> None:
    put_task(project, "aaaa0001", status="working", branch="x[/]y [bold]b[/bold] [id]")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("v")
        view = app.screen
        assert isinstance(view, TaskFileView)
        header = _shown(view.query_one("#header", Static))
        assert header == " aaaa0001  x[/]y [bold]b[/bold] [id]  working  TASK.md"
        view.say(f"error: {TRICKY}")  # an error line may quote task data
        await pilot.pause()
        assert _shown(view.query_one("#message", Static)) == f"error: {TRICKY}"

    drive(app, script)


def test_the_pool_shows_a_bound_tasks_branch_as_it_is(project: Path) -> None:
    put_task(project, "aaaa0001", status="pending", branch="x[/]y [bold]b[/bold] [id]")
    settingup.write("proj", settingup.Mark("aaaa0001", "proj--1", os.getpid()))
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("w")
        assert isinstance(app.screen, PoolView)
        table = app.screen.query_one("#pool", DataTable)
        assert str(table.get_row_at(0)[3]) == "x[/]y [bold]b[/bold] [id]"
        assert "x[/]y [bold]b[/bold] [id]" in _rendered_lines(table)

    drive(app, script)


def test_a_diff_of_paths_that_look_like_markup_shows_them_and_comments_on_them(
    project: Path,
) -> None:
    paths = ("src/[id]/page.tsx", "a[/]b", "[bold]c[/bold]")
    commit_on_branch(project, dict.fromkeys(paths, "one\n"))
    put_task(project, "aaaa0001", status="reviewing", branch="work", workflow="default")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("D")
        view = app.screen
        assert isinstance(view, DiffView)
        table = view.query_one("#diff", DataTable)
        shown = _rendered_lines(table)
        for path in paths:
            assert f"{path}:1" in shown
        row = next(i for i, line in enumerate(view.lines) if line.path == "src/[id]/page.tsx"
                   and line.kind == "add")  # fmt: skip
        table.move_cursor(row=row)
        await pilot.press("c")
        assert isinstance(app.screen, TextPrompt)
        title = _shown(app.screen.query_one("#title", Label))
        assert title == "Comment on src/[id]/page.tsx:1:"

    drive(app, script)


def _rendered_lines(table: DataTable[Any]) -> str:
    """What the table draws on screen, line by line, as plain text."""
    return "\n".join(
        "".join(segment.text for segment in table.render_line(y)) for y in range(table.size.height)
    )
