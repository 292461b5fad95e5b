"""Orange's own commit-graph of the tasks history, with changed-path filters, kept
where only Orange's walks read it.

``task log`` asks git for one task's commits with a path-limited walk over the whole
history (`orange.store.history`).  Without help, git compares the trees of every
commit along the path: at 100,000 commits some 3 s of CPU.  With a commit-graph
holding changed-path (Bloom) filters, git skips every commit whose filter says the
path did not change: 0.3 s (bench/README.md, "task log without its cache").

Where the graph lives is the decision.  In the repository's own objects folder
(``git commit-graph write --reachable --changed-paths``) it would change the user's
git: every later graph write there (their ``git gc``, ``git maintenance``, a
``fetch.writeCommitGraph``) keeps computing filters because the graph has them
(git's rule: "we have changed-paths already, keep them"), for every commit of their
own branches too, on their time; and a first write covers every ref of the
repository, not just the tasks.  So Orange writes its graph into an objects folder of
its own, ``<git-common-dir>/orange/graph``, holding nothing but
``info/commit-graphs``, and runs its own walks with that folder as git's object
directory and the repository's objects as an alternate (`walk_env`).  git reads a
commit-graph from the first object folder that has one, so Orange's walks see
Orange's graph, and the user's git, which never looks in that folder, sees nothing of
it: their gc, maintenance and graph writes cost what they cost without Orange.

The graph covers the commits the tasks ref reaches (``--stdin-commits`` with its
tip), written as a split graph: each update adds a layer of the commits since the
last one and computes only their filters, and git merges small layers as it goes.
It is written in the background (`start_update`, one at a time), when at least
`WORTH` commits reachable from the tip are not in it: after the store's own periodic
pack (`orange.store.packing`), after ``orange project add`` brought a clone's history
in, and after a ``task log`` that walked without it.  A short history never gets one
(git's walk of a few hundred commits takes milliseconds), and no command waits for it.

The graph is a cache.  The commits after its last write are compared by their trees
as before; a graph git cannot read is ignored by git with a warning; a walk that
fails with the graph is run again without it, and the graph is removed, to be
written afresh by the next update (`orange.store.history._candidates`).
"""

from __future__ import annotations

import os
import re
from itertools import islice
from pathlib import Path

import pygit2

from orange.store.gitproc import git_env, start_detached

FOLDER = "graph"  # under <git-common-dir>/orange: an objects folder with only info/
TIP = "tip"  # the tip the last complete write covered (written after git succeeded)
LOCK = "graph.lock"  # held by the writing git until it exits
WORTH = 1_000  # commits outside the graph before an update starts
# git's cache of delta bases while it reads the trees to compute filters: as for the
# history's walk, a path-by-path reading reuses few of them.
_DELTA_CACHE = "16m"


def folder(orange_dir: Path) -> Path:
    return orange_dir / FOLDER


def walk_env(orange_dir: Path) -> dict[str, str] | None:
    """The environment of a git walk that reads Orange's graph: git's object folder is
    the graph's, the repository's objects its alternate.  None when there is no graph,
    or the objects' path cannot be written in git's list of alternates."""
    graph = folder(orange_dir)
    objects = orange_dir.parent / "objects"
    if not (graph / "info").is_dir() or not _listable(objects):
        return None
    return {
        **git_env(),
        "GIT_OBJECT_DIRECTORY": str(graph),
        "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(objects),
    }


def _listable(path: Path) -> bool:
    """Whether ``path`` can stand in ``GIT_ALTERNATE_OBJECT_DIRECTORIES`` unquoted."""
    text = str(path)
    return os.path.isabs(text) and ":" not in text and not text.startswith('"')


def command(git_dir: str, orange_dir: Path) -> list[str]:
    """The graph's update: the commits the tip given on stdin reaches, not yet in it,
    with their changed-path filters, as a new layer of the split graph.  Without a
    chain of Orange's own, a graph written afresh (``--split=replace``): git would
    otherwise take the user's split graph (in the alternate) as the base of Orange's
    layer, and the user's next graph write deletes the files Orange's chain names."""
    split = "--split" if _own_chain(orange_dir) else "--split=replace"
    return [
        "git", f"--git-dir={git_dir}", "--no-replace-objects",
        "-c", f"core.deltaBaseCacheLimit={_DELTA_CACHE}",
        "commit-graph", "write", "--stdin-commits", "--changed-paths", split,
        "--no-progress",
    ]  # fmt: skip


def _own_chain(orange_dir: Path) -> bool:
    """Whether Orange's folder holds a chain whose every layer is in that folder."""
    layers = folder(orange_dir) / "info" / "commit-graphs"
    try:
        names = (layers / "commit-graph-chain").read_text().split()
    except OSError:
        return False
    return bool(names) and all((layers / f"graph-{name}.graph").is_file() for name in names)


def due(repo: pygit2.Repository, orange_dir: Path, tip: str) -> bool:
    """Whether at least `WORTH` commits ``tip`` reaches are not in the graph (counted
    from the tip the last write covered: a walk of at most `WORTH` commits)."""
    covered = covered_tip(orange_dir)
    if covered == tip:
        return False
    try:
        walker = repo.walk(tip, pygit2.enums.SortMode.NONE)
        if covered is not None and covered in repo:
            walker.hide(covered)
        return sum(1 for _ in islice(walker, WORTH)) >= WORTH
    except (KeyError, ValueError, pygit2.GitError):
        return False


def covered_tip(orange_dir: Path) -> str | None:
    try:
        text = (folder(orange_dir) / TIP).read_text().strip()
    except OSError:
        return None
    return text if re.fullmatch("[0-9a-f]{40}|[0-9a-f]{64}", text) else None


def start_update(repo: pygit2.Repository, orange_dir: Path, tip: str) -> bool:
    """When `due`: start the graph's update in the background, unless one runs;
    whether it started.  Never raises: the graph is a courtesy."""
    try:
        if not re.fullmatch("[0-9a-f]{40}|[0-9a-f]{64}", tip) or not due(repo, orange_dir, tip):
            return False
        env = _write_env(orange_dir)
        if env is None:
            return False
        marker = str(folder(orange_dir) / TIP)
        # The tip goes to git's stdin; the marker is written only when git succeeded.
        script = (
            'tip=$1; marker=$2; shift 2; printf "%s\\n" "$tip" | "$@"'
            ' && printf "%s\\n" "$tip" >"$marker.tmp" && mv "$marker.tmp" "$marker"'
        )
        return start_detached(
            orange_dir / LOCK, script, [tip, marker, *command(repo.path, orange_dir)], env=env
        )
    except OSError:
        return False


def update(repo: pygit2.Repository, orange_dir: Path, tip: str) -> bool:
    """The update of `start_update`, in the foreground and whether or not it is due
    (the bench's and the tests' way to have a graph now); whether git succeeded."""
    import subprocess  # (here: a summary update's start-up loads no subprocess)

    env = _write_env(orange_dir)
    if env is None:
        return False
    done = subprocess.run(
        command(repo.path, orange_dir),
        input=f"{tip}\n".encode(),
        env=env,
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        return False
    (folder(orange_dir) / TIP).write_text(f"{tip}\n")
    return True


def remove(orange_dir: Path) -> None:
    """Drop the graph (one git could not walk with): the next update writes it anew."""
    import shutil

    shutil.rmtree(folder(orange_dir), ignore_errors=True)


def _write_env(orange_dir: Path) -> dict[str, str] | None:
    (folder(orange_dir) / "info").mkdir(parents=True, exist_ok=True)
    return walk_env(orange_dir)
