"""`make demo` (`orange demo --keep`): it ends with nothing running; `orange demo
--hosts 2` runs a task on each of two hosts over real SSH and merges both."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from orange.demo_hosts import run_hosts_demo
from tests.conftest import run_orange
from tests.ssh import server_command


def test_a_kept_demo_leaves_files_and_no_process(tmp_path: Path) -> None:
    # The demo's root under this test's temp dir: the suite's leftover check (conftest)
    # fails the test if its tmux server or monitor outlives it.
    result = run_orange(
        "demo", "--keep", cwd=tmp_path, env={"TMPDIR": str(tmp_path), "COLUMNS": "500"}
    )
    assert result.code == 0, result.err
    kept = re.search(r"^kept: (\S+)", result.out, re.MULTILINE)
    assert kept is not None, result.out
    root = Path(kept.group(1))
    assert root.parent == tmp_path and (root / "coffee" / ".git").is_dir()
    assert "To look at the demo's tasks, run `orange` there" in " ".join(result.out.split())


def test_the_two_host_demo_merges_the_work_of_both_hosts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Its files under this test's temp dir: the leftover check sees what outlives it.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run_hosts_demo(server_command())
    out = capsys.readouterr().out
    assert "task " in out and "started on host b [" in out
    assert "host b, told to sync, ended fix-login (no session left there)" in out
    log = out.split("the merged work of both hosts")[1]
    subjects = re.findall(r"^[0-9a-f]{7,} (.*)$", log, re.MULTILINE)
    assert subjects == ["Merge branch 'dark-mode'", "Add feature", "Add feature", "initial commit"]
    assert list(tmp_path.glob("orange-demo-hosts-*")) == []  # removed at the end
