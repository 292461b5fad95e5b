"""The task table's own drawing of a row is the drawing DataTable makes through Rich:
the same text, styles and mouse metadata, for every kind of cell the table holds,
wherever the cursor and the mouse are; rows it adds at once are the rows `add_row`
adds one at a time."""

from __future__ import annotations

import asyncio
from itertools import chain
from typing import Any

import pytest
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines
from textual.app import App, ComposeResult
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import ColumnKey, DuplicateKey

from orange.dashboard import drawing
from orange.dashboard.table import TaskTable

CELLS = [
    Text("aaaa0001"),
    Text("working", style="cyan"),
    Text("broken", style="bold red"),
    Text(""),
    Text("", style="red"),
    Text("a summary much longer than its column is wide, cut at the width"),
    Text("漢字のタスク: 幅の広い文字", style="dim"),  # wide characters, one cut in half
    Text("exited 1", style="red"),
    Text.assemble(("sp", "red"), "ans"),  # spans: drawn by DataTable itself
]
SPANS = len(CELLS) - 1


class _Table(App[None]):
    def compose(self) -> ComposeResult:
        yield TaskTable(id="table", cursor_type="row", zebra_stripes=True)


def _draw_both(table: TaskTable, row: int) -> None:
    """The table's own row (-1: the header) against DataTable's, the cursor and the
    mouse on it or on another row.  The table's drawings are kept between its calls (a
    row drawn with the cursor on one other row serves while it is on any other),
    DataTable's are not."""
    key = table._row_locations.get_key(row) if row >= 0 else table._header_row_key
    places = [(cursor, hover, show_hover)
              for cursor in (max(row, 0), row + 1, row + 2)
              for hover in (row, row + 3, row + 1)
              for show_hover in (False, True)]  # fmt: skip

    def draw(place: tuple[int, int, bool], how: Any) -> Any:
        cursor, hover, table._show_hover_cursor = place
        return how(key, 0, table.rich_style, Coordinate(cursor, 0), Coordinate(hover, 1))

    table._clear_caches()
    ours = [draw(place, table._render_line_in_row) for place in places]
    for place, drawn in zip(places, ours, strict=True):
        table._clear_caches()
        theirs = draw(place, lambda *at: DataTable._render_line_in_row(table, *at))
        assert _chars(drawn) == _chars(theirs), (row, place)
        columns = {_style(segment).meta["column"] for segment in chain(*drawn[0], *drawn[1])}
        assert columns == ({0, 1} if row == SPANS else {0} if row >= 0 else {0, 1}), place


def _chars(drawn: tuple[SegmentLines, SegmentLines]) -> list[tuple[str, Style, int]]:
    """A drawn row's fixed and scrollable parts, character by character: the style
    without the mouse metadata, and the row the metadata names.  The table joins a
    row's cells into a segment for each style, and its metadata names the row and
    column 0 (a row cursor takes the row), as DataTable's does right of the row."""
    return [(char, _style(segment).clear_meta_and_links(), _style(segment).meta["row"])
            for part in drawn for line in part for segment in line
            for char in segment.text]  # fmt: skip


def _style(segment: Segment) -> Style:
    assert segment.style is not None  # every segment of a row is styled
    return segment.style


def test_a_row_is_drawn_as_datatable_draws_it() -> None:
    async def main() -> None:
        app = _Table()
        async with app.run_test(size=(120, 20)) as pilot:
            table = app.query_one(TaskTable)
            table.add_column("a", key="a")
            table.add_column("b", key="b", width=8)  # narrower than most cells
            for n, cell in enumerate(CELLS):
                table.add_row(cell, cell, key=str(n))
            await pilot.pause()
            assert table.columns[ColumnKey("b")].get_render_width(table) == 10  # cut cells
            for row in range(-1, len(CELLS)):
                _draw_both(table, row)
            table.cursor_foreground_priority = "renderable"
            table.cursor_background_priority = "renderable"
            _draw_both(table, 1)

    asyncio.run(main())


class _Two(App[None]):
    """Two tables one above the other, and the rows each said it highlighted (of a
    fixed height: a table that grew would be measured again on its resize)."""

    CSS = "TaskTable { height: 12; }"

    def __init__(self) -> None:
        super().__init__()
        self.highlighted: list[tuple[str | None, int, str | None]] = []

    def compose(self) -> ComposeResult:
        yield TaskTable(id="one", cursor_type="row")
        yield TaskTable(id="other", cursor_type="row")

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.highlighted.append((event.data_table.id, event.cursor_row, event.row_key.value))


def _state(table: TaskTable) -> Any:
    """The rows in order (cells and height), column widths, cursor, scrollable size."""
    return (
        [(table.get_row_at(n), row) for n, row in enumerate(table.ordered_rows)],
        [column.content_width for column in table.ordered_columns],
        table.cursor_coordinate,
        table.virtual_size,
    )


def test_rows_added_at_once_are_the_rows_add_row_adds() -> None:
    async def main() -> None:
        app = _Two()
        async with app.run_test(size=(120, 30)) as pilot:
            one, other = app.query_one("#one", TaskTable), app.query_one("#other", TaskTable)
            for table in (one, other):
                table.add_column("a", key="a")
                table.add_column("b", key="b")
            rows = [(str(n), [cell, cell]) for n, cell in enumerate(CELLS)]
            rows.append(("short", [Text("only a")]))  # b: None, as add_row leaves it
            for key, cells in rows:
                one.add_row(*cells, key=key)
            other.add_rows_at_once(rows)
            await pilot.pause()
            assert _state(one) == _state(other)
            assert one.get_row("short") == [Text("only a"), None]
            assert sorted(app.highlighted) == [("one", 0, "0"), ("other", 0, "0")]
            with pytest.raises(DuplicateKey):
                other.add_rows_at_once([("new", [Text("x")]), ("3", [Text("again")])])
            with pytest.raises(DuplicateKey):
                other.add_rows_at_once([("new", [Text("x")]), ("new", [Text("y")])])
            with pytest.raises(ValueError, match="More values"):
                other.add_rows_at_once([("new", [Text("x")] * 3)])
            one.add_row(Text("a much longer cell than any before"), key="new")
            other.add_rows_at_once([("new", [Text("a much longer cell than any before")])])
            await pilot.pause()
            assert _state(one) == _state(other)  # refused batches left nothing behind
            assert len(app.highlighted) == 2  # rows added below: no new highlight

    asyncio.run(main())


def test_without_an_expected_internal_datatable_draws_and_adds_every_row(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Another Textual without one of the private names the table's own drawing uses:
    the table draws and adds rows the public way, and shows the same rows."""
    monkeypatch.setattr(drawing, "PRIVATE", (*drawing.PRIVATE, "_gone_in_another_release"))

    async def main() -> None:
        app = _Two()
        async with app.run_test(size=(120, 30)) as pilot:
            one, other = app.query_one("#one", TaskTable), app.query_one("#other", TaskTable)
            assert not one.own_drawing and not other.own_drawing
            for table in (one, other):
                table.add_column("a", key="a")
                table.add_column("b", key="b")
            rows = [(str(n), [cell, cell]) for n, cell in enumerate(CELLS)]
            for key, cells in rows:
                one.add_row(*cells, key=key)
            other.add_rows_at_once(rows)
            await pilot.pause()
            assert _state(one) == _state(other)
            row_key = other._row_locations.get_key(1)
            assert row_key is not None
            where = (Coordinate(0, 0), Coordinate(3, 1))
            other._clear_caches()
            drawn = other._render_line_in_row(row_key, 0, other.rich_style, *where)
            other._clear_caches()
            assert drawn == DataTable._render_line_in_row(
                other, row_key, 0, other.rich_style, *where
            )
            assert [seg.text for seg in chain(*drawn[1])] != []

    asyncio.run(main())
