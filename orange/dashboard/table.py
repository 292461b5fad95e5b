"""The task table's columns and cells (Rich text; Textual's DataTable draws them)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from rich.text import Text
from textual.message import Message
from textual.widgets.data_table import RowKey

from orange.dashboard.drawing import RowTable
from orange.dashboard.rows import Row, ago
from orange.engine.ledger import cost_label
from orange.hosts.holdings import where

# (key, label): id, status and branch first, so an 80-column terminal shows them.
COLUMNS = (
    ("id", "id"),
    ("status", "status"),
    ("branch", "branch"),
    ("agent", "agent"),
    ("round", "rnd"),
    ("attention", "!"),
    ("crashes", "crash"),
    ("ahead", "ahead"),
    ("pr", "PR"),
    ("activity", "activity"),
    ("where", "where"),
    ("cost", "cost"),
    ("summary", "summary"),
)


# Rows measured for the column widths when rows are added: DataTable measures every cell
# of every new row, about three quarters of the first paint at 10,000 tasks.
WIDTH_SAMPLE = 300


class TaskTable(RowTable):
    """The task table: column widths from its first `WIDTH_SAMPLE` rows, so 10,000
    tasks are not all measured before the first paint (nor rows added after it); a
    longer cell further down is cut at its column's width.  Enter on a row posts
    `Chosen`; a click only selects (DataTable takes a click on the selected row for
    Enter, and Enter spawns or attaches)."""

    class Chosen(Message):
        """Enter on the selected row."""

    def action_select_cursor(self) -> None:
        self.post_message(self.Chosen())

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        if not self.own_drawing:  # another Textual: DataTable measures every row
            super()._update_dimensions(new_rows)
            return
        index = self._row_locations.get
        sample = [key for key in new_rows if (at := index(key)) is not None and at < WIDTH_SAMPLE]
        super()._update_dimensions(sample)


def status_style(row: Row) -> str:
    """A status's colour, by what it means in its workflow (never by its name)."""
    if row.broken:
        return "bold red"
    if not row.active:
        return "dim"
    if row.waits:
        return "bold yellow"
    return "cyan"


def visible(text: str) -> str:
    """Control characters made visible before they reach the terminal (DESIGN §8)."""
    if text.isprintable():  # nearly every cell: checked in C, nothing built
        return text
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


def cells(
    row: Row,
    agent: str,
    now: datetime,
    multi: bool,
    extra: tuple[str, str] = ("", ""),
    standing: str = "",
) -> list[Text]:
    """The cells of ``row``, in `COLUMNS` order (``multi``: several projects shown;
    ``extra``: its branch's stats and its PR's state, `orange.dashboard.branchstate`;
    ``standing``: where it stands in this host's queue, after its status).
    Rich `Text` throughout: task data is never read as markup, and plain text is the
    cheapest cell for the table to measure."""
    branch = f"{row.project}/{row.branch}" if multi and row.branch else row.branch
    if row.broken:
        red = Text(visible(row.broken)[:200], style="red")
        return [Text(visible(row.id), style="red"), Text("broken", style=status_style(row)),
                _EMPTY, _DASH, _EMPTY, _MARK, _EMPTY, _EMPTY, _EMPTY, _EMPTY, _EMPTY,
                _EMPTY, red]  # fmt: skip
    return [
        Text(visible(row.id)),
        Text(visible(_status(row.status, standing)), style=status_style(row)),
        Text(visible(branch)),
        _agent_cell(agent),
        Text(str(row.review_round) if row.review_round else ""),
        _MARK if row.attention else _EMPTY,
        Text(str(row.crash_count) if row.crash_count else ""),
        Text(extra[0]),
        Text(visible(extra[1])),
        Text(ago(row.activity, now)),
        Text(_elsewhere(row.host)),
        Text(cost_label(row.task.fields) if row.task is not None else ""),
        Text(visible(row.summary)[:200]),
    ]


def _status(status: str, standing: str) -> str:
    return f"{status} ({standing})" if standing else status


_EMPTY = Text("")
_DASH = Text("-")
_MARK = Text("!", style="bold red")


def _agent_cell(agent: str) -> Text:
    if agent == "alive":
        return Text("alive", style="green")
    if agent.startswith("exited"):
        return Text(agent, style="red")
    return Text(agent or "-")


def _elsewhere(host: str) -> str:
    """Where a task bound to another host runs, and whether that host answers."""
    if not host:
        return ""
    gone = where(host)
    return f"running on {visible(host)}" + (f"; {gone}" if gone else "")
