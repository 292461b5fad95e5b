"""The tmux adapter against a real tmux server on a private socket."""

from __future__ import annotations

import json
import sys
import uuid
from pathlib import Path
from typing import NamedTuple

import pytest

from orange.errors import HookFailed
from orange.home import orange_home
from orange.runtime import tmux as tmux_module
from orange.runtime.tmux import PaneInfo, Tmux
from tests.helpers import retry_until

PY = sys.executable

RECORDER = """\
import json, os, sys
out = os.environ["OUT"]
with open(out + ".tmp", "w", encoding="utf-8") as handle:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd(), "x": os.environ.get("ORANGE_X")},
              handle, ensure_ascii=False)
os.replace(out + ".tmp", out)
"""

READER = """\
import sys
for line in sys.stdin:
    with open(sys.argv[1], "a", encoding="utf-8") as handle:
        handle.write(line)
"""

NASTY = (
    "# Task: fix it\n"
    "line with \"double\" and 'single' quotes\n"
    "$(touch /tmp/orange-pwned) `whoami` ${HOME} $HOME \\n \\\n"
    "\ttabbed ünïcødé 🍊 — 日本語\n"
    "; rm -rf nothing ;\n"
    "ends with;"
)


def dead(tmux: Tmux, session: str, window: str) -> PaneInfo:
    """Poll until the pane is dead and tmux has its exit status."""

    def ready() -> PaneInfo | None:
        pane = tmux.pane(session, window)
        if pane and pane.dead and (pane.dead_status is not None or pane.dead_signal):
            return pane
        return None

    return retry_until(ready)


def script(tmp_path: Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(code)
    return str(path)


def test_argv_env_and_cwd_arrive_byte_for_byte(tmux: Tmux, tmp_path: Path) -> None:
    work = tmp_path / "work dir"
    work.mkdir()
    out = tmp_path / "out.json"
    argv = [PY, script(tmp_path, "rec.py", RECORDER), NASTY, ";", "last;", "-x"]
    tmux.start("p/b", "worker", argv, work, {"OUT": str(out), "ORANGE_X": "ü $(x) `y`;"})
    seen = json.loads(retry_until(lambda: out.exists() and out.read_text(encoding="utf-8")))
    assert seen["argv"] == [NASTY, ";", "last;", "-x"]
    assert seen["x"] == "ü $(x) `y`;"
    assert Path(seen["cwd"]) == work.resolve()
    assert not Path("/tmp/orange-pwned").exists()
    assert dead(tmux, "p/b", "worker").dead_status == 0


def test_launch_file_is_private_and_deleted(tmux: Tmux, tmp_path: Path) -> None:
    run = orange_home() / "run"
    tmux.start("p/b", "worker", [PY, "-c", "import time; time.sleep(30)"], tmp_path)
    assert run.stat().st_mode & 0o777 == 0o700
    retry_until(lambda: not list(run.glob("launch-*")))


def test_program_that_exits_at_once_leaves_a_dead_pane(tmux: Tmux, tmp_path: Path) -> None:
    tmux.start("p/b", "worker", [PY, "-c", "print('bye'); raise SystemExit(7)"], tmp_path)
    pane = dead(tmux, "p/b", "worker")
    assert pane.dead_status == 7
    assert "bye" in tmux.capture("p/b", "worker", 50)


def test_missing_binary_exits_127(tmux: Tmux, tmp_path: Path) -> None:
    tmux.start("p/b", "worker", ["orange-no-such-agent", "--flag"], tmp_path)
    assert dead(tmux, "p/b", "worker").dead_status == 127
    assert "not found" in tmux.capture("p/b", "worker", 50)


def _counted_calls(tmux: Tmux, monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, ...]]:
    """The tmux calls the adapter makes from now on, each as its arguments."""
    calls: list[tuple[str, ...]] = []
    real = tmux._call

    def counting(*args: str):  # type: ignore[no-untyped-def]
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(tmux, "_call", counting)
    return calls


def test_panes_is_one_call_and_lists_dead_and_alive(
    tmux: Tmux, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert tmux.panes() == []  # no server yet: no error
    tmux.start("p/b", "worker", [PY, "-c", "import time; time.sleep(60)"], tmp_path)
    tmux.start("p/b", "review-1", [PY, "-c", "raise SystemExit(2)"], tmp_path)
    dead(tmux, "p/b", "review-1")
    calls = _counted_calls(tmux, monkeypatch)
    panes = {p.window: p for p in tmux.panes()}
    assert len(calls) == 1 and calls[0][0] == "list-panes"
    assert not panes["worker"].dead and panes["worker"].pid
    assert panes["review-1"].dead and panes["review-1"].dead_status == 2
    assert {p.session for p in panes.values()} == {"p/b"}


def test_visible_all_reads_every_pane_in_one_call(
    tmux: Tmux, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As `visible` per pane, in one tmux call; a pane gone meanwhile is "" and does not
    cost the panes after it their screens."""
    shows = {"a": ["first pane"], "b": ["second", "", "", "after blank lines"], "c": ["third"]}
    for window, lines in shows.items():
        code = f"print({chr(10).join(lines)!r}); import time; time.sleep(60)"
        tmux.start("p/b", window, [PY, "-c", code], tmp_path)
    panes = {p.window: p.pane_id for p in tmux.panes()}
    for window, lines in shows.items():
        retry_until(lambda: lines[-1] in tmux.visible(panes[window]))  # noqa: B023
    one_by_one = {pane: tmux.visible(pane) for pane in panes.values()}
    calls = _counted_calls(tmux, monkeypatch)
    assert tmux.visible_all(list(panes.values())) == one_by_one
    assert len(calls) == 1
    assert "second\n\n\nafter blank lines" in one_by_one[panes["b"]]
    gone = "%99999"
    order = [panes["a"], gone, panes["b"], panes["c"]]
    assert tmux.visible_all(order) == {**one_by_one, gone: ""}
    monkeypatch.setattr(tmux_module, "READ_AT_ONCE", 2)  # tmux's command size, made small
    assert tmux.visible_all([*panes.values(), gone]) == {**one_by_one, gone: ""}


def test_send_text_reaches_a_program_reading_stdin(tmux: Tmux, tmp_path: Path) -> None:
    out = tmp_path / "typed.txt"
    tmux.start("p/b", "worker", [PY, script(tmp_path, "r.py", READER), str(out)], tmp_path)
    retry_until(lambda: tmux.pane("p/b", "worker"))
    tmux.send_text("p/b", "worker", 'hello "world" $(x) `y` 🍊 ;')
    retry_until(lambda: out.exists() and out.read_text(encoding="utf-8").endswith("\n"))
    tmux.send_text("p/b", "worker", "first line\nsecond; line\n")
    expected = 'hello "world" $(x) `y` 🍊 ;\nfirst line\nsecond; line\n'
    retry_until(lambda: out.read_text(encoding="utf-8") == expected)


# An agent TUI on a loaded machine: raw input, and what arrives while it is still taking
# in a burst of text (a second here) is part of that text, an Enter included; only
# an Enter by itself submits.  It shows the text once it has taken it in.
SLOW_TUI = """\
import os, select, sys, time, tty
tty.setraw(0)
os.write(1, b"ready")
typed = b""
while True:
    data = os.read(0, 1024)
    if data == b"\\r" and typed:
        with open(sys.argv[1], "ab") as handle:
            handle.write(typed + b"\\n")
        typed = b""
        os.write(1, b"\\r\\x1b[K> ")  # its input box empty again
        continue
    time.sleep(1.0)
    while select.select([0], [], [], 0)[0]:
        data += os.read(0, 1024)
    typed += data.replace(b"\\r", b" ")
    os.write(1, b"\\r\\x1b[K> " + typed)
"""


def test_send_text_submits_once_a_slow_agent_shows_the_text(tmux: Tmux, tmp_path: Path) -> None:
    out = tmp_path / "submitted.txt"
    tmux.start("p/b", "worker", [PY, script(tmp_path, "slow.py", SLOW_TUI), str(out)], tmp_path)
    pane = retry_until(lambda: tmux.pane("p/b", "worker"))
    retry_until(lambda: "ready" in tmux.visible(pane.pane_id))
    tmux.send_text("p/b", "worker", "Review round 1 failed")
    tmux.send_text("p/b", "worker", "first line\nsecond line")
    # Each message submitted by itself: no Enter was taken in as part of its text.
    retry_until(lambda: out.exists() and out.read_bytes().count(b"\n") == 2)
    assert out.read_bytes() == b"Review round 1 failed\nfirst line second line\n"


# An agent TUI that takes the message in but not every Enter: the first one (or, with
# a second argument, every one) is dropped, as by a TUI busy redrawing or one that
# reads an Enter after a burst of text as a newline.  A submitted message goes to its
# history line, which still shows it, above an empty input line.
DROPPING_TUI = """\
import os, sys, tty
tty.setraw(0)
os.write(1, b"ready\\r\\n> ")
typed, enters = b"", 0
while True:
    data = os.read(0, 1024)
    for byte in data:
        if byte != 13:
            typed += bytes([byte])
            os.write(1, bytes([byte]))
            continue
        enters += 1
        if enters == 1 or len(sys.argv) > 2 or not typed:
            continue
        with open(sys.argv[1], "ab") as handle:
            handle.write(typed + b"\\n")
        os.write(1, b"\\r\\x1b[Ksent: " + typed + b"\\r\\n> ")
        typed = b""
"""

NOTICE = "Review round 1 failed. Read ## Review in TASK.md and fix every issue it raises"


def test_send_text_presses_enter_again_when_the_message_stays_in_the_input_box(
    tmux: Tmux, tmp_path: Path
) -> None:
    out = tmp_path / "submitted.txt"
    agent = script(tmp_path, "dropping.py", DROPPING_TUI)
    tmux.start("p/b", "worker", [PY, agent, str(out)], tmp_path)
    pane = retry_until(lambda: tmux.pane("p/b", "worker"))
    retry_until(lambda: "ready" in tmux.visible(pane.pane_id))
    tmux.send_text("p/b", "worker", NOTICE)  # returns once the message left the box
    assert out.read_bytes() == NOTICE.encode() + b"\n"
    tmux.send_text("p/b", "worker", NOTICE)  # the same words again, now in the history
    assert out.read_bytes() == (NOTICE.encode() + b"\n") * 2


def test_send_text_fails_when_the_agent_never_takes_the_message(tmux: Tmux, tmp_path: Path) -> None:
    agent = script(tmp_path, "dropping.py", DROPPING_TUI)
    tmux.start("p/b", "worker", [PY, agent, str(tmp_path / "out"), "drop-all"], tmp_path)
    pane = retry_until(lambda: tmux.pane("p/b", "worker"))
    retry_until(lambda: "ready" in tmux.visible(pane.pane_id))
    with pytest.raises(HookFailed, match="was not submitted: it still stands in the agent's"):
        Tmux(submit_wait=1.0).send_text("p/b", "worker", NOTICE)
    assert not (tmp_path / "out").exists()


def test_send_text_to_a_dead_or_missing_pane_fails(tmux: Tmux, tmp_path: Path) -> None:
    with pytest.raises(HookFailed, match="no tmux window"):
        tmux.send_text("p/b", "worker", "hi")
    tmux.start("p/b", "worker", [PY, "-c", "pass"], tmp_path)
    dead(tmux, "p/b", "worker")
    with pytest.raises(HookFailed, match="not running"):
        tmux.send_text("p/b", "worker", "hi")


def test_start_respawns_a_dead_window_and_refuses_a_live_one(tmux: Tmux, tmp_path: Path) -> None:
    tmux.start("p/b", "worker", [PY, "-c", "raise SystemExit(3)"], tmp_path)
    first = dead(tmux, "p/b", "worker")
    out = tmp_path / "again"
    tmux.start("p/b", "worker", [PY, "-c", f"open({str(out)!r}, 'w'); import time; time.sleep(60)"],
               tmp_path)  # fmt: skip
    retry_until(out.exists)
    again = tmux.pane("p/b", "worker")
    assert again is not None and not again.dead and again.pane_id == first.pane_id
    assert [p.window for p in tmux.panes()] == ["worker"]
    with pytest.raises(HookFailed, match="still running"):
        tmux.start("p/b", "worker", [PY, "-c", "pass"], tmp_path)


def test_remain_on_exit_after_respawn(tmux: Tmux, tmp_path: Path) -> None:
    tmux.start("p/b", "worker", [PY, "-c", "raise SystemExit(1)"], tmp_path)
    dead(tmux, "p/b", "worker")
    tmux.start("p/b", "worker", [PY, "-c", "raise SystemExit(5)"], tmp_path)
    retry_until(lambda: (p := tmux.pane("p/b", "worker")) and p.dead_status == 5)


def test_kill_window_keeps_the_other_windows(tmux: Tmux, tmp_path: Path) -> None:
    sleep = [PY, "-c", "import time; time.sleep(60)"]
    tmux.start("p/b", "worker", sleep, tmp_path)
    tmux.start("p/b", "review-1", sleep, tmp_path)
    tmux.kill_window("p/b", "review-1")
    assert [p.window for p in tmux.panes()] == ["worker"]
    tmux.kill_window("p/b", "review-1")  # absent: nothing
    tmux.kill_session("p/other")  # absent: nothing
    tmux.rename_session("p/b", "p/c")
    assert tmux.has_session("p/c") and not tmux.has_session("p/b")
    tmux.kill_session("p/c")
    assert tmux.panes() == []


def test_names_match_exactly_not_by_prefix(tmux: Tmux, tmp_path: Path) -> None:
    tmux.start("proj/feature-long", "worker", [PY, "-c", "import time; time.sleep(60)"], tmp_path)
    assert not tmux.has_session("proj/feature")
    tmux.kill_session("proj/feature")
    assert tmux.has_session("proj/feature-long")


def test_one_adapter_follows_the_socket_variable_as_it_changes(
    tmux: Tmux, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The composition root builds one adapter per process (`orange.compose.tmux`):
    it must talk to the server ``$ORANGE_TMUX_SOCKET`` names at each call."""
    tmux.start("p/here", "worker", [PY, "-c", "import time; time.sleep(60)"], tmp_path)
    assert tmux.has_session("p/here")
    first = tmux.socket_name
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", f"orange-test-{uuid.uuid4().hex[:10]}")
    assert not tmux.has_session("p/here")  # another (absent) server
    monkeypatch.setenv("ORANGE_TMUX_SOCKET", str(first))
    assert tmux.has_session("p/here")


def test_without_tmux_every_call_is_one_line_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no tmux on it
    server = Tmux(f"orange-test-{uuid.uuid4().hex[:10]}")
    for call in (server.panes, lambda: server.has_session("p/b"), server.kill_server):
        with pytest.raises(HookFailed) as raised:
            call()
        assert (raised.value.message, raised.value.hint) == (
            "tmux is not installed",
            "install tmux 3.0 or newer",
        )


def test_start_needs_an_existing_directory(tmux: Tmux, tmp_path: Path) -> None:
    with pytest.raises(HookFailed, match="no such directory"):
        tmux.start("p/b", "worker", [PY], tmp_path / "missing")
    with pytest.raises(HookFailed, match="invalid tmux session name"):
        tmux.start("p.b", "worker", [PY], tmp_path)


class NameCase(NamedTuple):
    project: str
    branch: str
    expected: str


NAME_CASES = [
    NameCase("orange", "feature/x", "orange/feature/x"),
    NameCase("my.proj", "v1.2", "my-proj/v1-2"),
    NameCase("p", "a:b", "p/a-b"),
    NameCase("p", "a;b", "p/a-b"),
    NameCase("p", "$(x)", "p/--x-"),
    NameCase("-p", "b", "_p/b"),
    NameCase("--", "b", "_/b"),
    NameCase("p", "ünï côde", "p/-n--c-de"),
]


@pytest.mark.parametrize("case", NAME_CASES, ids=[f"{c.project}|{c.branch}" for c in NAME_CASES])
def test_session_names_are_sanitised(case: NameCase) -> None:
    assert Tmux.session_name(case.project, case.branch) == case.expected


def test_sanitised_names_work_in_tmux(tmux: Tmux, tmp_path: Path) -> None:
    sleep = [PY, "-c", "import time; time.sleep(60)"]
    names = sorted({Tmux.session_name(c.project, c.branch) for c in NAME_CASES})
    for name in names:
        tmux.start(name, "worker", sleep, tmp_path)
    assert sorted(p.session for p in tmux.panes()) == sorted(names)
    assert all(tmux.has_session(name) for name in names)
