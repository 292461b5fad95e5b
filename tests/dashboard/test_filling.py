"""A rebuild of the table adds the first rows before the paint and the rest in batches
after it; a change arriving while rows still wait finds the table as if every row had
been added at once: no row lost, none twice, no cell updated on a row not yet added."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable

from orange.dashboard import filling
from orange.dashboard.app import Dashboard
from tests.dashboard.conftest import app_for, drive, put_task, table_text

ORDER = [f"aaaa000{n}" for n in range(7, 0, -1)]  # newest activity first


@pytest.fixture
def seven(project: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Seven tasks, two rows added before a paint and two a batch."""
    monkeypatch.setattr(filling, "FIRST", 2)
    monkeypatch.setattr(filling, "BATCH", 2)
    for n in range(1, 8):
        put_task(project, f"aaaa000{n}", updated_at=f"2026-01-02T11:0{n}:00+00:00")
    return project


async def _filled(pilot: Any, app: Dashboard) -> None:
    """Wait (pauses, up to 100) until no row is left waiting: a batch follows a paint."""
    for _ in range(100):
        if not app.filler.waiting:
            return
        await pilot.pause()
    raise AssertionError(f"{len(app.filler.waiting)} rows never added")


def _rebuilt(app: Dashboard) -> DataTable[Any]:
    """The table rebuilt in front of the test (the done view, then active again): its
    first two rows in, five waiting."""
    app.action_cycle_view()  # all: the same rows
    app.action_cycle_view()  # done: none
    app.action_cycle_view()  # active: all seven again, added anew
    table = app.query_one("#table", DataTable)
    assert table.row_count == 2
    return table


def test_the_rows_after_the_first_screenful_arrive_after_the_paint(seven: Path) -> None:
    app = app_for(seven)

    async def script(pilot: Any) -> None:
        await _filled(pilot, app)
        assert [row[0] for row in table_text(app)] == ORDER
        _rebuilt(app)
        await _filled(pilot, app)
        assert [row[0] for row in table_text(app)] == ORDER

    drive(app, script)


def test_a_changed_cell_of_a_row_still_waiting_is_shown(seven: Path) -> None:
    app = app_for(seven)

    async def script(pilot: Any) -> None:
        await _filled(pilot, app)
        table = _rebuilt(app)
        put_task(seven, "aaaa0001", summary="changed", updated_at="2026-01-02T11:01:00+00:00")
        app.watch_refs()  # the order stands: changed cells only, on the last row
        assert [row[0] for row in table_text(app)] == ORDER
        key = next(row.key for row in app.shown_rows if row.id == "aaaa0001")
        assert str(table.get_cell(key, "summary")) == "changed"
        await _filled(pilot, app)
        assert [row[0] for row in table_text(app)] == ORDER

    drive(app, script)


def test_a_row_still_waiting_that_moves_to_the_top_is_moved_not_lost(seven: Path) -> None:
    app = app_for(seven)

    async def script(pilot: Any) -> None:
        await _filled(pilot, app)
        _rebuilt(app)
        put_task(seven, "aaaa0001", summary="now", updated_at="2026-01-02T11:59:00+00:00")
        app.watch_refs()  # the same rows in a new order
        moved = ["aaaa0001", *ORDER[:-1]]
        assert [row[0] for row in table_text(app)] == moved
        await _filled(pilot, app)
        assert [row[0] for row in table_text(app)] == moved

    drive(app, script)


def test_a_new_rebuild_drops_the_rows_an_earlier_one_left_waiting(seven: Path) -> None:
    app = app_for(seven)

    async def script(pilot: Any) -> None:
        await _filled(pilot, app)
        _rebuilt(app)
        app.filter_text = "aaaa0003"
        app.redraw()
        for _ in range(5):  # any batch still scheduled for the earlier rebuild: run
            await pilot.pause()
        assert [row[0] for row in table_text(app)] == ["aaaa0003"]

    drive(app, script)


def test_the_selected_task_stays_selected_though_its_row_would_have_waited(
    seven: Path,
) -> None:
    app = app_for(seven)

    async def script(pilot: Any) -> None:
        await _filled(pilot, app)
        app.query_one("#table", DataTable).move_cursor(row=5)
        assert app.selected().id == "aaaa0002"  # type: ignore[union-attr]
        put_task(seven, "aaaa0000", updated_at="2026-01-02T10:00:00+00:00")  # a new last row
        app.watch_refs()  # rows not shown before: the table rebuilt
        assert app.selected().id == "aaaa0002"  # type: ignore[union-attr]
        await _filled(pilot, app)
        assert [row[0] for row in table_text(app)] == [*ORDER, "aaaa0000"]
        assert app.selected().id == "aaaa0002"  # type: ignore[union-attr]

    drive(app, script)
