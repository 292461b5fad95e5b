"""The evidence that an agent a harness's hook marked as waiting has moved on
(`orange.runtime.waiting.answered`): a new entry from the person's side in its
transcript, stamped after the mark; never a late entry, never a read that blocks."""

from __future__ import annotations

import json
import os
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from orange.runtime import waiting


def _entry(kind: str, at: float) -> str:
    stamp = datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds")
    return json.dumps({"type": kind, "timestamp": stamp.replace("+00:00", "Z")}) + "\n"


def _mark(transcript: Path, since: float) -> waiting.Look:
    return waiting.Look(
        "abc12345", "worker", "%1", 0, "question to you", "waits", since, "planning",
        str(transcript), transcript.stat().st_size,
    )  # fmt: skip


def test_only_a_reply_stamped_after_the_mark_is_an_answer(tmp_path: Path) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(_entry("user", 100.0) + _entry("assistant", 101.0))
    mark = _mark(transcript, since=200.0)
    with transcript.open("a") as handle:  # written late: from before the mark
        handle.write(_entry("user", 150.0) + _entry("assistant", 250.0) + '{"type": "us')
    assert not waiting.answered(mark)
    with transcript.open("a") as handle:
        handle.write('er"}\n' + _entry("user", 260.0))
    assert waiting.answered(mark)


def test_a_transcript_swapped_for_a_fifo_is_no_answer_and_blocks_nothing(
    tmp_path: Path,
) -> None:
    transcript = tmp_path / "session.jsonl"
    transcript.write_text(_entry("assistant", time.time()))
    mark = _mark(transcript, since=time.time())
    transcript.unlink()
    os.mkfifo(transcript)  # an agent's shell can do this to its own session file
    found: list[bool] = []
    reader = threading.Thread(target=lambda: found.append(waiting.answered(mark)), daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # the monitor would hang here: free the reader, then fail
        with open(transcript, "wb"):
            pass
        raise AssertionError("reading the transcript blocked on a FIFO")
    assert found == [False]
