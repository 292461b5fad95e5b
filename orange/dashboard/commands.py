"""What the dashboard's keys do: ask when a move deserves it, then act through
`orange.dashboard.operations`; a refusal is one line in the app and changes nothing."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from orange.dashboard.keys import passed_review
from orange.dashboard.operations import Actions
from orange.dashboard.ports import Host
from orange.dashboard.rows import Row
from orange.dashboard.screens import (
    ConfirmScreen,
    CreateScreen,
    HelpScreen,
    HostScreen,
    NewTask,
    TextPrompt,
)
from orange.engine.catalog import load_named
from orange.errors import OrangeError
from orange.hosts import reach, roster
from orange.hosts.holdings import status_lines
from orange.hosts.nudge import after_command
from orange.hosts.probe import check_line
from orange.hosts.roster import by_reported
from orange.hosts.start import choose, start_on
from orange.runtime.harness import installed_names
from orange.runtime.places import agent_window


def actions_for(app: Host, row: Row) -> Actions:
    feed = app.source.feed_of(row)
    return Actions(feed.project, feed.store)


def act(app: Host, work: Callable[[], str]) -> None:
    """Run one action: its line, or its one-line error; then show what changed (and
    have the hosts of a project whose tasks it changed sync now: `orange.hosts.nudge`)."""
    started = time.time()
    try:
        app.say(work())
    except OrangeError as error:
        app.say(f"error: {error}")
    after_command(started)
    app.watch_refs()


def run_task_key(app: Host, action: str) -> None:
    """A task key: only where `keys.task_keys` offers it for the selected task."""
    row = app.selected()
    if row is None:
        app.say("no task selected")
        return
    offered = {key.key if key.key == "enter" else key.action: key for key in app.offered()}
    if action not in offered:
        what = (
            "nothing to start or attach" if action == "enter" else f"no {action.replace('_', ' ')}"
        )
        app.say(f"task {row.id} ({row.status}): {what} here")
        return
    action = offered[action].action
    HANDLERS[action](app, row, actions_for(app, row))


def _ask(app: Host, question: str, then: Callable[[], None]) -> None:
    def answered(yes: bool | None) -> None:
        if yes:
            then()
        else:
            app.say("nothing done")

    app.push_screen(ConfirmScreen(question), answered)


def _merge(app: Host, row: Row, acts: Actions) -> None:
    workflow = app.source.workflow(row)

    def do() -> None:
        act(app, lambda: acts.merge(row.id))

    if workflow is not None and passed_review(workflow, row):
        do()
    else:
        _ask(app, f"task {row.id} has not passed review ({row.status}). Merge anyway?", do)


def _cancel(app: Host, row: Row, acts: Actions) -> None:
    _ask(
        app, f"cancel task {row.id} ({row.summary})?", lambda: act(app, lambda: acts.cancel(row.id))
    )


def _delete(app: Host, row: Row, acts: Actions) -> None:
    _ask(
        app, f"delete task {row.id} ({row.summary})?", lambda: act(app, lambda: acts.delete(row.id))
    )


def _request_changes(app: Host, row: Row, acts: Actions) -> None:
    def send(text: str | None) -> None:
        if text is None:
            app.say("nothing sent")
        else:
            act(app, lambda: acts.request_changes(row.id, text))

    app.push_screen(TextPrompt(f"Changes to ask of task {row.id}:", "what to change"), send)


def _attach(app: Host, row: Row, acts: Actions) -> None:
    """Show the agent's window: switch the client inside tmux on the same server, else
    suspend the app and run ``tmux attach`` until the user detaches.  A task on a
    registered host: ``ssh -t`` into its session there."""
    if row.host:
        _attach_remote(app, row, acts)
        return
    try:
        session = acts.session(row.id)
        workflow = app.source.workflow(row)
        state = workflow.states.get(row.status) if workflow is not None else None
        window = agent_window(acts.store.get(row.id), state.agent if state else "worker")
        tmux = app.tmux
        if tmux.is_current():
            tmux.switch_to(session, window)
            app.say(f"switched to {session}; prefix L comes back here")
        else:
            with app.suspend():
                tmux.attach_and_wait(session, window)
            app.say(f"back from {session}")
    except OrangeError as error:
        app.say(f"error: {error}")
        return
    if app.exit_on_attach:
        app.exit()


def _attach_remote(app: Host, row: Row, acts: Actions) -> None:
    host = by_reported(row.host)
    if host is None:
        app.say(f"task {row.id} runs on host {row.host}, which is not registered here")
        return
    try:
        with app.suspend():
            code = reach.attach(host, acts.project, row.id)
    except OrangeError as error:
        app.say(f"error: {error}")
        return
    app.say(f"back from host {host.name}" if code == 0 else f"ssh to {host.name} exited {code}")
    if code == 0 and app.exit_on_attach:
        app.exit()


def _to_host(app: Host, row: Row, acts: Actions) -> None:
    """Start the task on a registered host, or move it there (`orange.hosts.start`):
    a dialog lists the hosts with their status; the start runs in the background."""
    hosts = status_lines(acts.project)
    if not hosts:
        app.say("no host registered: add one with `orange host add NAME SSH_TARGET`")
        return

    def chosen(name: str | None) -> None:
        if name is None:
            app.say("nothing started")
            return

        def start() -> str:
            started = start_on(choose(acts.project, name), acts.project, row.id)
            said = [f"task {row.id}: started on host {started.host.name}"]
            return "; ".join([*said, *started.messages])

        app.say(f"starting task {row.id} on host {name} ...")
        app.background(start)

    def check(name: str) -> str:
        try:
            return check_line(roster.get(name), acts.project)
        except OrangeError as error:
            return f"error: {error}"

    title = f"Run task {row.id} ({row.summary}) on host:"
    app.push_screen(HostScreen(title, hosts, check), chosen)


HANDLERS: dict[str, Callable[[Host, Row, Actions], None]] = {
    "merge": _merge,
    "cancel": _cancel,
    "delete": _delete,
    "request_changes": _request_changes,
    "ack": lambda app, row, acts: act(app, lambda: acts.ack(row.id)),
    "pr": lambda app, row, acts: act(app, lambda: acts.pr(row.id)),
    "spawn": lambda app, row, acts: act(app, lambda: acts.spawn(row.id)),
    "respawn": lambda app, row, acts: act(app, lambda: acts.respawn(row.id)),
    "attach": _attach,
    "to_host": _to_host,
}


def create(app: Host) -> None:
    """The create form, for the (first) project shown."""
    if not app.source.feeds:
        app.say("no project: register one with `orange project add`")
        return
    feed = app.source.feeds[0]
    try:
        statuses = list(load_named(feed.project.workflow).initial_statuses)
        harnesses = installed_names()
    except OrangeError as error:
        app.say(f"error: {error}")
        return

    def made(new: NewTask | None) -> None:
        if new is None:
            app.say("nothing created")
            return
        acts = Actions(feed.project, feed.store)
        act(app, lambda: acts.create(**new._asdict()))

    app.push_screen(CreateScreen(harnesses, statuses), made)


def copy_id(app: Host) -> None:
    """The selected id to the clipboard: OSC 52 (works over ssh), and inside tmux
    through its buffer, since tmux drops an application's OSC 52 by default."""
    row = app.selected()
    if row is None:
        app.say("no task selected")
        return
    app.copy_to_clipboard(row.id)
    if os.environ.get("TMUX"):
        try:
            app.tmux.set_buffer(row.id)
        except OrangeError as error:
            app.say(f"copied {row.id} (tmux buffer: {error})")
            return
    app.say(f"copied {row.id}")


def show_help(app: Host, return_key: str) -> None:
    lines = [
        "Task keys (shown in the footer only where the task's workflow has the move):",
        "  Enter  attach to the agent, respawn a dead one, or spawn",
        f"         (inside tmux: {return_key} comes back; outside: detach, prefix d)",
        "  m  merge (asks unless the task passed review)    x  cancel (asks)",
        "  r  request changes (a text box; sent as request-changes -m)",
        "  a  acknowledge attention    d  delete (always asks)    p  open or create the PR",
        "  h  run on a registered host (start it there, or move it there)",
        "Views (Esc comes back):",
        "  v  TASK.md    l  history    o  agent output    D  diff (c comment, s send)",
        "  w  workspace pool    t  dependency tree (after:, in the order they can merge)",
        "  s  stats of the projects shown (orange stats)",
        "Fixed: j/k or arrows move, f all/active/done, / filter, c create, y copy id,",
        "       ? this help, q quit",
    ]
    app.push_screen(HelpScreen("\n".join(lines)))
