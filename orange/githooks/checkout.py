"""A tasks checkout: a linked worktree on a detached HEAD that follows
``refs/orange/tasks``.

People edit TASK.md files there with their editor and commit (or ``git merge``) with
plain git.  The ``pre-commit`` hook checks each status change is a legal step of the
task's workflow, ``pre-merge-commit`` that a merge is exactly the sync's; the
``post-commit`` and ``post-merge`` hooks carry the new commit to the ref when that is
a fast forward.  HEAD is never the ref itself, so ``git fetch`` into the ref is not
refused while a checkout exists.

Orange itself writes the ref without touching that worktree, so its index and files
fall behind.  The tip the checkout was last brought to is recorded in the worktree's
private git dir (``orange-checkout-tip``, which also marks the worktree as a tasks
checkout): a commit made while the ref has moved since is refused (it would silently
revert Orange's writes), and ``refresh`` moves HEAD to the tip, keeping the person's
uncommitted edits (three-way merged; a conflict keeps both versions between markers).
A checkout made before HEAD was detached (HEAD *is* the ref) is detached by ``refresh``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from orange.errors import InvalidInput, NotFound
from orange.githooks import mergedriver
from orange.githooks.shims import install_hooks, orange_executable
from orange.runtime.git import git, merge_file
from orange.store import layout
from orange.store.repo import GitRepo, open_repo
from orange.store.treediff import changed_blobs

if TYPE_CHECKING:
    import pygit2

TIP_FILE = "orange-checkout-tip"


@dataclass
class Refreshed:
    old: str | None
    new: str
    kept: list[str] = field(default_factory=list)  # paths whose local edits were re-applied
    conflicts: list[str] = field(default_factory=list)  # paths left with conflict markers


def is_tasks_checkout(repo: GitRepo) -> bool:
    if repo.is_bare:
        return False
    return _head_is_the_ref(repo) or (repo.git_dir / TIP_FILE).is_file()


def _head_is_the_ref(repo: GitRepo) -> bool:
    """A checkout made before HEAD was detached: HEAD is the ref itself."""
    head = repo.pygit.references.get("HEAD")
    return head is not None and head.target == layout.TASKS_REF


def head_commit(repo: GitRepo) -> str | None:
    if repo.pygit.head_is_unborn:
        return None
    return str(repo.pygit.head.target)


def tasks_tip(repo: GitRepo) -> str | None:
    ref = repo.pygit.references.get(layout.TASKS_REF)
    return None if ref is None else str(ref.target)


def recorded_tip(repo: GitRepo) -> str | None:
    try:
        value = (repo.git_dir / TIP_FILE).read_text().strip()
    except OSError:
        return None
    return value or None


def record_tip(repo: GitRepo, tip: str) -> None:
    path = repo.git_dir / TIP_FILE
    tmp = path.with_name(f"{TIP_FILE}.tmp")
    tmp.write_text(f"{tip}\n")
    os.replace(tmp, path)


def checkout(repo: GitRepo, directory: Path) -> Path:
    """Create a tasks checkout of ``repo`` at ``directory``; returns its path."""

    tip = tasks_tip(repo)
    if tip is None:
        raise NotFound(
            f"{repo.main_workdir or repo.common_dir} has no tasks yet",
            hint="create one with `orange task create`",
        )
    target = directory.resolve()
    if target.exists() and any(target.iterdir()):
        raise InvalidInput(f"{target} already exists and is not empty")
    top = repo.main_workdir or repo.workdir or repo.common_dir
    install_hooks(top)
    mergedriver.install(repo.common_dir, orange_executable())  # plain `git merge` = sync's
    git("worktree", "add", "--no-checkout", "--detach", str(target), tip, cwd=top)
    git("reset", "-q", "--hard", cwd=target)
    record_tip(open_repo(target), tip)
    return target


def refresh(directory: Path) -> Refreshed:
    """Bring a tasks checkout to the tip of the ref, keeping uncommitted edits."""
    repo = open_repo(directory)
    if not is_tasks_checkout(repo):
        raise InvalidInput(
            f"{directory.resolve()} is not a tasks checkout",
            hint="make one with `orange tasks checkout DIR`",
        )
    top = repo.workdir
    assert top is not None
    new = tasks_tip(repo)
    if new is None:  # pragma: no cover - HEAD is the ref, which someone deleted
        raise NotFound(f"{layout.TASKS_REF} does not exist")
    old = recorded_tip(repo)
    if _head_is_the_ref(repo):  # an older checkout: detach it where it is
        git("update-ref", "--no-deref", "HEAD", new, cwd=top)
    _refuse_unpublished(repo, old, new)
    if old == new:
        return Refreshed(old=old, new=new)
    # The tree the files were checked out from: the recorded tip, else (a checkout not
    # made by Orange) what the index holds.
    base = _tree_of(repo, old) if old else git("write-tree", cwd=top)
    mine = _worktree_tree(repo, top)
    result = Refreshed(old=old, new=new)
    git("reset", "-q", "--hard", new, cwd=top)
    if mine != base:
        _reapply(repo, top, base, mine, _tree_of(repo, new), result)
    record_tip(repo, new)
    return result


def _refuse_unpublished(repo: GitRepo, old: str | None, new: str) -> None:
    """A refresh never drops a commit made in the checkout that is not on the ref (its
    post-commit hook did not run, or the ref had moved)."""
    head = head_commit(repo)
    if head is None or head in (old, new) or repo.pygit.descendant_of(new, head):
        return
    where = repo.workdir
    if repo.pygit.descendant_of(head, new):
        raise InvalidInput(
            f"{where} has commits not on {layout.TASKS_REF} (HEAD {head[:10]})",
            hint=f"carry them there (Orange replays them): git update-ref {layout.TASKS_REF} HEAD",
        )
    raise InvalidInput(
        f"{where} has commits not on {layout.TASKS_REF}, which moved since (HEAD {head[:10]})",
        hint=f"merge it in with Orange's merge: git merge {layout.TASKS_REF}",
    )


def _reapply(
    repo: GitRepo, top: Path, base: str, mine: str, theirs: str, result: Refreshed
) -> None:
    """Re-apply the edits base → mine onto the files of ``theirs`` (the new tip)."""

    pygit = repo.pygit
    before, after = pygit[base].peel(pygit2.Tree), pygit[mine].peel(pygit2.Tree)
    for path in changed_blobs(pygit, before, after):
        old_data = _blob(pygit, base, path)
        my_data = _blob(pygit, mine, path)
        tip_data = _blob(pygit, theirs, path)
        if my_data in (old_data, tip_data):
            continue
        result.kept.append(path)
        if tip_data == old_data:
            _write(top, path, my_data)
        elif my_data is None or old_data is None or tip_data is None:
            # deleted on one side, changed on the other: keep the changed version
            _write(top, path, my_data if my_data is not None else tip_data)
            result.conflicts.append(path)
        else:
            text, conflict = merge_file(
                my_data.decode("utf-8", "surrogateescape"),
                old_data.decode("utf-8", "surrogateescape"),
                tip_data.decode("utf-8", "surrogateescape"),
                ("your edit", "checked out", layout.TASKS_REF),
            )
            _write(top, path, text.encode("utf-8", "surrogateescape"))
            if conflict:
                result.conflicts.append(path)
    result.kept.sort()
    result.conflicts.sort()


def _worktree_tree(repo: GitRepo, top: Path) -> str:
    """The working tree as a tree object (tracked and new files), via a scratch index
    (a copy of the real one, so unchanged files are not hashed again)."""
    with tempfile.TemporaryDirectory(prefix="orange-refresh-") as tmp:
        scratch = Path(tmp) / "index"
        env = {"GIT_INDEX_FILE": str(scratch)}
        index = repo.git_dir / "index"
        if index.is_file():
            shutil.copyfile(index, scratch)
        else:
            git("read-tree", "HEAD", cwd=top, env=env)
        git("add", "-A", ".", cwd=top, env=env)
        return git("write-tree", cwd=top, env=env)


def _tree_of(repo: GitRepo, commit: str) -> str:

    return str(repo.pygit[commit].peel(pygit2.Tree).id)


def _blob(pygit: pygit2.Repository, tree_id: str, path: str) -> bytes | None:

    tree = pygit[tree_id].peel(pygit2.Tree)
    try:
        return bytes(tree[path].read_raw())
    except KeyError:
        return None


def _write(top: Path, path: str, data: bytes | None) -> None:
    target = top / path
    if data is None:
        target.unlink(missing_ok=True)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)
