"""A human hears when they are needed: entering a state that waits for a human, or a
newly set ``attention``, notifies once per commit — a desktop notification (a fake
``notify-send`` on PATH that logs its argv) and the configured webhook (a local HTTP
server) — sent by a detached child, so a hanging webhook never delays a move."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from orange import projects
from orange.compose import build_engine
from orange.engine.notices import announce
from orange.home import orange_home
from orange.store.history import task_history
from tests.conftest import Cli, orange_bin
from tests.helpers import retry_until
from tests.processes import wait_gone

REVIEW_PASS = "Verdict: PASS\n\nLooks good.\n"


@pytest.fixture
def desktop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake ``notify-send`` first on PATH; the file each call appends its argv to."""
    folder = tmp_path / "fakebin"
    folder.mkdir()
    log = folder / "notify-send.log"
    script = folder / "notify-send"
    script.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> "{log}"\necho >> "{log}"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}:/usr/local/bin:/usr/bin:/bin")
    return log


class Webhook:
    """A local HTTP server recording each POST; with ``hold`` set, every request
    waits (unanswered) until the test calls ``release``."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.arrived = threading.Event()
        self.released = threading.Event()
        self.hold = False
        self.sender_waiting: list[bool] = []  # per held request, once released
        self.url = ""

    def release(self) -> None:
        self.released.set()


@pytest.fixture
def webhook() -> Iterator[Webhook]:
    hook = Webhook()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            data = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            hook.bodies.append(json.loads(data))
            hook.arrived.set()
            if hook.hold:
                hook.released.wait(30)
                hook.sender_waiting.append(still_connected(self.connection))
            self.send_response(204)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        yield hook
    finally:
        hook.release()
        server.shutdown()
        server.server_close()
        thread.join()


def still_connected(conn: socket.socket) -> bool:
    """Whether the client is still there, waiting for our answer (not closed: a
    process that exited, or gave up, has closed its end)."""
    conn.setblocking(False)
    try:
        return conn.recv(1, socket.MSG_PEEK) != b""
    except BlockingIOError:
        return True  # nothing to read, not closed
    finally:
        conn.setblocking(True)


def config(text: str) -> None:
    orange_home().mkdir(parents=True, exist_ok=True)
    (orange_home() / "config.yml").write_text(text)


def calls(log: Path) -> list[list[str]]:
    lines = log.read_text().splitlines() if log.is_file() else []
    return [line.rstrip("|").split("|") for line in lines]


def settled(tmp_path: Path) -> None:
    """Wait until every process this test started (detached senders) has exited."""
    assert wait_gone(tmp_path, 30) == []


def in_review(cli: Cli, repo: Path) -> str:
    """A default-workflow task in agent-review with a passing ``## Review``."""
    cli.ok("project", "add", cwd=repo)
    args = ("feat", "Add a feature", "--status", "agent-review", "--no-spawn", "--json")
    task_id = str(cli.ok("task", "create", *args).json()["id"])
    cli.ok("task", "edit", task_id, "--section", "Review", "--file", "-", stdin=REVIEW_PASS)
    return task_id


def test_entering_reviewing_notifies_once_on_the_desktop_and_the_webhook(
    cli: Cli, repo: Path, desktop: Path, webhook: Webhook, tmp_path: Path
) -> None:
    config(f"notify:\n  webhook: {webhook.url}\n")
    task_id = in_review(cli, repo)
    assert calls(desktop) == []  # agent-review waits for the reviewer, not a human
    cli.ok("task", "update", task_id, "--status", "reviewing")
    retry_until(lambda: calls(desktop) and webhook.bodies)
    settled(tmp_path)
    assert len(calls(desktop)) == 1
    title, text = calls(desktop)[0]
    assert title == "Orange" and task_id in text and "reviewing" in text
    assert webhook.bodies == [
        {
            "event": "waiting",
            "task": task_id,
            "project": "proj",
            "branch": "feat",
            "summary": "Add a feature",
            "status": "reviewing",
            "reason": "waits for a human in reviewing",
        }
    ]


def test_the_same_commit_handled_twice_notifies_once(
    cli: Cli, repo: Path, desktop: Path, tmp_path: Path
) -> None:
    task_id = in_review(cli, repo)
    cli.ok("task", "update", task_id, "--status", "reviewing")
    project = projects.get("proj")
    monitor = build_engine(project, actor="monitor")  # another driver, same commit
    task = monitor.store.get(task_id)
    entry = task_history(monitor.store, task_id)[-1]
    assert entry.to_status == "reviewing"
    before = task.with_fields(status="agent-review")
    announce(monitor.notifier, monitor.workflow(task), before, task, entry.commit)
    settled(tmp_path)
    assert len(calls(desktop)) == 1


def test_attention_notifies(cli: Cli, repo: Path, desktop: Path, tmp_path: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    task_id = cli.ok("task", "create", "feat", "Add a feature", "--no-spawn", "--json").json()["id"]
    engine = build_engine(projects.get("proj"), actor="monitor")
    engine.set_attention(task_id, "the reviewer's pane is gone")
    retry_until(lambda: calls(desktop))
    settled(tmp_path)
    assert len(calls(desktop)) == 1
    assert "the reviewer's pane is gone" in calls(desktop)[0][1]


def test_desktop_off_in_config_sends_none(
    cli: Cli, repo: Path, desktop: Path, webhook: Webhook, tmp_path: Path
) -> None:
    config(f"notify:\n  desktop: false\n  webhook: {webhook.url}\n")
    task_id = in_review(cli, repo)
    cli.ok("task", "update", task_id, "--status", "reviewing")
    retry_until(lambda: webhook.bodies)  # the webhook still hears of it
    settled(tmp_path)
    assert calls(desktop) == []


def test_a_hanging_webhook_does_not_delay_task_update(
    cli: Cli, repo: Path, webhook: Webhook, tmp_path: Path
) -> None:
    config(f"notify:\n  desktop: false\n  webhook: {webhook.url}\n")
    task_id = in_review(cli, repo)
    webhook.hold = True
    update = subprocess.run(
        [orange_bin(), "task", "update", task_id, "--status", "reviewing"],
        cwd=repo,
        capture_output=True,  # a sender holding our output would keep this waiting
        text=True,
        check=False,
    )
    assert update.returncode == 0, update.stderr
    assert webhook.arrived.wait(30)
    webhook.release()
    retry_until(lambda: webhook.sender_waiting)
    # The command returned while its request was held: its sender still waits for the
    # answer (had `task update` posted itself, its exit would have closed the request).
    assert webhook.sender_waiting == [True]
    settled(tmp_path)
    assert [b["status"] for b in webhook.bodies] == ["reviewing"]


def test_notify_test_sends_one_of_each(
    cli: Cli, desktop: Path, webhook: Webhook, tmp_path: Path
) -> None:
    config(f"notify:\n  webhook: {webhook.url}\n")
    result = cli.ok("notify", "--test", "--json").json()
    assert [(c["channel"], c["state"]) for c in result["channels"]] == [
        ("desktop", "sent"),
        ("webhook", "sent"),
    ]
    assert len(calls(desktop)) == 1
    assert [b["event"] for b in webhook.bodies] == ["test"]


def test_notify_test_says_what_failed(cli: Cli, tmp_path: Path) -> None:
    config("notify:\n  desktop: false\n")
    result = cli("notify", "--test")
    assert result.code == 1
    assert result.err.startswith("orange: no notification channel is on")
    config("notify:\n  desktop: maybe\n")
    result = cli("notify", "--test")
    assert (result.code, result.err.count("\n")) == (1, 1)
    assert "notify.desktop must be true or false" in result.err


@pytest.fixture
def mac_desktop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """As on macOS: a fake ``osascript`` logging its argv, and no ``notify-send``
    anywhere on PATH (which holds only it and git)."""
    folder = tmp_path / "macbin"
    folder.mkdir()
    (folder / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    log = folder / "osascript.log"
    script = folder / "osascript"
    script.write_text(f'#!/bin/sh\nprintf "%s|" "$@" >> "{log}"\necho >> "{log}"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", str(folder))
    return log


def test_osascript_shows_it_where_notify_send_is_absent(
    cli: Cli, repo: Path, mac_desktop: Path, tmp_path: Path
) -> None:
    tested = cli.ok("notify", "--test", "--json").json()["channels"][0]
    assert (tested["state"], tested["detail"]) == ("sent", "sent with osascript")
    cli.ok("project", "add", cwd=repo)
    summary = 'Quote "this" and C:\\temp'
    args = ("feat", summary, "--status", "agent-review", "--no-spawn", "--json")
    task_id = str(cli.ok("task", "create", *args).json()["id"])
    cli.ok("task", "edit", task_id, "--section", "Review", "--file", "-", stdin=REVIEW_PASS)
    cli.ok("task", "update", task_id, "--status", "reviewing")
    retry_until(lambda: len(calls(mac_desktop)) == 2)
    settled(tmp_path)
    quoted = 'Quote \\"this\\" and C:\\\\temp'  # an AppleScript string literal
    assert calls(mac_desktop)[1] == [
        "-e",
        f'display notification "task {task_id} ({quoted}) is reviewing: waits for a human '
        f'in reviewing" with title "Orange"',
    ]


@pytest.fixture
def no_desktop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither notify-send nor osascript anywhere on PATH (which holds only git)."""
    folder = tmp_path / "bare-bin"
    folder.mkdir()
    (folder / "git").symlink_to(shutil.which("git") or "/usr/bin/git")
    monkeypatch.setenv("PATH", str(folder))


def deliveries() -> list[tuple[str, str]]:
    record = orange_home() / "notify" / "deliveries"
    lines = record.read_text().splitlines() if record.is_file() else []
    return [(entry["channel"], entry["state"]) for entry in map(json.loads, lines)]


def test_a_missing_desktop_tool_is_said_once_and_never_recorded_as_sent(
    cli: Cli, repo: Path, no_desktop: None
) -> None:
    first = in_review(cli, repo)
    moved = cli.ok("task", "update", first, "--status", "reviewing")
    warning = "warning: desktop notifications are not reaching you: neither notify-send"
    assert moved.err.count(warning) == 1
    args = ("second", "Another", "--status", "agent-review", "--no-spawn", "--json")
    second = str(cli.ok("task", "create", *args).json()["id"])
    cli.ok("task", "edit", second, "--section", "Review", "--file", "-", stdin=REVIEW_PASS)
    again = cli.ok("task", "update", second, "--status", "reviewing")
    assert warning not in again.err  # said once, not on every notice
    assert ("desktop", "sent") not in deliveries()


def test_a_failing_webhook_is_said_by_the_next_notice(
    cli: Cli, repo: Path, desktop: Path, tmp_path: Path
) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    config(f"notify:\n  webhook: http://127.0.0.1:{port}/hook\n")
    first = in_review(cli, repo)
    cli.ok("task", "update", first, "--status", "reviewing")
    retry_until(lambda: ("webhook", "failed") in deliveries())
    settled(tmp_path)
    assert deliveries().count(("desktop", "sent")) == 1
    args = ("second", "Another", "--status", "agent-review", "--no-spawn", "--json")
    second = str(cli.ok("task", "create", *args).json()["id"])
    assert "not reaching you" not in cli.ok("task", "show", second).err  # no notice
    cli.ok("task", "edit", second, "--section", "Review", "--file", "-", stdin=REVIEW_PASS)
    said = cli.ok("task", "update", second, "--status", "reviewing").err
    assert said.count("warning: webhook notifications are not reaching you") == 1
    assert f"127.0.0.1:{port}" in said
    settled(tmp_path)


def test_notify_test_reports_every_channel_and_fails_on_one(
    cli: Cli, webhook: Webhook, no_desktop: None
) -> None:
    config(f"notify:\n  webhook: {webhook.url}\n")
    result = cli("notify", "--test")
    assert result.code == 1
    assert "desktop: failed: neither notify-send nor osascript" in result.out
    assert "webhook: sent: " in result.out and "answered 204" in result.out
    assert result.err.strip() == "orange: notify test failed on desktop"
    as_json = cli("notify", "--test", "--json")
    assert as_json.code == 1
    states = [(c["channel"], c["state"]) for c in as_json.json()["channels"]]
    assert states == [("desktop", "failed"), ("webhook", "sent")]
