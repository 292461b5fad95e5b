"""The table's rows added after the first screenful: a rebuild of 10,000 rows adds the
first `FIRST` before the screen is drawn, and the rest in batches of `BATCH` after it
(each batch after the screen has been drawn again, so keys are read between them).

Whoever changes the table while rows are still waiting calls `Filler.finish` first: the
table then holds every row of the last rebuild, as if it had added them at once (no
row lost, none twice, no cell updated on a row not yet added).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rich.text import Text

from orange.dashboard.drawing import RowTable
from orange.dashboard.rows import Row
from orange.dashboard.table import WIDTH_SAMPLE

FIRST = WIDTH_SAMPLE  # rows added before the first paint: a tall screen, and the rows
# the column widths come from (rows added later are not measured)
BATCH = 2000  # rows added a batch after it (40 to 100 ms: a key waits no longer)


class Filler:
    """The rows of the last rebuild not yet in the table, and their adding.

    ``make`` gives a row's key and cells (and notes them as drawn); ``later``
    schedules a call after the next screen refresh; ``done`` is called each time the
    table has every row."""

    def __init__(
        self,
        table: RowTable,
        make: Callable[[Row], tuple[str, list[Text]]],
        later: Callable[[Callable[[], None]], object],
        done: Callable[[], None],
    ) -> None:
        self.table, self.make, self.later, self.done = table, make, later, done
        self.waiting: list[Row] = []
        self.scheduled = False

    def start(self, rows: Sequence[Row], at_least: int = 0) -> None:
        """Fill the (cleared) table with ``rows``: the first `FIRST` (or ``at_least``)
        now, the rest after the screen is drawn."""
        self.waiting = list(rows)
        self._add(max(FIRST, at_least))

    def finish(self) -> None:
        """Every row still waiting added now."""
        if self.waiting:
            self._add(len(self.waiting))

    def _add(self, count: int) -> None:
        batch, self.waiting = self.waiting[:count], self.waiting[count:]
        with collector_paused():
            self.table.add_rows_at_once([self.make(row) for row in batch])
        if not self.waiting:
            self.done()
        elif not self.scheduled:
            self.scheduled = True
            self.later(self._next)

    def _next(self) -> None:
        self.scheduled = False
        if self.waiting:
            self._add(BATCH)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The cyclic garbage collector paused while rows and cells are made: some 10^5
    objects that hold no cycles, whose survivors it would walk again and again while
    they are made (at 10,000 tasks, half the first paint went to full collections)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
