"""Telling a human they are needed: a desktop notification and a webhook (DESIGN §4).

The engine calls `DetachedNotifier.send` right after the commit that made a task wait
for a human (or set its ``attention``).  Each (commit, event) is claimed once in a
local record, ``$ORANGE_HOME/notify/sent/<commit>.<event>`` (one empty file each,
created exclusively, so the CLI, the monitor and a git hook racing on the same commit
notify once between them; only the newest `KEEP` records are kept), then sent from a
detached child process
(``python -m orange.runtime.notices BODY``): a slow or hanging webhook never delays a
move, and nothing a channel does can fail one.

A channel that fails is remembered in ``$ORANGE_HOME/notify/failing/<channel>`` (its
reason); the next process that sends a notice says so once on its stderr (the CLI's
user, or the monitor's log), and a later success forgets it.  ``notify/deliveries``
records what each channel did with each notice: only what was delivered is "sent".

Settings, in ``$ORANGE_HOME/config.yml``::

    notify:
      desktop: false          # default true: notify-send (Linux) or osascript (macOS)
      webhook: https://...    # POSTed the JSON body of `body`
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

from orange.engine.ports import Notice
from orange.errors import InvalidInput
from orange.home import load_config, orange_home
from orange.store.task import Task

WEBHOOK_TIMEOUT = 10.0  # seconds the detached child gives a webhook
# Records of sent notifications kept: a commit is announced again only by drivers
# racing on it (seconds apart), so the newest thousand are plenty.  The folder is
# pruned back to KEEP once it holds PRUNE_AT: each claim lists it, one in a hundred prunes.
KEEP = 1000
PRUNE_AT = 1100
NO_DESKTOP_TOOL = "neither notify-send nor osascript is on PATH"


class Settings(NamedTuple):
    desktop: bool
    webhook: str


class Delivery(NamedTuple):
    """What one channel did: ``channel`` (desktop, webhook), ``state`` (sent, failed,
    off), ``detail`` in words."""

    channel: str
    state: str
    detail: str


def settings() -> Settings:
    """The ``notify`` settings of config.yml, or `InvalidInput` naming the bad key."""
    value = load_config().get("notify", {})
    if value is None:
        value = {}
    if not isinstance(value, dict):
        raise InvalidInput("config.yml: notify must be a mapping (desktop:, webhook:)")
    desktop = value.get("desktop", True)
    if not isinstance(desktop, bool):
        raise InvalidInput("config.yml: notify.desktop must be true or false")
    webhook = value.get("webhook") or ""
    if not isinstance(webhook, str):
        raise InvalidInput("config.yml: notify.webhook must be a URL")
    return Settings(desktop, webhook)


class Message(NamedTuple):
    """What a human is told about a task; its fields are the webhook's JSON body (a
    message about a task, never a task)."""

    event: str
    task: str
    project: str
    branch: str
    summary: str
    status: str
    reason: str


def body(event: str, task: Task, reason: str) -> Message:
    """The message of ``event`` for ``task``."""
    return Message(event, task.id, task.project, task.branch, task.summary, task.status, reason)


class Notices:
    """The adapter that tells a human (a desktop notification, a webhook), one per
    process, handed out by the composition root (`orange.compose.notices`): the engine's
    `orange.engine.ports.Notifier` (once per event, never blocking), the ``notify``
    hook action's channel and `orange notify --test`'s."""

    def send(self, notice: Notice) -> None:
        if claim(notice.commit, notice.event):
            dispatch(body(notice.event, notice.task, notice.reason))

    def tell(self, event: str, task: Task, reason: str) -> None:
        """Send ``reason`` about ``task`` now, from a detached child."""
        dispatch(body(event, task, reason))

    def send_test(self, timeout: float = 5.0) -> list[Delivery]:
        """`orange notify --test`: one notification on every channel, now
        (`InvalidInput` for a bad ``notify`` setting)."""
        reason = "a test from `orange notify --test`: notifications reach you"
        payload = Message("test", "test", "", "", "", "test", reason)
        return deliver(payload, settings(), timeout)


def claim(commit: str, event: str) -> bool:
    """True the first time (``commit``, ``event``) is claimed on this host."""
    folder = _notify_dir("sent")
    try:
        os.close(os.open(folder / f"{commit}.{event}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    prune(folder)
    return True


def prune(folder: Path) -> None:
    """Remove all but the newest `KEEP` records once the folder holds `PRUNE_AT`."""
    with os.scandir(folder) as found:
        entries = list(found)
    if len(entries) < PRUNE_AT:
        return
    ages = []
    for entry in entries:
        try:
            ages.append((entry.stat().st_mtime_ns, entry.name))
        except FileNotFoundError:  # pruned meanwhile by another claim
            continue
    for _, name in sorted(ages)[: max(len(ages) - KEEP, 0)]:
        (folder / name).unlink(missing_ok=True)


def dispatch(payload: Message) -> None:
    """Send ``payload`` from a detached child (its own session, no inherited output,
    so neither a caller waiting for our output nor a killed tmux session holds it)."""
    try:
        wanted = settings()
    except Exception:  # a broken config must not block a move; `notify --test` says why
        return
    if wanted.desktop and not desktop_tool():
        remember([Delivery("desktop", "failed", NO_DESKTOP_TOOL)], payload)
    say_failing()
    if not (wanted.webhook or (wanted.desktop and desktop_tool())):
        return
    # Loaded only when a notice is sent, not on every move that might send one.
    import subprocess

    subprocess.Popen(
        [sys.executable, "-P", "-m", "orange.runtime.notices", json.dumps(payload._asdict())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def deliver(payload: Message, wanted: Settings, timeout: float) -> list[Delivery]:
    """Send ``payload`` on every channel ``wanted`` now, in this process; one
    `Delivery` per channel, ``off`` for one not wanted."""
    if wanted.desktop:
        shown = desktop(text_of(payload), timeout)
    else:
        shown = Delivery("desktop", "off", "off (notify.desktop: false in config.yml)")
    if wanted.webhook:
        posted = post(wanted.webhook, payload, timeout)
    else:
        posted = Delivery("webhook", "off", "not configured (notify.webhook in config.yml)")
    remember([shown, posted], payload)
    return [shown, posted]


def _notify_dir(name: str) -> Path:
    folder = orange_home() / "notify" / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# The deliveries record is cut back to its newer half past this size.
DELIVERIES_MAX = 256 * 1024


def remember(done: list[Delivery], payload: Message) -> None:
    """Record what each channel did with ``payload``; a failing channel is marked (once,
    with its reason) for `say_failing`, a delivering one is no longer."""
    failing = _notify_dir("failing")
    for delivery in done:
        if delivery.state == "failed":
            if (failing / f"{delivery.channel}.said").exists():
                continue  # said already; a success forgets it
            try:
                fd = os.open(failing / delivery.channel, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                continue
            with os.fdopen(fd, "w") as out:
                out.write(delivery.detail)
        elif delivery.state == "sent":
            for stale in (delivery.channel, f"{delivery.channel}.said"):
                (failing / stale).unlink(missing_ok=True)
    record = orange_home() / "notify" / "deliveries"
    lines = "".join(
        json.dumps({"event": payload.event, "task": payload.task, **d._asdict()}) + "\n"
        for d in done
        if d.state != "off"
    )
    with open(record, "a", encoding="utf-8") as out:
        out.write(lines)
        size = out.tell()
    if size > DELIVERIES_MAX:
        kept = record.read_bytes()[-DELIVERIES_MAX // 2 :]
        record.write_bytes(kept[kept.find(b"\n") + 1 :])


def say_failing() -> None:
    """Say on stderr, once per failure, which channel failed and why."""
    failing = _notify_dir("failing")
    for marker in sorted(failing.iterdir()):
        if marker.suffix == ".said":
            continue
        try:
            marker.rename(marker.with_name(f"{marker.name}.said"))
        except FileNotFoundError:  # another process said it
            continue
        reason = marker.with_name(f"{marker.name}.said").read_text(errors="replace")[:300]
        print(
            f"orange: warning: {marker.name} notifications are not reaching you: {reason} "
            "(check with `orange notify --test`)",
            file=sys.stderr,
        )


def text_of(payload: Message) -> str:
    summary = f" ({payload.summary})" if payload.summary else ""
    return f"task {payload.task}{summary} is {payload.status}: {payload.reason}"


def desktop_tool() -> str | None:
    """``notify-send`` or ``osascript``, whichever is on PATH."""
    return next((tool for tool in ("notify-send", "osascript") if shutil.which(tool)), None)


def desktop(text: str, timeout: float) -> Delivery:
    tool = desktop_tool()
    if tool is None:
        return Delivery("desktop", "failed", NO_DESKTOP_TOOL)
    if tool == "notify-send":
        argv = ["notify-send", "Orange", text]
    else:  # an AppleScript string literal: only backslash and double quote are special
        quoted = text.replace("\\", "\\\\").replace('"', '\\"')
        argv = ["osascript", "-e", f'display notification "{quoted}" with title "Orange"']
    # The sending child only: a move's own process never runs a tool.
    import subprocess

    try:
        result = subprocess.run(argv, timeout=timeout, check=False, capture_output=True)
    except (OSError, subprocess.SubprocessError) as exc:
        return Delivery("desktop", "failed", f"{tool}: {exc}")
    if result.returncode != 0:
        return Delivery("desktop", "failed", f"{tool} exited {result.returncode}")
    return Delivery("desktop", "sent", f"sent with {tool}")


def post(url: str, payload: Message, timeout: float) -> Delivery:
    # urllib.request (ssl, email, http) costs more than a whole task update: loaded
    # only where a webhook is posted (the detached child, `orange notify --test`).
    import urllib.request

    data = json.dumps(payload._asdict()).encode()
    try:
        request = urllib.request.Request(
            url, data=data, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as reply:
            return Delivery("webhook", "sent", f"{url} answered {reply.status}")
    except Exception as exc:  # a bad URL, a refused connection, a reply that is not HTTP
        return Delivery("webhook", "failed", f"{url}: {exc}")


def main(argv: list[str]) -> int:
    """The detached child: deliver one body on every configured channel."""
    try:
        deliver(Message(**json.loads(argv[0])), settings(), WEBHOOK_TIMEOUT)
    except Exception:  # nobody reads our output: a failure just sends nothing
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
