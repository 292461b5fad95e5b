"""The dashboard application: the task table, live, with keys from the workflow.

`make_app` is the factory the CLI and the tests call (STYLE §11).  Task actions run
through `orange.dashboard.operations`; the keys shown for the selected task come from
`orange.dashboard.keys`; views of a task live in `orange.dashboard.views`.
"""

from __future__ import annotations

import gc
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import ClassVar

# libtmux reads sys.stdout.encoding when first imported, and a running Textual app has
# replaced sys.stdout with an object that has none: import it while the real one stands.
import libtmux.server  # noqa: F401
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.content import Content
from textual.widgets import DataTable, Input, Static

from orange import compose
from orange.dashboard.branchstate import CONFLICT_MARK, all_stats, conflict_notes
from orange.dashboard.filling import Filler, collector_paused
from orange.dashboard.keys import TASK_KEYS, VIEW_KEYS, Key, task_keys
from orange.dashboard.rows import VIEWS, Row, order, shown
from orange.dashboard.source import Source
from orange.dashboard.table import COLUMNS, TaskTable, cells, visible
from orange.engine import dependencies
from orange.errors import OrangeError
from orange.projects import Project
from orange.runtime.tmuxclient import RETURN_KEY, TmuxClient

POLL = 0.3  # seconds between looks at the tasks refs (one ref lookup per project)
AGENTS_POLL = 2.0  # seconds between looks at the agents' panes
BRANCHES_POLL = 15.0  # seconds between looks at the task branches (in a thread)

CSS = """
#header { height: 1; background: $primary-background; }
#table { height: 1fr; }
#filter { display: none; height: 3; }
#filter.shown { display: block; }
#message { height: 1; color: $warning; }
#detail { height: 1; }
#keys { height: 1; background: $primary-background; }
.dialog { width: 80%; height: auto; max-height: 90%; border: round $accent;
          background: $surface; padding: 1 2; }
ModalScreen { align: center middle; }
"""

_NONE = ("", "")
FIXED_KEYS = "j/k move  f view  / filter  c create  y copy id  v l o D w t views  ? help  q quit"


def _reorderable(rows: list[Row], before: list[str]) -> bool:
    """The rows shown before, in another order, each told apart by its id cell (a
    task's activity moved it): sorted in place instead of cleared and added again."""
    if len(rows) != len(before) or {row.key for row in rows} != set(before):
        return False
    return len({visible(row.id) for row in rows}) == len(rows)


class Dashboard(App[None]):
    """Every task of the project (or projects), live."""

    CSS = CSS
    TITLE = "orange"
    filler: Filler  # the rows of a rebuild added after the first paint (set on mount)
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("j", "down", show=False),
        Binding("k", "up", show=False),
        Binding("f", "cycle_view", "view"),
        Binding("slash", "filter", "filter"),
        Binding("escape", "clear_filter", show=False),
        Binding("c", "create", "create"),
        Binding("y", "copy_id", "copy id"),
        Binding("question_mark", "help", "help"),
        *(Binding(key, f"task('{action}')", show=False) for key, action in TASK_KEYS),
        *(Binding(key, f"view('{view}')", show=False) for key, view in VIEW_KEYS),
    ]

    def __init__(
        self,
        source: Source,
        *,
        tmux: TmuxClient,
        now: Callable[[], datetime] | None = None,
        exit_on_attach: bool = False,
        poll: bool = True,
    ) -> None:
        super().__init__()
        self.source = source
        self.tmux = tmux
        self.now = now or (lambda: datetime.now(UTC))
        self.exit_on_attach = exit_on_attach
        self.poll = poll
        self.pools: dict[str, int] = {}
        self.view = VIEWS[0]
        self.filter_text = ""
        self.agents: dict[str, str] = {}
        self.shown_rows: list[Row] = []
        self.drawn: dict[str, tuple[Row, str, tuple[str, str], str]] = {}
        self.extra: dict[str, tuple[str, str]] = {}  # key -> ("3 +40 -2", "#7 open")
        self.clashes: dict[str, str] = {}  # key -> the conflicts its branch would meet
        self.waiting: set[str] | None = None  # keys of tasks waiting for a human
        self.inside_tmux: set[str] = set()  # $TMUX values found to be the agents' server
        self.lines: dict[str, str] = {}  # what each one-line bar shows (`put_line`)
        self.frozen = False  # what the first fill made is frozen (`_all_rows_in`)

    def compose(self) -> ComposeResult:
        yield Static(id="header")
        table = TaskTable(id="table", cursor_type="row", zebra_stripes=True)
        yield table
        yield Input(
            placeholder="filter: id, branch or summary (Enter keeps, Esc clears)", id="filter"
        )
        yield Static(id="detail")
        yield Static(id="message")
        yield Static(id="keys")

    def on_mount(self) -> None:
        table = self.query_one("#table", TaskTable)
        for key, label in COLUMNS:
            table.add_column(label, key=key)
        self.filler = Filler(table, self._row_cells, self.call_after_refresh, self._all_rows_in)
        with collector_paused():
            self.source.refresh()
            self.agents = self.source.agents()
            rows = self.source.rows()
            if rows and not any(row.active for row in rows):
                self.view = "all"  # nothing active (a finished demo): not an empty page
            self.redraw()
        table.focus()
        if self.poll:
            self.set_interval(POLL, self.watch_refs)
            self.set_interval(AGENTS_POLL, self.watch_agents)
            self.set_interval(BRANCHES_POLL, self.watch_branches)
            self.watch_branches()

    def on_unmount(self) -> None:
        gc.unfreeze()  # the process lives on (a test, a caller): its heap as it was

    def _all_rows_in(self) -> None:
        """The table holds every row: the first time, what the app made so far (the
        rows, their cells) is frozen, held for the whole run, and the collector never
        walks it again."""
        if not self.frozen:
            self.frozen = True
            gc.freeze()

    # -- live ------------------------------------------------------------------------

    def watch_refs(self) -> None:
        """A look at the refs: redraw only when one moved (anyone's write)."""
        if self.source.changed() and self.source.refresh():
            self.agents = self.source.agents()
            self.redraw()

    def watch_agents(self) -> None:
        agents = self.source.agents()
        pools = self.source.pool_sizes()  # a pool resized while we run shows at once
        if agents != self.agents or pools != self.pools:
            self.agents, self.pools = agents, pools
            self.redraw()

    def watch_branches(self) -> None:
        """Commits ahead and lines changed of the active tasks' branches, read in a
        worker thread: input never waits for git."""
        jobs = [
            (feed.project, [(r.key, r.branch, r.task.str_field("pr_url"),
                             r.task.str_field("base"))
                            for r in order(feed.rows.values())
                            if r.active and r.branch and r.task is not None])
            for feed in self.source.feeds
        ]  # fmt: skip

        def work() -> None:
            found: dict[str, tuple[str, str]] = {}
            clashes: dict[str, str] = {}
            for project, rows in jobs:
                found.update(all_stats(project, rows))
                notes = conflict_notes(project)  # by task id; a row's key ends in it
                clashes.update((key, notes[key.rsplit("/", 1)[-1]]) for key, *_ in rows
                               if key.rsplit("/", 1)[-1] in notes)  # fmt: skip
            self.call_from_thread(self._show_branches, found, clashes)

        self.run_worker(work, thread=True, exclusive=True, group="branches")

    def _show_branches(self, found: dict[str, tuple[str, str]], clashes: dict[str, str]) -> None:
        for key in clashes.keys() & found.keys():  # a mark in the branch column
            found[key] = (f"{found[key][0]} {CONFLICT_MARK}".lstrip(), found[key][1])
        if clashes != self.clashes:
            self.clashes = clashes
            self.show_detail()
        if found != self.extra:
            self.extra = found
            self.redraw()

    def redraw(self) -> None:
        """Show the current rows: cells of changed rows only when the order stands,
        else the rows again (the first screenful now, the rest after the paint)."""
        rows = order(shown(self.source.rows(), self.view, self.filter_text))
        self._ring_for_new_waits()
        table = self.query_one("#table", TaskTable)
        keys = [row.key for row in rows]
        before = [row.key for row in self.shown_rows]
        selected = self.selected()
        if keys == before or _reorderable(rows, before):
            self.filler.finish()  # rows a rebuild left waiting: all in before a change
            self._update_cells(table, rows)
            if keys != before:  # the same rows in a new order: moved, not added again
                rank = {visible(row.id): n for n, row in enumerate(rows)}
                table.sort("id", key=lambda cell: rank[cell.plain])
                if selected is not None:
                    table.move_cursor(row=keys.index(selected.key))
        else:  # rows still waiting from a rebuild are dropped with the rest
            table.clear()
            self.drawn = {}
            at = keys.index(selected.key) if selected is not None and selected.key in keys else -1
            self.filler.start(rows, at_least=at + 1)
            if at >= 0:
                table.move_cursor(row=at)
        self.shown_rows = rows
        self.show_header()
        self.show_keys()

    def _update_cells(self, table: TaskTable, rows: list[Row]) -> None:
        """The cells of the rows whose task, agent or branch stats changed."""
        multi = len(self.source.feeds) > 1
        now = self.now()
        for row in rows:
            seen = self._seen(row)
            if self.drawn.get(row.key) != seen:
                for (column, _), value in zip(
                    COLUMNS, cells(row, seen[1], now, multi, seen[2], seen[3]), strict=True
                ):
                    table.update_cell(row.key, column, value)
                self.drawn[row.key] = seen

    def _row_cells(self, row: Row) -> tuple[str, list[Text]]:
        """A row's key and cells as the table adds it (noted as drawn)."""
        seen = self._seen(row)
        self.drawn[row.key] = seen
        multi = len(self.source.feeds) > 1
        return row.key, cells(row, seen[1], self.now(), multi, seen[2], seen[3])

    def _seen(self, row: Row) -> tuple[Row, str, tuple[str, str], str]:
        """What a row's cells are drawn from: the task, its agent, its branch's stats,
        where it stands in this host's queue (`Source.standing`)."""
        standing = self.source.standing(row)
        return (
            row,
            self.agents.get(row.key, ""),
            self.extra.get(row.key, _NONE),
            "" if standing is None else standing.label(most=1),
        )

    def _ring_for_new_waits(self) -> None:
        """The terminal bell when a task starts waiting for a human."""
        waiting = {row.key for row in self.source.rows() if row.waits and row.active}
        if self.waiting is not None and waiting - self.waiting:
            self.bell()
        self.waiting = waiting

    def show_header(self) -> None:
        head = self.source.header()
        count = len(self.shown_rows)
        text = f" {head.project}  pool {head.used}/{head.pool}  {head.monitor}  "
        text += f"{head.sync}  " if head.sync else ""
        text += f"{self.view}: {count} task{'s' if count != 1 else ''}"
        if self.filter_text:
            text += f"  filter: {visible(self.filter_text)}"
        self.put_line("header", text)

    def show_keys(self) -> None:
        self.show_detail()
        keys = self.offered()
        line = "  ".join(
            f"{_label(k.key)} {k.label} ({self.return_hint()})"
            if k.action == "attach"
            else f"{_label(k.key)} {k.label}"
            for k in keys
        )
        self.put_line("keys", f" {line}  |  {FIXED_KEYS}" if line else f" {FIXED_KEYS}")

    def return_hint(self) -> str:
        """The key that comes back from an attach: inside tmux on the agents' server
        the client switches, and tmux's `RETURN_KEY` returns; elsewhere, a detach."""
        inside = os.environ.get("TMUX", "")
        if not inside:
            return "detach returns"
        if inside not in self.inside_tmux:
            try:
                if self.tmux.is_current():
                    self.inside_tmux.add(inside)  # no server yet is not remembered
            except OrangeError:
                pass
        return f"{RETURN_KEY} returns" if inside in self.inside_tmux else "detach returns"

    def background(self, work: Callable[[], str]) -> None:
        def run() -> None:
            try:
                line = work()
            except OrangeError as error:
                line = f"error: {error}"
            self.call_from_thread(self._done, line)

        self.run_worker(run, thread=True, group="background")

    def _done(self, line: str) -> None:
        self.say(line)
        self.watch_refs()

    def say(self, line: str) -> None:
        self.put_line("message", visible(line))

    def put_line(self, name: str, text: str) -> None:
        """One of the one-line bars, redrawn only when its text changed and never laid
        out again (each is one line high): a cursor move repaints the rows it moved.
        The text is shown as it is, never read as markup (task data, a filter)."""
        if self.lines.get(name) != text:
            self.lines[name] = text
            self.query_one(f"#{name}", Static).update(Content(text), layout=False)

    # -- selection -------------------------------------------------------------------

    def selected(self) -> Row | None:
        table = self.query_one("#table", DataTable)
        if not self.shown_rows or table.cursor_row < 0 or table.cursor_row >= len(self.shown_rows):
            return None
        return self.shown_rows[table.cursor_row]

    def offered(self) -> list[Key]:
        row = self.selected()
        if row is None:
            return []
        return task_keys(
            self.source.workflow(row),
            row,
            self.agents.get(row.key, ""),
            has_branch=self.source.has_branch(row),
        )

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.is_attached:  # not a late message of a table taken down
            self.show_keys()

    def show_detail(self) -> None:
        """The selected task's summary, why it needs a person (``attention``), the tasks
        it waits for (``after``, with where each stands) and its predicted conflicts."""
        row = self.selected()
        text = ""
        if row is not None:
            text = f" {row.id}: {row.broken or row.summary}"
            if row.attention and not row.broken:
                text += f"  ! {row.attention}"
            standing = self.source.standing(row)
            if standing is not None and standing.state == "parked":
                text += "  parked: starts only when a person starts it (Enter)"
            elif standing is not None and standing.state == "queued":
                text += f"  {standing.label()}: starts when a workspace frees up"
            after = dependencies.listed(row.task) if row.task is not None else []
            if after:
                where = {other.id: other.status for other in self.source.rows()}
                text += "  after " + ", ".join(f"{d} ({where.get(d, 'gone')})" for d in after)
            if row.key in self.clashes:
                text += f"  {CONFLICT_MARK} would conflict with {self.clashes[row.key]}"
        self.put_line("detail", visible(text))

    def on_task_table_chosen(self, event: TaskTable.Chosen) -> None:
        self.action_task("enter")

    # -- fixed keys ------------------------------------------------------------------

    def action_down(self) -> None:
        self.query_one("#table", DataTable).action_cursor_down()

    def action_up(self) -> None:
        self.query_one("#table", DataTable).action_cursor_up()

    def action_cycle_view(self) -> None:
        self.view = VIEWS[(VIEWS.index(self.view) + 1) % len(VIEWS)]
        self.redraw()

    def action_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.add_class("shown")
        box.focus()

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id == "filter":
            self.filter_text = event.value
            self.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "filter":
            self.query_one("#table", DataTable).focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        box.value = ""
        box.remove_class("shown")
        self.filter_text = ""
        self.query_one("#table", DataTable).focus()
        self.redraw()

    # The key handlers load the engine, the create and merge operations and the hosts'
    # machinery: on the first key that needs them, not before the first paint.
    def action_help(self) -> None:
        from orange.dashboard import commands

        commands.show_help(self, RETURN_KEY)

    def action_create(self) -> None:
        from orange.dashboard import commands

        commands.create(self)

    def action_copy_id(self) -> None:
        from orange.dashboard import commands

        commands.copy_id(self)

    def action_task(self, action: str) -> None:
        from orange.dashboard import commands

        commands.run_task_key(self, action)

    def action_view(self, view: str) -> None:
        # The views load git and markdown machinery the table does not need.
        from orange.dashboard import views

        views.open_view(self, view)


def _label(key: str) -> str:
    return "Enter" if key == "enter" else key


def make_app(
    projects: list[Project],
    *,
    now: Callable[[], datetime] | None = None,
    exit_on_attach: bool = False,
    poll: bool = True,
) -> Dashboard:
    """The dashboard over ``projects`` (the factory `orange dashboard` and tests call)."""
    tmux = compose.tmux()
    return Dashboard(
        Source(projects, tmux), tmux=tmux, now=now, exit_on_attach=exit_on_attach, poll=poll
    )
