"""The task table: rows, order, views, filter, broken tasks, narrow terminals."""

from __future__ import annotations

import gc
import json
import re
from pathlib import Path
from typing import Any

from textual.events import MouseScrollDown
from textual.widgets import DataTable, Static
from textual.widgets.data_table import ColumnKey

from orange import projects
from orange.dashboard import table as table_module
from orange.dashboard.app import make_app
from orange.engine import localqueue
from orange.engine.catalog import load_named
from orange.engine.tasks import create_task
from orange.store.listing import all_tasks
from orange.store.store import TaskStore
from orange.store.task import Task
from tests.conftest import Cli, git, make_repo
from tests.dashboard.conftest import NOW, app_for, drive, put_broken, put_task, table_text


def _three(repo: Path) -> None:
    put_task(repo, "aaaa0001", status="working", updated_at="2026-01-02T11:50:00+00:00")
    put_task(repo, "aaaa0002", status="done", updated_at="2026-01-02T11:59:00+00:00")
    put_task(repo, "aaaa0003", status="reviewing", attention="hook failed: x",
             updated_at="2026-01-02T11:58:00+00:00", review_round=2, crash_count=1)  # fmt: skip


def test_active_tasks_newest_first_with_their_fields(project: Path, cli: Cli) -> None:
    _three(project)
    app = app_for(project)

    async def script(pilot: Any) -> None:
        rows = table_text(app)
        assert [row[0] for row in rows] == ["aaaa0003", "aaaa0001"]  # active only, newest first
        assert rows[0][1:10] == [
            "reviewing",
            "feature/aaaa0003",
            "-",
            "2",
            "!",
            "1",
            "",
            "",
            "2m ago",
        ]
        header = str(app.query_one("#header", Static).render())
        assert "proj  pool 0/2" in header and "synced" not in header  # no remote: no sync
        # Resized while the dashboard runs (no ref moves): the next look says so.
        cli.ok("project", "update", "--pool-size", "5", cwd=project)
        app.watch_agents()
        assert "proj  pool 0/5" in str(app.query_one("#header", Static).render())

    drive(app, script)


def test_f_cycles_all_active_done_and_slash_filters(project: Path) -> None:
    _three(project)
    app = app_for(project)

    async def script(pilot: Any) -> None:
        await pilot.press("f")
        assert [row[0] for row in table_text(app)] == ["aaaa0003", "aaaa0001", "aaaa0002"]
        await pilot.press("f")
        assert [row[0] for row in table_text(app)] == ["aaaa0002"]
        await pilot.press("f", "slash", "0", "0", "0", "1")
        assert [row[0] for row in table_text(app)] == ["aaaa0001"]
        await pilot.press("escape")
        assert len(table_text(app)) == 2

    drive(app, script)


def test_the_filter_matches_id_branch_and_summary_and_takes_any_text(project: Path) -> None:
    put_task(project, "aaaa0001", branch="login-page", summary="Add a form")
    put_task(project, "aaaa0002", branch="parser", summary="Speed up the LEXER")
    app = app_for(project)

    def ids() -> list[str]:
        return sorted(row[0] for row in table_text(app))

    async def script(pilot: Any) -> None:
        await pilot.press("slash", *"LOGIN")  # a branch, any case
        assert ids() == ["aaaa0001"]
        await pilot.press(*["backspace"] * 5, *"lexer")  # a summary
        assert ids() == ["aaaa0002"]
        await pilot.press(*["backspace"] * 5, *"[(*\\")  # no pattern: plain text
        assert ids() == []
        assert "filter: [(*\\" in str(app.query_one("#header", Static).render())
        await pilot.press("escape")
        assert ids() == ["aaaa0001", "aaaa0002"]

    drive(app, script)


def test_a_click_selects_a_row_and_does_nothing_else_and_the_wheel_scrolls(
    project: Path,
) -> None:
    for n in range(1, 41):  # more rows than the screen shows
        put_task(project, f"aaaa{n:04}", harness="fake",
                 updated_at=f"2026-01-02T11:{59 - n:02}:00+00:00")  # fmt: skip
    app = app_for(project)

    async def script(pilot: Any) -> None:
        table = app.query_one("#table", DataTable)
        await pilot.click("#table", offset=(2, 3))  # the header, then rows 0, 1, 2
        assert app.selected().id == "aaaa0003"  # type: ignore[union-attr]
        await pilot.click("#table", offset=(2, 3))  # the selected row again: no Enter
        assert str(app.query_one("#message", Static).render()) == ""
        assert app.selected().id == "aaaa0003"  # type: ignore[union-attr]
        assert table.scroll_y == 0
        await pilot._post_mouse_events([MouseScrollDown], "#table", offset=(2, 3))
        assert table.scroll_y > 0

    drive(app, script, size=(120, 20))
    assert {t.status for t in all_tasks(TaskStore.open(project)) if isinstance(t, Task)} == {
        "pending"
    }


def test_several_projects_show_project_slash_branch_and_each_projects_tasks(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    other = make_repo(tmp_path / "other")
    cli.ok("project", "add", "--workflow", "minimal", cwd=other)
    put_task(project, "aaaa0001", branch="login", updated_at="2026-01-02T11:59:00+00:00")
    put_task(other, "bbbb0001", project="other", branch="login")
    app = make_app([projects.get("proj"), projects.get("other")], now=lambda: NOW, poll=False)

    async def script(pilot: Any) -> None:
        assert [(row[0], row[2]) for row in table_text(app)] == [
            ("aaaa0001", "proj/login"),
            ("bbbb0001", "other/login"),
        ]
        assert "proj, other  pool 0/4" in str(app.query_one("#header", Static).render())

    drive(app, script)


def test_a_broken_task_shows_as_broken_with_its_reason_and_the_rest_still_show(
    project: Path,
) -> None:
    put_task(project, "aaaa0001", status="working")
    put_broken(project, "bbbb0001")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        rows = table_text(app)
        assert rows[0][:2] == ["bbbb0001", "broken"]
        assert "TASK.md" in rows[0][-1] or "frontmatter" in rows[0][-1].lower()
        assert rows[1][0] == "aaaa0001"

    drive(app, script)


def test_eighty_columns_still_show_id_status_and_branch(project: Path) -> None:
    put_task(project, "aaaa0001", status="working", summary="x" * 150)
    app = app_for(project)

    async def script(pilot: Any) -> None:
        table = app.query_one("#table", DataTable)
        shown = app.export_screenshot()
        assert "aaaa0001" in shown and "working" in shown and "feature/aaaa0001" in shown
        assert table.size.width <= 80

    drive(app, script, size=(80, 24))


def test_column_widths_come_from_the_first_rows_only(project: Path, monkeypatch: Any) -> None:
    monkeypatch.setattr(table_module, "WIDTH_SAMPLE", 2)
    put_task(
        project, "aaaa0001", status="working", branch="b1", updated_at="2026-01-02T11:59:00+00:00"
    )
    put_task(
        project, "aaaa0002", status="working", branch="b2", updated_at="2026-01-02T11:58:00+00:00"
    )
    put_task(project, "aaaa0003", status="working", branch="a-much-longer-branch-name")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        branch = app.query_one("#table", DataTable).columns[ColumnKey("branch")]
        assert branch.content_width == len("branch")  # the header: wider than b1 and b2

    drive(app, script)


def test_the_header_says_where_a_syncing_project_stands(
    cli: Cli, project: Path, tmp_path: Path
) -> None:
    hub = tmp_path / "hub.git"
    git(tmp_path, "init", "-q", "--bare", str(hub))
    git(project, "remote", "add", "origin", str(hub))
    # Tasks as Orange writes them: the sync replays what it has not seen yet, and a
    # task written behind the engine would be restored (one more commit ahead).
    store = TaskStore.open(project)
    create_task(store, projects.get("proj"), load_named("minimal"), summary="first")
    cli.ok("sync", cwd=project)
    create_task(store, projects.get("proj"), load_named("minimal"), summary="local")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        header = str(app.query_one("#header", Static).render())
        assert re.search(r"synced with origin \d+s ago, 1 ahead, 0 behind", header), header

    drive(app, script)


def test_what_the_first_paint_made_is_frozen_while_the_app_runs_and_thawed_after(
    project: Path,
) -> None:
    """The rows and cells are made with the collector paused and then frozen (it would
    walk them again and again); the collector runs again, and the heap is the
    process's again once the dashboard ends."""
    put_task(project, "aaaa0001")
    app = app_for(project)
    seen: list[tuple[bool, int]] = []

    async def script(pilot: Any) -> None:
        seen.append((gc.isenabled(), gc.get_freeze_count()))

    assert gc.get_freeze_count() == 0
    drive(app, script)
    assert seen[0][0] and seen[0][1] > 0
    assert gc.isenabled() and gc.get_freeze_count() == 0


def test_task_text_that_looks_like_markup_is_shown_as_it_is(project: Path) -> None:
    """A summary or a filter is never read as Textual markup (`[/]` would stop the
    app, `[bold]` would vanish)."""
    put_task(project, "aaaa0001", summary="a [/] b [bold]c[/bold]")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        assert "a [/] b [bold]c[/bold]" in str(app.query_one("#detail", Static).render())
        await pilot.press("slash", *"[/]")
        assert "filter: [/]" in str(app.query_one("#header", Static).render())

    drive(app, script)


def test_with_nothing_active_the_dashboard_opens_on_every_task(project: Path) -> None:
    # As after `make demo`: every task finished; "active: 0 tasks" would show nothing.
    put_task(project, "aaaa0001", status="done")
    app = app_for(project)

    async def script(pilot: Any) -> None:
        header = str(app.query_one("#header", Static).render())
        assert header.endswith("all: 1 task")
        assert [row[2] for row in table_text(app)] == ["feature/aaaa0001"]

    drive(app, script)


def _queue(project: Path, cli: Cli) -> dict[str, str]:
    """A pool of one taken by a running task; behind it a task queued, one parked
    (``--no-spawn``) and one waiting for the parked one (``--after``): their ids."""
    cli.ok("project", "update", "--pool-size", "1", cwd=project)
    ids = {}
    for name, extra in (("running", ()), ("queued", ()), ("parked", ("--no-spawn",))):
        made = cli.ok("task", "create", name, name, "--harness", "fake", *extra, "--json",
                      cwd=project)  # fmt: skip
        ids[name] = str(json.loads(made.out)["id"])
    made = cli.ok("task", "create", "waiting", "waiting", "--harness", "fake", "--no-spawn",
                  "--after", ids["parked"], "--json", cwd=project)  # fmt: skip
    ids["waiting"] = str(json.loads(made.out)["id"])
    return ids


def test_a_task_in_the_queue_says_queued_parked_or_waiting_in_its_row(
    project: Path, cli: Cli
) -> None:
    ids = _queue(project, cli)
    app = app_for(project)

    async def script(pilot: Any) -> None:
        status = {row[0]: row[1] for row in table_text(app)}
        assert status[ids["queued"]] == "pending (queued #1)"
        assert status[ids["parked"]] == "pending (parked)"
        assert status[ids["waiting"]] == f"pending (waiting for {ids['parked']}, then parked)"
        assert not status[ids["running"]].startswith("pending")
        # This host's record changes without the ref moving (a create parks its task
        # after its commit): the next look redraws the row.
        localqueue.park(TaskStore.open(project), ids["queued"])
        app.watch_refs()
        assert {row[0]: row[1] for row in table_text(app)}[ids["queued"]] == "pending (parked)"
        table = app.query_one("#table", DataTable)
        table.move_cursor(row=[row[0] for row in table_text(app)].index(ids["parked"]))
        await pilot.pause()
        assert "parked: starts only when a person starts it" in str(
            app.query_one("#detail", Static).render()
        )

    drive(app, script)
