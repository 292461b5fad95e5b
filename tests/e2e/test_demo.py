"""`make demo` (`orange demo --keep`): it ends with nothing running."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import run_orange


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
