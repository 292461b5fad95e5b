"""Progress output: one line per event in a pipe, nothing on stdout with --json, a live
view on a terminal."""

from __future__ import annotations

import io

import pytest

from orange.run.progress import Event, LiveProgress, elapsed, line, progress_for

EVENTS = [
    Event("step", "r1", "PLANNING", None, "started", ""),
    Event("wave", "r1", "wave 1/2", None, "waiting", "1 of 2 worktrees free"),
    Event("subtask", "r1", "SUBTASK_IMPLEMENTING", "s1", "implementing", ""),
    Event("subtask", "r1", "SUBTASK_TESTING", "s2", "testing", "iteration 2"),
    Event("note", "r1", "SUBTASK_REVIEWING", None, "retrying", "the review was\nnot JSON"),
]
LINES = [
    "run r1: PLANNING started",
    "run r1: wave 1/2 waiting (1 of 2 worktrees free)",
    "run r1: subtask s1 implementing",
    "run r1: subtask s2 testing (iteration 2)",
    "run r1: SUBTASK_REVIEWING retrying (the review was not JSON)",
]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_pipe_gets_one_line_per_event() -> None:
    out = io.StringIO()
    progress = progress_for(out, json_mode=False)
    for event in EVENTS:
        progress.event(event)
    progress.close()
    assert out.getvalue().splitlines() == LINES
    assert [line(e) for e in EVENTS] == LINES


def test_json_mode_keeps_stdout_for_the_document(capsys: pytest.CaptureFixture[str]) -> None:
    out = Terminal()
    progress = progress_for(out, json_mode=True)
    progress.event(EVENTS[3])
    progress.close()
    assert out.getvalue() == ""
    assert capsys.readouterr().err == "run r1: subtask s2 testing (iteration 2)\n"


def test_a_terminal_gets_a_live_view_of_step_wave_and_subtasks() -> None:
    out = Terminal()
    progress = progress_for(out, json_mode=False)
    assert isinstance(progress, LiveProgress)
    for event in EVENTS:
        progress.event(event)
    progress.event(Event("subtask", "r1", "SUBTASK_DONE", "s1", "done", ""))
    progress.close()
    screen = out.getvalue()
    assert "\x1b[?25l" in screen  # a live display (cursor hidden while it runs)
    last = screen.rsplit("orange run r1", 1)[1]  # the final frame
    for expected in (
        "PLANNING started",
        "wave 1/2 waiting",
        "1 of 2 worktrees free",
        "subtask s2",
        "testing",
        "iteration 2",
        "0s",
    ):
        assert expected in last
    assert "done" in last and "implementing" not in last
    assert "run r1: SUBTASK_REVIEWING retrying (the review was not JSON)" in last


def test_the_live_view_times_each_state_from_when_it_was_entered() -> None:
    now = [1000.0]
    out = Terminal()
    progress = LiveProgress(out, clock=lambda: now[0])
    progress.event(Event("subtask", "r1", "SUBTASK_TESTING", "s1", "testing", "iteration 1"))
    progress.event(Event("subtask", "r1", "SUBTASK_TESTING", "s2", "testing", ""))
    now[0] += 30
    progress.event(Event("subtask", "r1", "SUBTASK_TESTING", "s1", "testing", "still"))
    progress.event(Event("subtask", "r1", "SUBTASK_REVIEWING", "s2", "reviewing", ""))
    now[0] += 35
    progress.close()
    last = out.getvalue().rsplit("orange run r1", 1)[1]
    rows = {row.split()[2]: row for row in last.splitlines() if "subtask" in row}
    assert "1m05s" in rows["s1"]  # the same state since the start
    assert "35s" in rows["s2"] and "reviewing" in rows["s2"]  # a new state, a new clock


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.4, "0s"), (59.9, "59s"), (65, "1m05s"), (3725, "1h02m")]
)
def test_elapsed_time_reads_short(seconds: float, text: str) -> None:
    assert elapsed(seconds) == text
