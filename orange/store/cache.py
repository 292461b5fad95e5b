"""The listing cache: each task folder's parsed frontmatter, indexed by shard tree id.

Listing compares the shard trees of the current ``tasks/`` tree with the ones last
indexed and walks only the shards that changed — so a ref moved by plain git
(``update-ref``, ``fetch``) is picked up like one moved by Orange.  In a changed shard,
a task whose TASK.md blob is the one cached keeps its row (a blob id never changes
meaning); only new blobs are parsed.  One row per task folder, so the cache holds what
the ref holds, not every version it ever held.  The cache is a convenience: a missing,
locked or corrupt database is rebuilt (or bypassed) silently.  Its file (where it is,
how it is opened, built and placed) is `orange.store.cachefile`'s.
"""

from __future__ import annotations

import gc
import json
import sqlite3
from collections.abc import Callable
from contextlib import closing
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

import pygit2

from orange.store import cachefile, layout
from orange.store.cachefile import cache_path as cache_path  # where callers look for it
from orange.store.task import unreadable

_T = TypeVar("_T")


class Entry(NamedTuple):
    """One task directory in the ref: its path, blob, and its frontmatter as JSON text
    (or why it does not parse), with the few fields listing filters and sorts on.

    The JSON is decoded only when asked (`fields`): listing 10,000 tasks as JSON
    passes the cached text through untouched.
    """

    task_dir: str
    blob: str
    fields_json: str | None
    error: str | None
    project: str = ""
    status: str = ""
    activity: str = ""
    workspace: str = ""
    workflow: str = ""
    workflow_rev: str = ""
    task_id: str = ""  # the id the file says (its folder must agree)
    shard: str = ""  # the shard folder it sits in (``tasks/<shard>/...``)

    @property
    def fields(self) -> dict[str, Any] | None:
        if self.fields_json is None:
            return None
        decoded = json.loads(self.fields_json)
        return decoded if isinstance(decoded, dict) else None


_encode: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False, default=str).encode
try:  # the same encoding, without the wrapper building a C encoder per call (a cold
    # listing encodes every task: a quarter of that time); no cycle check, since parsed
    # frontmatter holds none (YAML anchors are refused)
    _one = json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )

    def _encode_fast(fields: Any) -> str:
        return "".join(_one(fields, 0))

    if _encode_fast({"k": ["é", 1, None, True, {}]}) == _encode({"k": ["é", 1, None, True, {}]}):
        _encode = _encode_fast
except TypeError:  # no C encoder, or one of another signature: the plain path
    pass

# Parses one TASK.md blob into (fields, None, its JSON text or None) or (None, error,
# None).  JSON text given is what `_encode` makes of the fields (else it is called);
# the fields' known text fields are text or null (`orange.store.task.check_fields`).
Parser = Callable[[bytes, str], tuple[dict[str, Any] | None, str | None, str | None]]


def list_entries(db_path: Path, tasks_tree: pygit2.Tree | None, parse: Parser) -> list[Entry]:
    """Every task directory under ``tasks_tree``, using and refreshing the cache."""
    if not db_path.exists():  # this version's first listing here: the file of the
        cachefile.discard(db_path.with_name("cache.sqlite3"))  # versions before 6 goes
        built = cachefile.build(db_path, lambda db: _refresh(db, tasks_tree, parse))
        if built is not None:
            return built
    for _attempt in range(2):
        try:
            with closing(cachefile.connect(db_path)) as db, db:
                return _refresh(db, tasks_tree, parse)
        except sqlite3.OperationalError as exc:
            if exc.sqlite_errorcode in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                break  # another process still writes it (a long rebuild): its file stays
            cachefile.discard(db_path)
        except (sqlite3.DatabaseError, OSError):
            cachefile.discard(db_path)
    with closing(cachefile.in_memory()) as db:  # unusable on disk: work uncached
        return _refresh(db, tasks_tree, parse)


def _refresh(db: sqlite3.Connection, tasks_tree: pygit2.Tree | None, parse: Parser) -> list[Entry]:
    indexed = dict(db.execute("SELECT shard, tree FROM shards").fetchall())

    current: dict[str, pygit2.Tree] = {}
    if tasks_tree is not None:
        for obj in tasks_tree:
            if isinstance(obj, pygit2.Tree):  # of a name and its escape, the first
                current.setdefault(name_of(obj), obj)
    gone = [(shard,) for shard in indexed.keys() - current.keys()]
    changed = sorted((s, tree) for s, tree in current.items() if indexed.get(s) != str(tree.id))
    cached = _cached_rows(db, [s for s, _ in changed if indexed.get(s)])  # not damaged
    db.executemany("DELETE FROM shards WHERE shard=?", gone)
    db.executemany("DELETE FROM entries WHERE shard=?", [*gone, *((s,) for s, _ in changed)])
    rows = _bulk(_index_shards, db, changed, cached, parse) if changed else []
    if len(changed) != len(current):  # some shards unchanged: read every row back
        rows = db.execute(f"SELECT * FROM entries ORDER BY {_KEY}").fetchall()
    return [_placed(entry) for entry in map(Entry._make, rows)]


_KEY = "shard, task_dir"


def _cached_rows(db: sqlite3.Connection, shards: list[str]) -> dict[str, tuple[str, ...]]:
    """The cached rows of these shards, by folder."""
    rows: dict[str, tuple[str, ...]] = {}
    for start in range(0, len(shards), 500):
        chunk = shards[start : start + 500]
        marks = ",".join("?" * len(chunk))
        query = f"SELECT * FROM entries WHERE shard IN ({marks})"
        rows.update((row[0], row) for row in db.execute(query, chunk))
    return rows


def _bulk(index: Callable[..., _T], *args: Any) -> _T:
    """``index(*args)``, reading and parsing many tasks at once (a cold cache reads
    10,000) with the cyclic garbage collector off: the pass makes some 10^5 objects
    (rows, fields, strings) that hold no cycles, and the collector would walk the
    survivors again and again while they are made (3 to 4 % of a cold listing).

    libgit2's check that each object it reads hashes to its name stays on (it was off
    here for a while): with it off, a loose object swapped on disk showed in a cold
    listing while `task show`, reading with it, refused the task, and a listing must
    never show what ``show`` refuses.  Its cost, measured for this decision: a cold
    listing of 10,000 tasks in-process, 15 interleaved runs each on a loaded 2-CPU VM,
    CPU median 827 ms with the check against 801 ms without (about 3 %; the tree
    walk and blob reads alone: 147 ms against 111 ms in bench/README.md's sixth
    round); only a cold listing pays it, a warm one reads no blob."""
    collecting = gc.isenabled()
    try:
        gc.disable()
        return index(*args)
    finally:
        if collecting:
            gc.enable()


def _placed(entry: Entry) -> Entry:
    """The entry with its path in its error, or broken when the id its file says does
    not belong in its folder (one parse serves every folder holding the same blob)."""
    if entry.error is not None:
        return entry._replace(error=f"{entry.task_dir}/TASK.md: {entry.error}")
    if entry.task_dir != layout.task_dir(entry.task_id):
        reason = f"id {entry.task_id!r} does not match its directory"
        return entry._replace(fields_json=None, error=f"{entry.task_dir}/TASK.md: {reason}")
    return entry


def _index_shards(
    db: sqlite3.Connection,
    changed: list[tuple[str, pygit2.Tree]],
    cached: dict[str, tuple[str, ...]],
    parse: Parser,
) -> list[tuple[str | None, ...]]:
    """Index the shards that changed (their old rows deleted already, ``cached`` read
    before): a folder whose blob is the cached one keeps its row, any other blob is
    parsed (once, whatever folders hold it).  One statement per table for all of them,
    so a cold cache at 10,000 tasks costs a few statements, not 800.

    Returns the shards' rows, in the order of the listing query (by key)."""
    rows: list[tuple[str | None, ...]] = []
    parsed: dict[str, tuple[str | None, ...]] = {}
    indexed = []
    for shard, tree in changed:
        whole = True
        try:
            blobs = shard_tasks(shard, tree)
        except pygit2.GitError as exc:  # the shard's own tree: one broken entry for it
            reason = _Damage(unreadable("its shard", exc))
            blobs = [(f"tasks/{shard}", f"{MISSING}{tree.id}", reason)]
        for task_dir, blob_id, blob in blobs:
            old = cached.get(task_dir)
            if old is not None and old[1] == blob_id:
                rows.append(old)
                continue
            values = parsed.get(blob_id)
            if values is None:
                values = parsed[blob_id] = _parsed(f"{task_dir}/TASK.md", blob, parse)
            rows.append((task_dir, blob_id, *values, shard))
            whole = whole and type(values[1]) is not _Damage
        # A damaged shard is recorded without its tree: read again next time, none of
        # its rows kept (the object may be repaired), and dropped with its rows if gone.
        indexed.append((shard, str(tree.id) if whole else ""))
    db.executemany(f"INSERT INTO entries VALUES ({', '.join('?' * len(Entry._fields))})", rows)
    db.executemany("INSERT OR REPLACE INTO shards VALUES (?, ?)", indexed)
    return rows


MISSING = "missing:"  # the start of the id `shard_tasks` gives a folder without TASK.md


class _Damage(str):
    """Why a task's folder or file (or a whole shard) could not be read from this
    clone's objects (a damaged or missing object): its entry is broken, and its shard
    is recorded without its tree, so none of its rows is kept for the next listing."""


def shard_tasks(shard: str, tree: pygit2.Tree) -> list[tuple[str, str, pygit2.Blob | str]]:
    """(task folder, TASK.md blob id, the blob) for each task in a shard, by folder; a
    folder without a TASK.md, or one git cannot read, gets a ``missing:`` id (`MISSING`)
    and the reason instead of a blob.  The one walk of a shard: the cache's and the
    dashboard's (`orange.dashboard.source`)."""
    found: dict[str, tuple[str, str, pygit2.Blob | str]] = {}
    for task_tree in tree:
        if not isinstance(task_tree, pygit2.Tree):
            continue
        name = str(task_tree.name)  # text as it is, unless it is not UTF-8 (`name_of`)
        task_dir = f"tasks/{shard}/{name if name.isascii() else name_of(task_tree)}"
        if task_dir in found:  # names whose escapes are the same text: the first
            continue
        try:  # one lookup in C (a loop over the folder's entries made an object each)
            blob: pygit2.Object | str = task_tree["TASK.md"]
        except pygit2.GitError as exc:  # the folder's object damaged or missing (a
            blob = _Damage(unreadable("its folder", exc))  # KeyError too: first)
        except KeyError:
            blob = "TASK.md is missing"
        if isinstance(blob, pygit2.Blob):
            found[task_dir] = (task_dir, str(blob.id), blob)
        else:
            reason = blob if isinstance(blob, str) else "TASK.md is missing"
            found[task_dir] = (task_dir, f"{MISSING}{task_tree.id}", reason)
    # By folder, as the listing query gives them: git's order, but for a name that
    # another begins with ("ab" and "ab-c").
    return sorted(found.values(), key=itemgetter(0))


def name_of(obj: pygit2.Object) -> str:
    """A tree entry's name as text.  Git takes any bytes but NUL and "/" in a name: one
    from a teammate's ref that is not UTF-8 is shown with those bytes escaped (its
    folder is no task's, so its entry is broken) and stored as such.  Two names can
    escape to the same text (``\\xff`` is a name too): callers keep the first."""
    name = str(obj.name)
    if name.isascii():
        return name
    try:
        name.encode()
    except UnicodeEncodeError:  # pygit2 decodes names with surrogate escapes
        return name.encode(errors="surrogateescape").decode(errors="backslashreplace")
    return name


def _parsed(path: str, blob: pygit2.Blob | str, parse: Parser) -> tuple[str | None, ...]:
    """A row's values from its fields JSON to its task id, for a blob (or why there is
    none)."""
    if isinstance(blob, str):
        return _row(None, blob, None)
    try:
        raw = blob.read_raw()
    except pygit2.GitError as exc:  # a damaged object in this clone: one broken task
        return _row(None, _Damage(unreadable("TASK.md", exc)), None)
    fields, error, text = parse(raw, path)
    if error is not None:  # one parse serves every folder of a blob: no path in it
        error = error.removeprefix(f"{path}: ")
    return _row(fields, error, text)


# The columns of a row that are fields of the task, as text ("" for none).
_COLUMNS = ("project", "status", "workspace", "workflow", "workflow_rev", "id")


def _row(
    fields: dict[str, Any] | None, error: str | None, text: str | None
) -> tuple[str | None, ...]:
    """A row's (fields JSON, error, project, status, activity, workspace, workflow,
    workflow_rev, id); the JSON is ``text`` if given."""
    if fields is None:
        return None, error, "", "", "", "", "", "", ""
    get = fields.get
    project, status, workspace, workflow, rev, task_id = map(get, _COLUMNS)
    # Known text fields are text or null here (`check_fields`); a revision may be a
    # number (a hex prefix of digits only, written by hand).
    return (
        _encode(fields) if text is None else text,
        error,
        project or "",
        status or "",
        get("updated_at") or get("created_at") or "",
        workspace or "",
        workflow or "default",  # what `Task.workflow` reads for a task that names none
        "" if rev is None else str(rev),
        task_id or "",
    )
