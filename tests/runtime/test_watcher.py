"""Starting the background monitor is said once, on stderr."""

from __future__ import annotations

from pathlib import Path

import pytest

from orange.runtime import watcher
from tests.processes import wait_gone


def test_the_first_start_is_announced_once(
    hermetic: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ORANGE_MONITOR", "on")
    watcher.ensure_running()  # no project: the monitor looks once and exits
    first = capsys.readouterr().err
    assert first == watcher.ANNOUNCEMENT + "\n"
    assert wait_gone(hermetic, timeout=20) == []
    watcher.ensure_running()
    assert capsys.readouterr().err == ""
    assert wait_gone(hermetic, timeout=20) == []
