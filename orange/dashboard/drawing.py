"""A DataTable whose one-line rows under a row cursor are drawn by the table itself.

Textual's `DataTable` draws each cell through Rich (`Padding` in `Styled` around the
cell's `Text`, rendered to lines and cropped): about a third of a millisecond a cell,
and a Page Down at 10,000 tasks draws some 45 new rows of 12 cells.  It also keys its
cache of drawn rows on where the cursor is, so each step of the cursor drew every row
on screen again, and gives each cell mouse metadata of its own, so a line stays at
least a segment a cell through every later stage of Textual's drawing.

`RowTable` draws a plain `Text` cell straight into what Rich makes of it (a test
compares them with DataTable's own, character by character), joins a row into a
segment for each run of one style (its metadata names the row and column 0, as
DataTable's own does right of a row: a row cursor takes only the row), and keeps a
drawn row for as long as the cursor stays off it or on it.  Anything else (the
header, a cell with spans, control characters or several lines, fixed columns, row
labels, a cell or column cursor) is drawn by DataTable.  `add_rows_at_once` adds rows
as `add_row` does, its bookkeeping done once.

All of this reads and overrides private names of DataTable (`PRIVATE`), checked against
the Textual release pyproject.toml pins exactly.  A table built where one of them is
missing (another Textual) does neither: DataTable draws every row and `add_row` adds
them, slower and the same.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import zip_longest
from typing import Any, TypeGuard

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._types import SegmentLines
from textual.coordinate import Coordinate
from textual.widget import PseudoClasses
from textual.widgets import DataTable
from textual.widgets.data_table import DuplicateKey, Row, RowKey

_AWAY = Coordinate(-2, 0)  # no row's (the header row is -1): the cursor is elsewhere

# The private names of DataTable the table's own drawing and bulk adding use.
PRIVATE = (
    "_data",
    "_get_row_style",
    "_get_styles_to_render_cell",
    "_highlight_cursor",
    "_new_rows",
    "_pseudo_class_state",
    "_render_cell",
    "_render_line_in_row",
    "_require_update_dimensions",
    "_row_locations",
    "_row_render_cache",
    "_should_render_row_labels",
    "_show_hover_cursor",
    "_update_count",
    "_update_dimensions",
)


class RowTable(DataTable[Text]):
    """A DataTable of `Text` cells, quicker to draw with ``cursor_type="row"``."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._row_styles: dict[tuple[int, Style, PseudoClasses], Style] = {}
        # Every private name there (this Textual is the one the drawing was checked
        # against): else DataTable's own drawing and add_row, the public way.
        self.own_drawing = all(hasattr(DataTable, name) or name in vars(self) for name in PRIVATE)

    def add_rows_at_once(self, rows: Iterable[tuple[str, Sequence[Text]]]) -> None:
        """``rows`` (key, cells) added at the bottom as `add_row` adds them one at a
        time (one line high, no label), its bookkeeping done once for them all: at
        10,000 rows, add_row's own work (the cursor set again, the columns listed
        twice, for each row) was a quarter of the first paint."""
        if not self.own_drawing:
            for key, cells in rows:
                self.add_row(*cells, key=key)
            return
        added = [(RowKey(key), cells) for key, cells in rows]
        keys = {key for key, _ in added}
        if len(keys) < len(added) or any(key in self._row_locations for key in keys):
            raise DuplicateKey("A row key is given twice or already exists.")
        columns = [column.key for column in self.ordered_columns]
        if any(len(cells) > len(columns) for _, cells in added):
            raise ValueError("More values provided than there are columns.")
        was_empty = not self.rows
        for row_key, cells in added:
            self._row_locations[row_key] = len(self.rows)
            self._data[row_key] = dict(zip_longest(columns, cells))
            self.rows[row_key] = Row(row_key, 1, None, False)
        self._new_rows.update(keys)
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        if was_empty and added and self.columns and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()  # as add_row does for a first row
        self._update_count += 1
        self.check_idle()

    def _render_line_in_row(
        self,
        row_key: RowKey,
        line_no: int,
        base_style: Style,
        cursor_location: Coordinate,
        hover_location: Coordinate,
    ) -> tuple[SegmentLines, SegmentLines]:
        if self.cursor_type != "row" or not self.own_drawing:
            return super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
        # Under a row cursor, a row changes only as the cursor (or hover) comes or goes.
        found = self._row_locations.get(row_key)
        index = -1 if found is None else found  # -1: the header
        cursor = cursor_location.row == index
        hover = hover_location.row == index
        cursor_location = cursor_location if cursor else _AWAY
        hover_location = hover_location if hover else _AWAY
        if (
            index < 0
            or line_no
            or self.fixed_columns
            or self._should_render_row_labels
            or self.rows[row_key].height != 1
        ):
            return super()._render_line_in_row(
                row_key, line_no, base_style, cursor_location, hover_location
            )
        key = (row_key, line_no, base_style, cursor_location, hover_location, self.cursor_type,
               self.show_cursor, self._show_hover_cursor, self._update_count,
               self._pseudo_class_state)  # fmt: skip
        drawn = self._row_render_cache.get(key)
        if drawn is None:
            drawn = ([], self._draw_row(row_key, index, base_style, cursor, hover))
            self._row_render_cache[key] = drawn
        return drawn

    def _draw_row(
        self, row_key: RowKey, index: int, base_style: Style, cursor: bool, hover: bool
    ) -> SegmentLines:
        """The row as one line, a segment for each run of one style."""
        row_style = self._row_style(index, base_style)
        show, show_hover = self.show_cursor, self._show_hover_cursor
        component, post = self._get_styles_to_render_cell(
            False, False, False, hover, cursor, show, show_hover,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css",
        )  # fmt: skip
        # The mouse metadata names the row and column 0, as DataTable's own for the
        # space right of a row: a row cursor takes a click's row, and one style for a
        # whole row lets its cells be joined into a few segments.
        pre = row_style + Style.from_meta({"row": index, "column": 0}) + component
        text_styles = _TextStyles(pre, post, self.app.console.get_style)
        pad = self.cell_padding
        cells = self._data[row_key]
        line = _Runs()
        used = 0
        for column_index, column in enumerate(self.ordered_columns):
            width = column.get_render_width(self)
            used += width
            cell = cells.get(column.key)
            if width > 2 * pad and _plain(cell):
                _add_cell(line, cell.plain, text_styles.of(cell.style), text_styles.pre,
                          width - 2 * pad, pad)  # fmt: skip
            else:
                for segment in self._render_cell(index, column_index, row_style, width,
                                                 cursor, hover)[0]:  # fmt: skip
                    line.add(segment.text, segment.style)
        extend, _ = self._get_styles_to_render_cell(
            False, False, False, hover, cursor, show, show_hover, False, False
        )
        extend = row_style + extend
        extend += Style.from_meta({"row": index, "column": 0, "out_of_bounds": True})
        line.add(" " * max(0, self.size.width - used), extend)
        return [line.segments()]

    def _row_style(self, index: int, base_style: Style) -> Style:
        """DataTable's style of the row at ``index`` (zebra stripes), kept until the
        table's styles change: DataTable works it out from the CSS for every row."""
        if self.fixed_rows:
            return self._get_row_style(index, base_style)
        key = (index % 2, base_style, self._pseudo_class_state)
        style = self._row_styles.get(key)
        if style is None:
            style = self._row_styles[key] = self._get_row_style(index, base_style)
        return style

    def notify_style_update(self) -> None:
        self._row_styles.clear()
        super().notify_style_update()


class _TextStyles:
    """The styles of a row's cells: ``pre`` for the padding, and for a text of style
    ``name`` what Rich makes of it, ``pre + name + post`` (`Styled`), found once a row."""

    def __init__(self, pre: Style, post: Style, get_style: Callable[[str | Style], Style]) -> None:
        self.base, self.post, self.get_style = pre, post, get_style
        self.pre = pre + post if post else pre
        self.found: dict[str | Style, Style] = {"": self.pre}

    def of(self, name: str | Style) -> Style:
        style = self.found.get(name)
        if style is None:
            style = self.base + self.get_style(name)
            style = self.found[name] = style + self.post if self.post else style
        return style


class _Runs:
    """One line's segments, neighbours of one style joined as they are added."""

    def __init__(self) -> None:
        self.done: list[Segment] = []
        self.texts: list[str] = []
        self.style: Style | None = None

    def add(self, text: str, style: Style | None) -> None:
        if not text:
            return
        if style is not self.style and style != self.style:
            self.flush()
            self.style = style
        self.texts.append(text)

    def flush(self) -> None:
        if self.texts:
            self.done.append(Segment("".join(self.texts), self.style))
            self.texts = []

    def segments(self) -> list[Segment]:
        self.flush()
        return self.done


def _add_cell(line: _Runs, plain: str, style: Style, pre: Style, inner: int, pad: int) -> None:
    """What Rich makes of ``Styled(Padding(Text(plain), (0, pad)), ...)`` on one line
    of ``inner + 2 * pad`` cells: the text (of ``style``) cut or filled to ``inner``,
    the padding and the fill of ``pre``."""
    size = cell_len(plain)
    if size > inner:
        plain, size = set_cell_size(plain, inner), inner
    line.add(" " * pad, pre)
    line.add(plain, style)
    line.add(" " * (inner - size + pad), pre)


def _plain(cell: object) -> TypeGuard[Text]:
    """A cell `RowTable` draws itself: one `Text` of one named style, printable."""
    return (
        type(cell) is Text
        and isinstance(cell.style, str)
        and not cell.spans
        and not cell.justify
        and not cell.overflow
        and cell.plain.isprintable()
    )
