"""Whether a command runs inside the tmux session it ends, known by its ancestry where
tmux's variables are gone (the /proc reading is what the e2e test of a handover without
them runs on Linux); here the `ps` reading a host without /proc uses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from orange.runtime import ending


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
