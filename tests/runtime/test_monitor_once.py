"""tmux's hooks run ``orange monitor --once`` for every agent pane that dies: killing
the agents' server starts many at once, and their passes must not pile up."""

from __future__ import annotations

import itertools
import re
import subprocess
from pathlib import Path

from orange.home import orange_home
from tests.conftest import Cli, orange_bin


def test_many_once_passes_at_the_same_moment_run_one_at_a_time(
    cli: Cli, repo: Path, tmp_path: Path
) -> None:
    cli.ok("project", "add", cwd=repo)
    many = [
        subprocess.Popen(
            [orange_bin(), "monitor", "--once"],
            cwd=repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    for process in many:
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    log = (orange_home() / "logs" / "monitor.log").read_text()
    marks = re.findall(r"\[(\d+)\] pass \(--once\) (started|ended)", log)
    assert marks, log
    # Each pass ends before the next one starts, whichever process runs it.
    for (pid, what), (next_pid, next_what) in itertools.pairwise(marks):
        assert (what, next_what) in (("started", "ended"), ("ended", "started")), log
        if what == "started":
            assert next_pid == pid
    assert marks[-1][1] == "ended"
