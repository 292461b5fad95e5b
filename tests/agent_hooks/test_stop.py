"""The agents' stop check under its old name: settings written by an older `orange
install` (``python -P -m orange.ops.claude_stop``) keep reporting, and `orange doctor`
asks for the `orange install` that rewrites them."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from orange.ops.doctor import check
from orange.ops.install import install
from tests.ops.test_install import recording_orange

# The shim `orange install` wrote before the check moved to `orange.agent_hooks.stop`.
OLD_SHIM = """#!/bin/sh
# Orange stop hook for Claude Code (seed 003); installed by `orange install`.
# Reports the outcome in .orange-task: see orange/ops/claude_stop.py.
exec {argv} || exit 0
"""


def test_an_older_installations_stop_hook_still_reports_and_doctor_asks_to_rewrite_it(
    hermetic: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "bin"
    folder.mkdir()
    (folder / "claude").write_text("#!/bin/sh\nexit 0\n")
    (folder / "claude").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    calls, fake_orange = recording_orange(tmp_path, monkeypatch)
    install("claude")
    hook = hermetic / ".claude" / "hooks" / "orange-stop.sh"
    old = [sys.executable, "-P", "-m", "orange.ops.claude_stop", str(fake_orange)]
    hook.write_text(OLD_SHIM.format(argv=shlex.join(old)))
    project = tmp_path / "worktree"
    project.mkdir()
    (project / ".orange-task").write_text('{"id": "abc", "outcome": "passed"}')
    env = {**os.environ, "CLAUDE_PROJECT_DIR": str(project)}

    subprocess.run([str(hook)], cwd=tmp_path, env=env, check=True)
    assert json.loads(calls.read_text()) == ["task", "complete", "abc"]

    def stale() -> list[tuple[str, str, str]]:
        return [
            (f.level, f.message, f.fix) for f in check(hermetic, tmp_path) if str(hook) in f.message
        ]

    assert stale() == [
        (
            "warn",
            f"{hook} was written by an older or another Orange installation",
            "orange install --harness claude",
        )
    ]
    assert {p.name: o for p, o in install("claude")}["orange-stop.sh"] == "written"
    assert stale() == []
    assert "orange.agent_hooks.stop" in hook.read_text()
