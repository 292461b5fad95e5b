"""The tasks ref's history as rows for statistics (`orange stats`, issue 30).

Every commit Orange writes names its task and what happened in ``Orange-*`` trailers
(`orange.store.events`); the ledger adds what the agents spent.  This walk reads only
commit messages (the first `MAX_MESSAGE` bytes of each: a hostile history is bounded),
one `Row` a commit that names a valid task, and keeps them in a cache keyed by the
commit walked last (``<git dir>/orange/stats-cache.json``): a later walk reads only the
commits added since, so a warm answer costs the load of the cache.  A trailer is its
writer's claim; the statistics count what the history says.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pygit2

from orange.store import events, layout
from orange.store.files import replace_file
from orange.store.since import commits_since

MAX_MESSAGE = 16 * 1024
MAX_TEXT = 64  # characters kept of a status, event, actor or model name
VERSION = 1
_NAMES = (
    "Orange-Task",
    "Orange-Event",
    "Orange-From",
    "Orange-To",
    "Orange-Tokens-In",
    "Orange-Tokens-Out",
    "Orange-Tokens-Cache",
    "Orange-Cost-USD",
    "Orange-Model",
    "Orange-Agent-Seconds",
)


class Row(NamedTuple):
    """One commit of one task: when (seconds since the epoch), what, what it spent
    (``cost`` as the trailer's text: ``""`` none, ``unknown`` not priced)."""

    time: int
    task: str
    event: str
    from_status: str
    to_status: str
    tokens_in: int
    tokens_out: int
    cache: int
    cost: str
    model: str
    seconds: int


def rows(repo: pygit2.Repository, cache_dir: Path | None = None) -> list[Row]:
    """Every row of the tasks ref's history, oldest first (cached under ``cache_dir``)."""
    try:
        tip = repo.references[layout.TASKS_REF].peel(pygit2.Commit)
    except (KeyError, pygit2.GitError, ValueError):
        return []
    path = cache_dir / "stats-cache.json" if cache_dir is not None else None
    cached, seen = _load(path)
    if seen == str(tip.id):
        return cached
    known = seen is not None and seen in repo and repo.descendant_of(tip.id, seen)
    if not known:
        cached = []
    # Exactly what the cache lacks: git's own walk past a hidden tip trusts dates, and
    # would count again what a teammate whose clock runs behind wrote before the base.
    walked = commits_since(repo, str(tip.id), seen if known else None)
    new = [row for row in map(_row, walked) if row is not None]
    found = [*cached, *new]
    if path is not None:
        try:
            data = {"version": VERSION, "tip": str(tip.id), "rows": found}
            replace_file(path, json.dumps(data, separators=(",", ":")))
        except OSError:
            pass  # a cache that cannot be written: the next answer walks again
    return found


def _row(commit: pygit2.Commit) -> Row | None:
    if len(commit.parents) > 1:
        return None  # a sync merge: its parents carry the records
    raw = commit.raw_message[:MAX_MESSAGE].decode("utf-8", "replace")
    if "Orange-Task" not in raw:
        return None
    found = events.parse_trailers(raw)
    task = found.get("Orange-Task", "")
    if not layout.valid_task_id(task):
        return None
    return Row(
        int(commit.commit_time),
        task,
        found.get("Orange-Event", "")[:MAX_TEXT],
        found.get("Orange-From", "")[:MAX_TEXT],
        found.get("Orange-To", "")[:MAX_TEXT],
        _count(found.get("Orange-Tokens-In")),
        _count(found.get("Orange-Tokens-Out")),
        _count(found.get("Orange-Tokens-Cache")),
        found.get("Orange-Cost-USD", "")[:24],
        found.get("Orange-Model", "")[:MAX_TEXT],
        _count(found.get("Orange-Agent-Seconds")),
    )


def _count(text: str | None) -> int:
    return int(text) if text and text.isdigit() and len(text) <= 15 else 0


def _load(path: Path | None) -> tuple[list[Row], str | None]:
    if path is None:
        return [], None
    try:
        if path.stat().st_size > 1024**3:
            return [], None
        data = json.loads(path.read_bytes())
        if data.get("version") != VERSION or not isinstance(data.get("tip"), str):
            return [], None
        return [Row(*row) for row in data["rows"]], data["tip"]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return [], None
