"""The suite's own guard: a process a test leaves running fails that test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT
from tests.processes import processes_under, wait_gone

LEAKY_TEST = """\
import os
import subprocess


def test_leaks_a_process():
    subprocess.Popen(["sleep", "600"], env={"ORANGE_HOME": os.environ["ORANGE_HOME"]})


def test_leaves_nothing():
    subprocess.run(["true"], env={"ORANGE_HOME": os.environ["ORANGE_HOME"]}, check=True)
"""


def test_a_process_left_running_with_a_tests_orange_home_fails_that_test(tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    (inner / "test_leaky.py").write_text(LEAKY_TEST)
    (inner / "pytest.ini").write_text("[pytest]\n")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.conftest",
            "-p",
            "no:cacheprovider",
            "--basetemp",
            str(inner / "tmp"),
            "-rA",
            "test_leaky.py",
        ],
        cwd=inner,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT), "ORANGE_TEST_LEFTOVER_GRACE": "1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    out = result.stdout
    assert result.returncode == 1, out + result.stderr
    assert "2 passed, 1 error" in out  # the leak is an error at teardown ...
    assert "ERROR test_leaky.py::test_leaks_a_process" in out
    assert "processes outlived the test (killed now)" in out and "sleep 600" in out
    assert "PASSED test_leaky.py::test_leaves_nothing" in out  # ... and of no other
    assert processes_under(inner) == []  # and it was killed


# A process that starts the next one as it exits, hop after hop, for about 3 s: a
# killed tmux server starts its pane-died hooks' shells as it goes.  Each hop's parent
# may exit between a scan's listing of /proc and its look at that process, while its
# child was born after the listing: that scan sees nothing at all.
HANDOVER = """\
import os, sys, time
for hop in range(int(sys.argv[1])):
    time.sleep(0.1)
    if os.fork():
        os._exit(0)
open(sys.argv[2], "w").close()
"""


def test_a_process_handing_over_to_its_child_is_waited_for(tmp_path: Path) -> None:
    ended = tmp_path / "ended"
    env = {**os.environ, "ORANGE_HOME": str(tmp_path / "home")}
    subprocess.run([sys.executable, "-c", HANDOVER, "30", str(ended)], env=env, check=True)
    assert wait_gone(tmp_path, 30) == []
    assert ended.exists()  # the last hop ended: no scan between two hops saw nothing
