"""The merge driver of TASK.md in a tasks checkout: a plain ``git merge`` there makes
exactly the sync's merge (DESIGN §7), never conflict markers in a frontmatter.

``orange tasks checkout`` sets ``merge.orange.driver`` (this command) and gives
``tasks/*/*/TASK.md`` the attribute ``merge=orange`` (in the repository's
``info/attributes``).  git calls the driver with the three versions and the path; the
driver reads the commits being merged (``HEAD`` and git's ``GITHEAD_<id>``) to decide what
the merge function needs (the last commit touching the task on each side), writes
the merged task over ours and never reports a conflict: a conflict is resolved by the
sync's rules and flagged with ``attention``.
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import pygit2

from orange.engine.merging import rules_for
from orange.runtime.git import git
from orange.store.repo import open_repo
from orange.store.syncmerge import last_touches, merge_base
from orange.store.taskmerge import merge_task
from orange.store.tree import read_blob

DRIVER = "merge.orange.driver"
ATTRIBUTE = "tasks/*/*/TASK.md merge=orange"


def driver_command(executable: str) -> str:
    return f"{shlex.quote(executable)} hook-impl merge-driver %O %A %B %P"


def merge_driver(cwd: Path, args: Sequence[str]) -> int:
    """``merge-driver BASE OURS THEIRS PATH``: the sync merge of one TASK.md into OURS."""
    if len(args) != 4:
        print("orange: the merge driver takes BASE OURS THEIRS PATH", file=sys.stderr)
        return 2
    _base_file, ours_file, _theirs_file, path = args
    repo = open_repo(cwd).pygit
    theirs_id = merged_head(cwd)
    if not theirs_id:
        print("orange: the TASK.md merge driver runs only inside `git merge`", file=sys.stderr)
        return 1
    ours = repo.head.peel(pygit2.Commit)
    theirs = repo[theirs_id].peel(pygit2.Commit)
    base = merge_base(repo, ours.id, theirs.id)
    sides = (
        last_touches(repo, ours, base, [path])[path],
        last_touches(repo, theirs, base, [path])[path],
    )
    merged = merge_task(
        _read(base.tree if base is not None else None, path),
        _read(ours.tree, path),
        _read(theirs.tree, path),
        sides,
        rules_for((ours.tree, theirs.tree)),
        path,
    )
    if merged.data is not None:
        Path(ours_file).write_bytes(merged.data)
    return 0


def merged_head(cwd: Path) -> str:
    """The commit being merged in: git names it in ``GITHEAD_<id>`` while it merges
    (``MERGE_HEAD`` is written only after); one, or none."""
    heads = [key.removeprefix("GITHEAD_") for key in os.environ if key.startswith("GITHEAD_")]
    if len(heads) == 1:
        return heads[0]
    return git("rev-parse", "-q", "--verify", "MERGE_HEAD", cwd=cwd, check=False).strip()


def install(common_dir: Path, executable: str) -> None:
    """Configure the driver and give task files its attribute (once)."""
    git(f"--git-dir={common_dir}", "config", DRIVER, driver_command(executable), cwd=common_dir)
    git(
        f"--git-dir={common_dir}",
        "config",
        "merge.orange.name",
        "Orange's task merge",
        cwd=common_dir,
    )
    attributes = common_dir / "info" / "attributes"
    attributes.parent.mkdir(parents=True, exist_ok=True)
    existing = attributes.read_text() if attributes.exists() else ""
    if ATTRIBUTE not in existing.splitlines():
        with attributes.open("a") as out:
            out.write(("" if not existing or existing.endswith("\n") else "\n") + ATTRIBUTE + "\n")


def _read(tree: pygit2.Tree | None, path: str) -> bytes | None:
    blob = read_blob(tree, path)
    return None if blob is None else bytes(blob.read_raw())
