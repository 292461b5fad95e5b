"""The git helper run from inside a git hook (DESIGN §1, STYLE 4): the ``GIT_*``
variables the surrounding git sets (its index, its directory) never steer the helper's
git in another repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import git, make_repo

PROBE = """\
import sys
from pathlib import Path
from orange.runtime.git import git
other = Path(sys.argv[1])
Path(sys.argv[2]).write_text(git("status", "--porcelain", cwd=other))
"""


def test_the_helper_inside_a_pre_commit_hook_sees_the_repository_it_is_given(
    tmp_path: Path,
) -> None:
    outer, other = make_repo(tmp_path / "outer"), make_repo(tmp_path / "other")
    (other / "staged.txt").write_text("mine\n")
    git(other, "add", "staged.txt")
    expected = git(other, "status", "--porcelain")
    out = tmp_path / "seen.txt"
    (tmp_path / "probe.py").write_text(PROBE)
    hook = outer / ".git" / "hooks" / "pre-commit"
    hook.write_text(f"#!/bin/sh\nexec {sys.executable} {tmp_path / 'probe.py'} {other} {out}\n")
    hook.chmod(0o755)
    (outer / "outer.txt").write_text("outer\n")
    git(outer, "add", "outer.txt")
    # A commit naming its paths: git hands the hook a temporary index by absolute path.
    done = subprocess.run(
        ["git", "commit", "-q", "-m", "outer", "outer.txt"],
        cwd=outer, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_text() == expected.strip("\n")
