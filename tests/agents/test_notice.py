"""A notice Orange types into a real codex worker is submitted even when the first
Enter does not submit it (issue 25: under load, the worker's "Review round 1 failed"
once sat in codex's input box and the task waited with nobody told).

codex keeps the text in its input box when an Enter does not reach it as a submit
(codex reads an Enter that comes within ~120 ms of a burst of typed text as a newline:
seen with codex-cli 0.171 in tmux).  Here the worker's codex runs behind
`enter_loser.py`, a terminal between tmux and codex that drops the first Enter typed
after the notice, so Orange's own tmux adapter, as shipped, reads back codex's own
screen with the notice still in its box: it must see that, press Enter again, and the
model is asked.  Red with a single Enter (the model is never asked).
"""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path

import pytest

from orange.errors import HookFailed
from orange.runtime.tmux import Tmux
from tests.agents.conftest import screens, settle
from tests.agents.modelserver import ModelServer
from tests.e2e.conftest import World, wait_for

WAIT = 240.0  # a deadline, not a pause: a real program on a loaded machine
NOTICE = (
    "Review round 1 failed. Read ## Review in TASK.md and fix every issue it raises, "
    "then update ## Handoff and run: orange task update --status agent-review"
)
ENTER_LOSER = Path(__file__).with_name("enter_loser.py")


def test_a_notice_left_in_codex_input_box_is_submitted(
    agents: World, model: ModelServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    codex, record = shutil.which("codex"), tmp_path / "dropped"
    assert codex is not None
    lossy = tmp_path / "lossy"  # a `codex` first on PATH: the real one behind the loser
    lossy.mkdir()
    launcher = lossy / "codex"
    command = [sys.executable, str(ENTER_LOSER), NOTICE, str(record), codex]
    launcher.write_text(f'#!/bin/sh\nexec {shlex.join(command)} "$@"\n')
    launcher.chmod(0o755)
    monkeypatch.setenv("PATH", f"{lossy}{os.pathsep}{os.environ['PATH']}")
    settle(agents.repo)
    model.script.questions.add("asks")  # the worker answers its prompt and waits
    task_id = agents.create("asks", "A task with a question", "--harness", "codex")
    session = agents.task(task_id).str_field("tmux_session")
    wait_for(lambda: "Done." in agents.tmux("capture-pane", "-p", "-t", f"{session}:worker"),
             WAIT, "the worker to end its first turn")  # fmt: skip
    try:
        Tmux().send_text(session, "worker", NOTICE)
        wait_for(
            lambda: model.asked("Review round 1 failed"), WAIT, "the notice to reach the model"
        )
    except (AssertionError, HookFailed) as error:
        raise AssertionError(f"{error}\n{screens(agents)}") from None
    assert record.read_text() == "dropped an Enter\n"  # the first Enter was lost
