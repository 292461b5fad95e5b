"""Views of the selected task, each one key away and back with Esc: TASK.md (``v``),
history (``l``), the agent's live output (``o``), the diff with comments (``D``); the
workspace pool (``w``), the dependency tree of the tasks shown (``t``) and `orange
stats` of the projects shown (``s``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import DataTable, Markdown, Static

from orange.dashboard import diff
from orange.dashboard.commands import actions_for
from orange.dashboard.operations import Actions
from orange.dashboard.ports import Host
from orange.dashboard.rows import Row
from orange.dashboard.screens import TextPrompt
from orange.dashboard.table import visible
from orange.engine import dependencies
from orange.errors import OrangeError
from orange.hosts import reach
from orange.hosts.roster import by_reported
from orange.ops import stats
from orange.ops.workspaces import pool_status
from orange.runtime.bindings import session_of
from orange.runtime.git import git
from orange.runtime.places import agent_window
from orange.runtime.ssh import Answer
from orange.runtime.tmux import Tmux
from orange.runtime.workspace import base_of
from orange.store.history import task_history

OUTPUT_POLL = 1.0  # seconds between captures of the agent's pane
REMOTE_POLL = 2.0  # seconds between asking another host for its agent's output
_STYLES = {"add": "green", "del": "red", "hunk": "cyan", "file": "bold"}


class View(Screen[None]):
    """A full-screen view: a title line, the content, a key line; Esc goes back.
    The title and the message line show their text as it is, never read as markup:
    both quote task data (a branch, a base, an error line)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "back", "back"),
        Binding("q", "back", show=False),
    ]
    KEYS = "Esc back"

    def __init__(self, title: str) -> None:
        super().__init__()
        self.title_text = title

    def compose(self) -> ComposeResult:
        yield Static(visible(self.title_text), id="header", markup=False)
        yield from self.content()
        yield Static(id="message", markup=False)
        yield Static(f" {self.KEYS}", id="keys")

    def content(self) -> ComposeResult:
        yield Static()

    def action_back(self) -> None:
        self.dismiss(None)

    def say(self, line: str) -> None:
        self.query_one("#message", Static).update(visible(line))


class TaskFileView(View):
    def __init__(self, title: str, text: str) -> None:
        super().__init__(title)
        self.text = text

    def content(self) -> ComposeResult:
        yield Markdown(self.text, id="body")


class TextView(View):
    def __init__(self, title: str, text: str) -> None:
        super().__init__(title)
        self.text = text

    def content(self) -> ComposeResult:
        yield Static(Text(self.text), id="body")


class OutputView(TextView):
    """The agent's pane, captured again every `OUTPUT_POLL` seconds while open."""

    def __init__(self, title: str, session: str, window: str, tmux: Tmux) -> None:
        super().__init__(title, "")
        self.session = session
        self.window = window
        self.tmux = tmux

    def on_mount(self) -> None:
        self.capture()
        self.set_interval(OUTPUT_POLL, self.capture)

    def capture(self) -> None:
        try:
            text = self.tmux.capture(self.session, self.window, 200).rstrip()
        except OrangeError as error:
            text = f"error: {error}"
        self.query_one("#body", Static).update(Text(visible_lines(text)))


class RemoteOutputView(TextView):
    """The agent's output on another host, asked for over SSH every `REMOTE_POLL`
    seconds while open, in a thread: the screen never waits for the network."""

    def __init__(self, title: str, fetch: Callable[[], str]) -> None:
        super().__init__(title, "")
        self.fetch = fetch
        self.busy = False

    def on_mount(self) -> None:
        self.ask()
        self.set_interval(REMOTE_POLL, self.ask)

    def ask(self) -> None:
        if not self.busy:
            self.busy = True
            self.run_worker(self._fetch, thread=True, exclusive=True)

    def _fetch(self) -> None:
        try:
            text = self.fetch()
        except OrangeError as error:
            text = f"error: {error}"
        self.app.call_from_thread(self._show, text)

    def _show(self, text: str) -> None:
        self.busy = False
        self.query_one("#body", Static).update(Text(visible_lines(text.rstrip())))


def _peeked(answer: Answer) -> str:
    if answer.code == 0:
        return answer.out
    said = [line for line in answer.err.splitlines() if line.strip()]
    return f"error: {said[-1] if said else answer.code}"


def visible_lines(text: str) -> str:
    return "\n".join(visible(line) for line in text.splitlines())


class PoolView(View):
    def __init__(self, title: str, members: list[dict[str, object]], host: str) -> None:
        super().__init__(title)
        self.members = members
        self.host = host

    def content(self) -> ComposeResult:
        table: DataTable[Text] = DataTable(id="pool", cursor_type="row")
        for label in ("workspace", "state", "task", "branch", "host", "port"):
            table.add_column(label)
        for member in self.members:
            task = str(member.get("task") or "")
            state = "bound" if task else "free" if member.get("exists") else "not created"
            state = "setting up" if member.get("setting_up") else state
            state = f"run {member['run']}" if member.get("run") else state
            branch = str(member.get("branch") or "")
            port = "" if member.get("port") is None else str(member["port"])
            host = self.host if task else ""
            cells = (str(member["name"]), state, task, visible(branch), host, port)
            table.add_row(*(Text(cell) for cell in cells))  # a str cell is read as markup
        yield table


class DiffView(View):
    """The task branch against its base: ``c`` comments on the selected line
    (on a hunk header: the hunk), ``s`` sends every comment as one request-changes."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "comment", "comment"),
        Binding("s", "send", "send"),
        Binding("j", "line(1)", show=False),  # j/k move as everywhere in the dashboard
        Binding("k", "line(-1)", show=False),
    ]
    KEYS = "j/k line   c comment on line/hunk   s send comments as request-changes   Esc back"

    def __init__(self, title: str, text: str, row: Row, acts: Actions) -> None:
        super().__init__(title)
        self.lines = diff.parse(text)
        self.row = row
        self.acts = acts
        self.comments: list[diff.Comment] = []

    def content(self) -> ComposeResult:
        table: DataTable[object] = DataTable(id="diff", cursor_type="row", show_header=False)
        table.add_column("where", key="where")
        table.add_column("code", key="code")
        for index, line in enumerate(self.lines):
            where = f"{line.path}:{line.line}" if line.kind in ("add", "ctx") else ""
            code = Text(visible(line.text), style=_STYLES.get(line.kind, ""))
            table.add_row(Text(visible(where)), code, key=str(index))  # a str: markup
        yield table

    def action_line(self, step: int) -> None:
        table = self.query_one("#diff", DataTable)
        if step > 0:
            table.action_cursor_down()
        else:
            table.action_cursor_up()

    def action_comment(self) -> None:
        index = self.query_one("#diff", DataTable).cursor_row
        if not self.lines or self.lines[index].kind == "file":
            self.say("choose a line or a hunk header to comment on")
            return

        def add(text: str | None) -> None:
            if text and text.strip():
                self.comments.append(diff.comment_on(self.lines, index, text))
                self.say(f"{len(self.comments)} comment(s); s sends them")

        where = f"{self.lines[index].path}:{self.lines[index].line}"
        self.app.push_screen(TextPrompt(f"Comment on {where}:", "your comment"), add)

    def action_send(self) -> None:
        if not self.comments:
            self.say("no comments to send (c comments on a line)")
            return
        try:
            line = self.acts.request_changes(self.row.id, diff.feedback(self.comments))
        except OrangeError as error:
            self.say(f"error: {error}")
            return
        self.comments = []
        self.say(line)


def open_view(app: Host, view: str) -> None:
    """Open ``view`` of the selected task (or the pool); a one-line error otherwise."""
    row = app.selected()
    try:
        if view == "tree":
            app.push_screen(TextView(" dependency tree (after:), merge order", tree_text(app)))
            return
        if view == "pool":
            feed = app.source.feeds[0]
            members = pool_status(feed.project, tmux=lambda: app.tmux)
            app.push_screen(PoolView(f" pool of {feed.project.name}", members, app.source.here))
            return
        if view == "stats":
            app.push_screen(stats_view(app))
            return
        if row is None or row.task is None:
            app.say("no task selected" if row is None else f"task {row.id} is broken: {row.broken}")
            return
        app.push_screen(_task_view(app, row, view))
    except OrangeError as error:
        app.say(f"error: {error}")


def tree_text(app: Host) -> str:
    """The tasks the table shows as a forest of ``after:`` links (`dependencies.forest`,
    as ``orange task list --tree`` draws it): each under the tasks it waits for, with its
    status and where it stands in this host's queue."""
    rows = {row.task.id: row for row in app.shown_rows if row.task is not None}
    lines = []
    for place in dependencies.forest(row.task for row in rows.values() if row.task):
        row = rows[place.task.id]
        if place.again:  # waits for several shown tasks: drawn in full once
            lines.append(f"{place.lead()}^ {row.id}")
            continue
        standing = app.source.standing(row)
        status = row.status if standing is None else f"{row.status} ({standing.label()})"
        lines.append(f"{place.lead()}{row.id}  {status}  {row.branch}  {row.summary}")
    return visible_lines("\n".join(lines) if lines else "no tasks shown")


def stats_view(app: Host) -> TextView:
    """`orange stats` of the projects shown, from their tasks history alone."""
    feeds = app.source.feeds
    if not feeds:
        raise OrangeError("no project: register one with `orange project add`")
    report = stats.collect([(feed.project.name, feed.store) for feed in feeds]).report()
    names = ", ".join(feed.project.name for feed in feeds)
    return TextView(f" stats of {names}", visible_lines("\n".join(stats.render(report))))


def _task_view(app: Host, row: Row, view: str) -> View:
    acts = actions_for(app, row)
    task = acts.store.get(row.id)
    title = f" {row.id}  {row.branch}  {row.status}"
    if view == "task":
        return TaskFileView(f"{title}  TASK.md", task.body)
    if view == "log":
        lines = [
            f"{h.commit[:10]}  {h.at}  {h.actor:<8} {h.subject}"
            for h in task_history(acts.store, row.id)
        ]
        return TextView(f"{title}  history", visible_lines("\n".join(lines)))
    if view == "output" and row.host:
        host = by_reported(row.host)
        if host is None:
            raise OrangeError(f"task {row.id} runs on host {row.host}, not registered here")
        return RemoteOutputView(
            f"{title}  agent output (on {host.name})",
            lambda: _peeked(reach.peek(host, acts.project, row.id, 200, False)),
        )
    if view == "output":
        session = session_of(task)
        if not session:
            raise OrangeError(f"task {row.id} has no tmux session on this host")
        workflow = app.source.workflow(row)
        state = workflow.states.get(row.status) if workflow is not None else None
        window = agent_window(task, state.agent if state is not None else "worker")
        return OutputView(f"{title}  agent output ({window})", session, window, app.tmux)
    base = base_of(acts.project, task)  # the task's base (checked: shared data), else default
    text = git("diff", f"refs/heads/{base}...refs/heads/{task.branch}", "--", cwd=acts.project.path)
    return DiffView(f"{title}  diff against {base}", text, row, acts)
