"""One task's history, from the commits of the tasks ref.

The commits are the history (DESIGN §2), and every commit that changed a task's file
belongs to that task's history, whoever made it: Orange (its ``Orange-*`` trailers say
what happened) or a person with plain git in a tasks checkout (actor ``git``).  So a
task's commits are those whose task folder (``tasks/<shard>/<id>``) differs from their
first parent's, taken from the trees, never from the messages.

Finding them is git's own path-limited walk over the whole history, ``git rev-list
--full-history -- tasks/<shard>/<id>`` (`_candidates`): git compares only the trees
along that one path, skips a commit whose changed-path filter in Orange's own
commit-graph says the path did not change (`orange.store.commitgraph`: why that graph
is Orange's and not the repository's), and holds no more than its delta cache (bounded
here), never the objects of the whole history (at 100,000 commits 3.8 s of CPU on a
loaded machine without the graph, 0.3 s with it, where a walk in Python opening three
trees a commit took 37: bench/README.md).  git
proposes, Orange decides merges: git lists every commit differing at the path from any
parent, and a merge is kept only when its folder's entry differs from its first
parent's as libgit2 reads it (`_decided`, the store's own reading).  On a tree git's fsck calls
corrupt (names out of order or twice) the two readings can differ; the history then
follows git's, as ``git log`` shows it.
Where git cannot walk (a damaged object on the path, no git), `walked`, the same
decision over every commit, answers instead: slower, and the reference of the tests.

The answer is kept per task in a small SQLite cache in the common git dir, keyed by the
tip it was found for.  The commits added since (at most `EXTEND`) are decided one by
one; more, or a ref moved backwards or rewritten (``update-ref``, a forced fetch), and
the task is walked afresh.  They are found by `orange.store.since.commits_since_at_most`,
which stops past `EXTEND` without reading the rest of the history and, unlike git's
walk of ``tip ^known``, does not trust dates: a teammate's commits dated before the
base both sides share would otherwise bring that base and what is below it, listed
already, into the answer again.  (Not git's path-limited walk of ``tip ^known`` either:
git leaves out a merge whose first parent is older than ``known`` and whose second
brought the change.)  Like the listing cache, a missing, corrupt or older-layout cache
is rebuilt silently.
Nothing in it decides anything but what ``task log`` and ``task show`` print.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pygit2

from orange.store import commitgraph, events, layout
from orange.store.since import commits_since, commits_since_at_most

if TYPE_CHECKING:
    from orange.store.store import TaskStore

# Bumped when the tables change: a cache of another version is dropped and rebuilt.
_VERSION = 3
_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (task TEXT PRIMARY KEY, tip TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS commits (
    task TEXT NOT NULL, seq INTEGER NOT NULL, id TEXT NOT NULL,
    message TEXT NOT NULL, time INTEGER NOT NULL,
    from_status TEXT, to_status TEXT, PRIMARY KEY (task, seq)
);
"""
_TABLES = ("answers", "commits", "meta")  # (meta: version 2's)
# git's cache of delta bases while it walks (96 MiB by default, most of a cold walk's
# memory at 100,000 commits): a walk along one path reuses few of them.
_DELTA_CACHE = "16m"
EXTEND = 2_000  # new commits decided here, one by one; more: the task walked afresh


class HistoryEntry(NamedTuple):  # not a dataclass: see `orange.store.task.Task`
    commit: str
    event: str
    subject: str
    actor: str
    at: str
    from_status: str | None
    to_status: str | None
    trailers: dict[str, str]


_GIT = ("git.commit", "git")  # event and actor of a plain-git commit


def task_history(store: TaskStore, task_id: str) -> list[HistoryEntry]:
    """The commits about one task, oldest first (`commits_of`)."""
    ref = store.pygit.references.get(layout.TASKS_REF)
    if ref is None:
        return []
    db_path = store.repo.orange_dir() / "history.sqlite3"
    out: list[HistoryEntry] = []
    for row in commits_of(db_path, store.pygit, str(ref.target), task_id):
        trailers = events.parse_trailers(row.message) if row.own else {}
        # A commit that is not Orange's record of this task (a plain-git commit in a
        # tasks checkout): actor ``git``, its status change read from the file; a sync
        # merge (``Orange-Merge``) is the sync's.
        other = ("sync.merge", "sync") if "\nOrange-Merge: " in row.message else _GIT
        out.append(
            HistoryEntry(
                commit=row.commit,
                event=trailers.get("Orange-Event", "" if row.own else other[0]),
                subject=row.message.split("\n", 1)[0],
                actor=trailers.get("Orange-Actor", "" if row.own else other[1]),
                at=datetime.fromtimestamp(row.time, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                from_status=trailers.get("Orange-From") if row.own else row.from_status,
                to_status=trailers.get("Orange-To") if row.own else row.to_status,
                trailers=trailers,
            )
        )
    return out


class Row(NamedTuple):
    """One commit that changed one task.  ``own``: the commit is Orange's record of this
    task (its ``Orange-Task`` trailer names it), so its trailers say what happened;
    otherwise ``from_status``/``to_status`` are read from the task's file before and
    after (None when the file is missing or unreadable, or both are the same)."""

    commit: str
    message: str
    time: int
    own: bool
    from_status: str | None
    to_status: str | None


# One commit of a task's history as the cache keeps it:
# (commit id, message, commit time, status before, status after).
Found = tuple[str, str, int, str | None, str | None]


def commits_of(db_path: Path, repo: pygit2.Repository, tip: str, task_id: str) -> list[Row]:
    """The commits changing ``task_id``'s folder reachable from ``tip``, oldest first
    (each after its ancestors)."""
    if not layout.valid_task_id(task_id):
        return []
    found = None
    for _attempt in range(2):
        try:
            with closing(sqlite3.connect(db_path, timeout=10, isolation_level=None)) as db:
                found = _query(db, repo, tip, task_id, db_path.parent)
            break
        except sqlite3.OperationalError:  # locked past the timeout, or no file: no cache
            break
        except (sqlite3.DatabaseError, OSError):  # not a database: made again
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{db_path}{suffix}").unlink(missing_ok=True)
    if found is None:
        with closing(sqlite3.connect(":memory:", isolation_level=None)) as db:
            found = _query(db, repo, tip, task_id, db_path.parent)
    return [
        Row(commit, message, time, _names(message, task_id), old, new)
        for commit, message, time, old, new in found
    ]


def _names(message: str, task_id: str) -> bool:
    """Whether a commit's message is Orange's record of this task (``Orange-Task``)."""
    return events.parse_trailers(message).get("Orange-Task") == task_id


def _query(
    db: sqlite3.Connection, repo: pygit2.Repository, tip: str, task_id: str, orange_dir: Path
) -> list[Found]:
    """The task's answer at ``tip``: the cached one, extended or found afresh, and kept
    (walked with no lock held: a cold walk of a long history takes seconds)."""
    if db.execute("PRAGMA user_version").fetchone()[0] != _VERSION:
        db.executescript("".join(f"DROP TABLE IF EXISTS {name};" for name in _TABLES))
        db.execute(f"PRAGMA user_version = {_VERSION}")
    db.executescript(_SCHEMA)
    with _transaction(db, "BEGIN"):  # the answer and its rows as one reading
        stored = _tip(db, task_id)
        rows = db.execute(
            "SELECT id, message, time, from_status, to_status FROM commits"
            " WHERE task=? ORDER BY seq",
            (task_id,),
        ).fetchall()
    cached: list[Found] = [(str(c), str(m), int(t), old, new) for c, m, t, old, new in rows]
    if stored == tip:
        return cached
    found = None
    if stored is not None and _is_ancestor(repo, stored, tip):
        found = _extension(repo, tip, stored, task_id)
    if found is None:  # not walked yet, the ref rewritten, or far behind
        cached, found = [], find(repo, tip, task_id, orange_dir)
    with _transaction(db, "BEGIN IMMEDIATE"):
        if _tip(db, task_id) == stored:  # (else another process answered meanwhile)
            if not cached:
                db.execute("DELETE FROM commits WHERE task=?", (task_id,))
            db.executemany(
                "INSERT INTO commits VALUES (?, ?, ?, ?, ?, ?, ?)",
                ((task_id, seq, *row) for seq, row in enumerate(found, len(cached) + 1)),
            )
            db.execute("INSERT OR REPLACE INTO answers VALUES (?, ?)", (task_id, tip))
    return cached + found


@contextmanager
def _transaction(db: sqlite3.Connection, begin: str) -> Iterator[None]:
    db.execute(begin)
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _tip(db: sqlite3.Connection, task_id: str) -> str | None:
    row = db.execute("SELECT tip FROM answers WHERE task=?", (task_id,)).fetchone()
    return None if row is None else str(row[0])


def _is_ancestor(repo: pygit2.Repository, old: str, new: str) -> bool:
    try:
        return old == new or bool(repo.descendant_of(new, old))
    except Exception:  # an unknown object (gc'd after a rewrite): walked again
        return False


def find(repo: pygit2.Repository, tip: str, task_id: str, orange_dir: Path) -> list[Found]:
    """The commits changing ``task_id``'s folder that ``tip`` reaches, each after its
    ancestors: git's walk decided here, or where git cannot walk, the walk over every
    commit (`walked`).  A walk of a long history not yet in Orange's commit-graph
    starts the graph's update, for the next one."""
    listed = _candidates(repo, tip, layout.task_dir(task_id), orange_dir)
    if listed is None:
        return walked(repo, tip, None, task_id)
    commitgraph.start_update(repo, orange_dir, tip)
    commits = (repo[name].peel(pygit2.Commit) for name in listed)
    return list(_decided(repo, commits, task_id, proposed=True))


def walked(repo: pygit2.Repository, tip: str, since: str | None, task_id: str) -> list[Found]:
    """`find` by a walk over every commit from ``tip`` not reachable from ``since``, read
    by libgit2 alone: the answer where git cannot walk, and the reference of the tests."""
    return list(_decided(repo, _commits(repo, tip, since), task_id))


def _extension(repo: pygit2.Repository, tip: str, since: str, task_id: str) -> list[Found] | None:
    """The commits changing the task from ``since`` (an ancestor of ``tip``) to ``tip``,
    decided one by one: None when there are more than `EXTEND` of them, or telling would
    read a few times that many commits (walked afresh)."""
    commits = commits_since_at_most(repo, tip, since, EXTEND)
    return None if commits is None else list(_decided(repo, commits, task_id))


def _commits(repo: pygit2.Repository, tip: str, since: str | None) -> Iterator[pygit2.Commit]:
    """The commits ``tip`` reaches and ``since`` does not, parents first (one at a
    time for all of them; past a hidden commit, git's walk trusts dates and its answer
    is trimmed first: `commits_since`)."""
    modes = pygit2.enums.SortMode
    try:
        walker = repo.walk(tip, modes.TOPOLOGICAL | modes.REVERSE)
        if since is not None:
            walker.hide(since)
    except (KeyError, ValueError, pygit2.GitError):  # a tip or a base that is not there
        return iter(())
    return iter(walker) if since is None else iter(commits_since(repo, tip, since))


def _candidates(repo: pygit2.Repository, tip: str, path: str, orange_dir: Path) -> list[str] | None:
    """Ids of the commits reachable from ``tip`` that git finds differing at ``path``
    from a parent, parents first; None when git fails.  Every commit is walked, so
    every merge that differs from its first parent is among them (git leaves out a
    merge that matches every parent); the first parent is compared in `_decided`.
    git reads Orange's commit-graph when there is one (`orange.store.commitgraph`);
    a walk that fails with it is run again without it, and the graph dropped."""
    import subprocess  # (here: a `task update` loads none of this module)

    from orange.store.gitproc import git_env

    command = [
        "git", f"--git-dir={repo.path}", "--literal-pathspecs", "--no-replace-objects",
        "-c", f"core.deltaBaseCacheLimit={_DELTA_CACHE}",
        "rev-list", "--full-history", "--topo-order", "--reverse", tip, "--", path,
    ]  # fmt: skip
    graph = commitgraph.walk_env(orange_dir)
    for env in (graph, git_env()) if graph is not None else (git_env(),):
        try:
            result = subprocess.run(command, env=env, capture_output=True, check=False)
        except OSError:
            return None
        if result.returncode == 0:
            if env is not graph and graph is not None:
                commitgraph.remove(orange_dir)  # git walks without it, not with it
            return result.stdout.decode("ascii").split()
    return None


def _decided(
    repo: pygit2.Repository,
    commits: Iterable[pygit2.Commit],
    task_id: str,
    *,
    proposed: bool = False,
) -> Iterator[Found]:
    """Of ``commits``, those whose task folder differs from their first parent's.
    ``proposed``: git listed them, so a commit of one parent (or none) differs from it
    by git's reading, and only a merge is compared here."""
    path = layout.task_dir(task_id)
    for commit in commits:
        parents = commit.parent_ids
        if not proposed or len(parents) > 1:
            tree, parent = _tree(commit), _first_parent_tree(repo, parents)
            if _entry(tree, path) == _entry(parent, path):
                continue
        message, time = commit.message, commit.commit_time
        if _names(message, task_id):
            yield str(commit.id), message, time, None, None  # the trailers say the rest
            continue
        tree, parent = _tree(commit), _first_parent_tree(repo, parents)
        before = _status(repo, _entry(parent, f"{path}/TASK.md"))
        after = _status(repo, _entry(tree, f"{path}/TASK.md"))
        if before == after:  # an edit, not a move
            before = after = None
        yield str(commit.id), message, time, before, after


def _first_parent_tree(repo: pygit2.Repository, parents: list[pygit2.Oid]) -> pygit2.Tree | None:
    try:
        return repo[parents[0]].peel(pygit2.Commit).tree if parents else None
    except (KeyError, pygit2.GitError):  # beyond a shallow clone's edge: as a root
        return None


def _tree(commit: pygit2.Commit) -> pygit2.Tree | None:
    try:
        return commit.tree
    except (KeyError, pygit2.GitError):  # a damaged or missing root tree: none
        return None


def _entry(tree: pygit2.Tree | None, path: str) -> tuple[int, str] | None:
    """(mode, id) of the entry at ``path`` (None: none, or unreadable)."""
    if tree is None:
        return None
    try:
        found = tree[path]
    except (KeyError, ValueError, pygit2.GitError):  # GitError: a damaged tree above it
        return None
    return found.filemode, str(found.id)


def _status(repo: pygit2.Repository, entry: tuple[int, str] | None) -> str | None:
    """The ``status:`` line of a TASK.md's frontmatter (no full parse: a plain-git
    file may be anything; None when absent, unreadable or no file)."""
    if entry is None or entry[0] == pygit2.enums.FileMode.COMMIT:  # (a gitlink)
        return None
    try:
        text = repo[entry[1]].read_raw()[:65536].decode("utf-8")
    except (KeyError, ValueError, AttributeError, pygit2.GitError):  # GitError: damaged
        return None
    if not text.startswith("---\n"):
        return None
    for line in text[4:].split("\n---", 1)[0].splitlines():
        if line.startswith("status:"):
            value = line[len("status:") :].strip().strip("'\"")
            return value or None
    return None
