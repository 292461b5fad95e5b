"""Ending an agent's session or window from inside it: whether a command runs there,
known by its ancestry where tmux's variables are gone (the /proc reading is what the e2e
test of a handover without them runs on Linux; here the `ps` reading a host without
/proc uses), and an agent's own window gone once its tool ended it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from orange.runtime import ending
from orange.runtime.tmux import Tmux
from tests.helpers import retry_until


def test_ancestors_from_ps_reach_from_the_parent_up(monkeypatch: pytest.MonkeyPatch) -> None:
    real_isdir = os.path.isdir
    monkeypatch.setattr(os.path, "isdir", lambda p: p != "/proc/self" and real_isdir(p))
    # A child (reading /proc on Linux) whose ancestors are this process and its own.
    code = (
        "import json; from orange.runtime.ending import _ancestors as a; print(json.dumps([*a()]))"
    )
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert child.returncode == 0, child.stderr
    mine = ending._ancestors()
    assert os.getppid() in mine
    assert set(json.loads(child.stdout)) == {os.getpid(), *mine}


# An agent (the pane's process) whose tool runs Orange, which ends the agent's own
# window: a reviewer's verdict move.
AGENT = "import subprocess, sys; subprocess.run([sys.executable, '-c', sys.argv[1], *sys.argv[2:]])"
ENDS_ITS_WINDOW = """\
import sys
from orange.runtime.ending import end
from orange.runtime.tmux import Tmux
later = []
end(Tmux(), later.append, sys.argv[1], sys.argv[2])
for effect in later:
    effect()
"""


def test_an_agent_ending_its_own_window_leaves_no_window(tmux: Tmux, tmp_path: Path) -> None:
    # Killing the agent hangs up its terminal: the hang-up reaches the tmux client the
    # ending process starts next unless the agent is gone first (a client hung up
    # mid-call listed no panes, and the window outlived its kill).  Several windows at
    # once, as the race lost about one time in four.
    tmux.start("s", "keep", [sys.executable, "-c", "import time; time.sleep(60)"], tmp_path)
    windows = [f"w{n}" for n in range(10)]
    for window in windows:
        argv = [sys.executable, "-c", AGENT, ENDS_ITS_WINDOW, "s", window]
        tmux.start("s", window, argv, tmp_path)
    retry_until(
        lambda: not [p.window for p in tmux.panes() if p.window.startswith("w")],
        30,
        what="every agent's window gone",
    )
