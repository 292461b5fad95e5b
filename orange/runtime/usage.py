"""What the agent programs recorded about their own token use (issue 30, the ledger).

Each program keeps its sessions under its own directory in the home folder, keyed by
the directory it ran in; Orange reads only what those programs wrote for one task's
worktree path, in one window of time (from the agent run's start, or the last record,
to now), never by guessing across tasks.  The readers, by the program's format:

- ``claude`` (Claude Code): ``$CLAUDE_CONFIG_DIR`` or ``~/.claude``, then
  ``projects/<worktree path, every character but letters and digits as "->/**.jsonl``;
  each assistant line has ``message.usage`` (``input_tokens``, ``output_tokens``,
  ``cache_read_input_tokens``, ``cache_creation_input_tokens``), ``message.model`` and
  ``timestamp``.  One API message is written as several lines (one per content block)
  with the same ``message.id`` and ``requestId``: the last line of each counts, once.
- ``codex``: ``$CODEX_HOME`` or ``~/.codex``, then ``sessions/YYYY/MM/DD/rollout-*.jsonl``
  whose first line (``session_meta``) names the worktree as ``cwd``; ``event_msg`` lines
  of ``payload.type == "token_count"`` carry ``info.total_token_usage``, the session's
  running total (``input_tokens`` includes ``cached_input_tokens``): the window's usage
  is the last total in it less the last one before it; the model is the last
  ``turn_context``'s ``model``.
- ``pi``: ``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``, then
  ``sessions/--<worktree path without its leading "/", "/" as "-">--/*.jsonl``; lines of
  ``type: message`` whose ``message.role`` is ``assistant`` have ``message.usage``
  (``input``, ``output``, ``cacheRead``, ``cacheWrite``, ``cost.total``) and
  ``message.model``: pi's own cost wins over the price table.
- ``opencode``: its SQLite store (``$OPENCODE_DB``, else ``opencode*.db`` in
  ``$XDG_DATA_HOME/opencode`` or ``~/.local/share/opencode``), opened read-only:
  messages of sessions whose ``directory`` is the worktree, their ``data`` JSON with
  ``role``, ``modelID``, ``cost`` (opencode's own, which wins) and ``tokens``
  (``input``, ``output``, ``reasoning``, ``cache.read``, ``cache.write``).

A cost of 0, which pi and opencode record for a model they have no price for (a custom
provider's), counts as no cost given: the price table decides, or the cost is unknown.
The formats were checked against session files the real programs wrote (Claude Code
2.1.197, codex-cli 0.171.0, pi 0.73.1, opencode 1.18.33: tests/fixtures/usage).

Everything here is read bounded: at most `MAX_FILES` files a reader, the last
`MAX_FILE` bytes of each (session files only grow at their end), lines of at most
`MAX_LINE` bytes, JSON through `orange.store.bounded`.  What cannot be read (a line cut
short, too long, not JSON, a value of the wrong type, a file that vanished) is counted
as broken and skipped: a reading never stops a command.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any, NamedTuple

from orange.engine.ledger import Usage
from orange.errors import OrangeError
from orange.runtime import harness, prices
from orange.runtime.bindings import workspace_of
from orange.store.bounded import load_json
from orange.store.task import Task

MAX_FILE = 16 * 1024 * 1024  # bytes read from the end of one session file
MAX_LINE = 1024 * 1024  # bytes of one line (longer lines are skipped as broken)
MAX_FILES = 200  # newest session files one reader looks at
MAX_ROWS = 100_000  # opencode messages read from its store
MAX_COUNT = 10**12  # one entry's tokens: more is not a real count

READERS = ("claude", "codex", "pi", "opencode")


class Entry(NamedTuple):
    """One model call as the program recorded it: ``cost`` is the program's own figure
    (None: it gave none, the price table decides)."""

    at: datetime
    model: str
    tokens_in: int
    tokens_out: int
    cache_read: int
    cache_write: int
    cost: Decimal | None = None


class Reading:
    """What one reading found: its entries and how many could not be read."""

    def __init__(self) -> None:
        self.entries: list[Entry] = []
        self.broken = 0


def read(
    readers: tuple[str, ...],
    worktree: str,
    since: datetime,
    until: datetime | None = None,
    home: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Reading:
    """The entries the named programs recorded for ``worktree`` in ``(since, until]``."""
    env = os.environ if env is None else env
    home = Path(env.get("HOME") or Path.home()) if home is None else home
    until = until or datetime.now(UTC)
    reading = Reading()
    paths = {worktree, os.path.realpath(worktree)}
    for name in dict.fromkeys(readers):
        for path in paths:
            _READERS[name](reading, home, env, path, since, until)
    return reading


def summarise(reading: Reading, prices: Any, seconds: int = 0) -> Usage:
    """One `Usage` of a reading: tokens summed, the program's cost where it gave one,
    else the price table's (``prices``: `orange.runtime.prices.Table`), None when a
    model has neither."""
    tokens_in = tokens_out = cache = 0
    cost: Decimal | None = Decimal(0)
    unpriced: list[str] = []
    by_model: dict[str, int] = {}
    for entry in reading.entries:
        tokens_in += entry.tokens_in
        tokens_out += entry.tokens_out
        cache += entry.cache_read + entry.cache_write
        by_model[entry.model] = by_model.get(entry.model, 0) + entry.tokens_in + entry.tokens_out
        price = prices.find(entry.model) if entry.cost is None else None
        if entry.cost is not None:
            part: Decimal | None = entry.cost
        elif price is not None:
            part = price.cost(
                entry.tokens_in, entry.tokens_out, entry.cache_read, entry.cache_write
            )
        else:
            part = None
            if entry.model not in unpriced:
                unpriced.append(entry.model or "unknown")
        cost = None if cost is None or part is None else cost + part
    model = max(by_model, key=lambda m: by_model[m]) if by_model else ""
    return Usage(
        tokens_in,
        tokens_out,
        cache,
        model,
        cost,
        seconds,
        reading.broken,
        tuple(unpriced),
    )


# Reading files, bounded ---------------------------------------------------------------
def _lines(path: Path, reading: Reading, needle: bytes) -> Iterator[Any]:
    """The JSON values of the lines of ``path`` that contain ``needle`` (the others are
    not parsed), from its last `MAX_FILE` bytes; what cannot be read counts as broken."""
    try:
        with path.open("rb") as handle:
            size = os.fstat(handle.fileno()).st_size
            if size > MAX_FILE:
                handle.seek(size - MAX_FILE)
                handle.readline()  # the first line is cut: skipped, counted
                reading.broken += 1
            while True:
                line = handle.readline(MAX_LINE + 1)
                if not line:
                    return
                if len(line) > MAX_LINE:
                    reading.broken += 1
                    while line and not line.endswith(b"\n"):  # the rest of the long line
                        line = handle.readline(MAX_LINE)
                    continue
                if needle not in line:
                    continue
                try:
                    yield load_json(line.decode("utf-8"))
                except (ValueError, UnicodeDecodeError, RecursionError):
                    reading.broken += 1
    except OSError:
        reading.broken += 1


def _newest(paths: Iterator[Path], since: datetime) -> list[Path]:
    """The files changed since ``since`` (a session file not written since cannot hold
    an entry of the window), newest first, at most `MAX_FILES`."""
    found: list[tuple[float, Path]] = []
    floor = since.timestamp() - 1
    for path in paths:
        try:
            mtime = path.stat().st_mtime
        except OSError:
            continue
        if mtime >= floor and path.is_file():
            found.append((mtime, path))
        if len(found) > 10 * MAX_FILES:
            break
    found.sort(reverse=True)
    return [path for _, path in found[:MAX_FILES]]


def _when(value: Any) -> datetime | None:
    """An ISO time (``2026-01-31T12:00:00.123Z``) or milliseconds since the epoch."""
    try:
        if isinstance(value, str):
            stamp = datetime.fromisoformat(value.replace("Z", "+00:00"))
            return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return datetime.fromtimestamp(value / 1000, UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return None


def count(value: Any) -> int:
    """A token count; ValueError for anything else (the entry is broken)."""
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_COUNT:
        raise ValueError("not a token count")
    return value


def amount(value: Any) -> Decimal | None:
    """A dollar amount a program recorded (None: not one)."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float | str):
        return None
    try:
        dollars = Decimal(str(value))
    except InvalidOperation:
        return None
    return dollars if dollars.is_finite() and 0 <= dollars < 10**6 else None


def _dig(data: Any, *keys: str) -> Any:
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def _text(value: Any) -> str:
    return value[:200] if isinstance(value, str) else ""


# Claude Code ---------------------------------------------------------------------------
def claude_dir(path: str) -> str:
    """Claude Code's folder name for a working directory: every character that is not
    a letter or a digit becomes "-" (``/w/a.b`` -> ``-w-a-b``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", path)


def _claude(
    reading: Reading, home: Path, env: Mapping[str, str], cwd: str, since: datetime, until: datetime
) -> None:
    base = Path(env["CLAUDE_CONFIG_DIR"]) if env.get("CLAUDE_CONFIG_DIR") else home / ".claude"
    folder = base / "projects" / claude_dir(cwd)
    if not folder.is_dir():
        return
    last: dict[tuple[str, str], Entry] = {}
    anonymous: list[Entry] = []
    for path in _newest(folder.rglob("*.jsonl"), since):
        for line in _lines(path, reading, b'"usage"'):
            message = _dig(line, "message")
            usage = _dig(message, "usage")
            if not isinstance(usage, dict) or _dig(line, "type") != "assistant":
                continue
            if isinstance(line.get("cwd"), str) and line["cwd"] not in (cwd, os.path.realpath(cwd)):
                continue  # another directory's line (a folder name two paths share)
            at = _when(line.get("timestamp"))
            if at is None or not since < at <= until:
                if at is None:
                    reading.broken += 1
                continue
            try:
                entry = Entry(
                    at,
                    _text(message.get("model")),
                    count(usage.get("input_tokens")),
                    count(usage.get("output_tokens")),
                    count(usage.get("cache_read_input_tokens")),
                    count(usage.get("cache_creation_input_tokens")),
                    amount(line.get("costUSD")),
                )
            except ValueError:
                reading.broken += 1
                continue
            key = (_text(message.get("id")), _text(line.get("requestId")))
            if key == ("", ""):
                anonymous.append(entry)
            else:
                last[key] = entry  # a message's later lines carry its final counts
    reading.entries.extend([*last.values(), *anonymous])


# codex ---------------------------------------------------------------------------------
def _codex(
    reading: Reading, home: Path, env: Mapping[str, str], cwd: str, since: datetime, until: datetime
) -> None:
    base = Path(env["CODEX_HOME"]) if env.get("CODEX_HOME") else home / ".codex"
    sessions = base / "sessions"
    days = {(since + timedelta(days=d)).date() for d in range(-1, (until - since).days + 2)}
    if len(days) > 400:  # a window of more than a year: look at every day folder
        candidates: Iterator[Path] = sessions.glob("*/*/*/rollout-*.jsonl")
    else:
        candidates = (
            path
            for day in sorted(days)
            for path in (sessions / f"{day:%Y/%m/%d}").glob("rollout-*.jsonl")
        )
    for path in _newest(candidates, since):
        _codex_file(reading, path, cwd, since, until)


def _codex_file(reading: Reading, path: Path, cwd: str, since: datetime, until: datetime) -> None:
    mine = False
    model = ""
    before: dict[str, int] | None = None
    last: dict[str, int] | None = None
    last_at: datetime | None = None
    models: list[str] = []
    calls: dict[str, Entry] | None = None  # per model response (`token_usage_record`)
    for line in _lines(path, reading, b'"payload"'):
        kind, payload = _dig(line, "type"), _dig(line, "payload")
        if kind == "session_meta":
            mine = _dig(payload, "cwd") in (cwd, os.path.realpath(cwd))
            continue
        if not mine:
            continue
        if kind == "turn_context":
            model = _text(_dig(payload, "model")) or model
            continue
        if kind == "token_usage_record":
            calls = {} if calls is None else calls
            _codex_call(reading, calls, line, payload, model, since, until)
            continue
        if kind != "event_msg" or _dig(payload, "type") != "token_count":
            continue
        total = _dig(payload, "info", "total_token_usage")
        at = _when(line.get("timestamp"))
        if not isinstance(total, dict) or at is None:
            reading.broken += 0 if total is None else 1  # `info: null` before a first call
            continue
        try:
            counts = {k: count(total.get(k)) for k in _CODEX_COUNTS}
        except ValueError:
            reading.broken += 1
            continue
        if at <= since:
            before = counts
        elif at <= until:
            last, last_at = counts, at
            models.append(model)
    if calls is not None:  # codex records each response: its running totals lag behind
        reading.entries.extend(calls.values())
        return
    if not mine or last is None or last_at is None:
        return
    start = before or dict.fromkeys(_CODEX_COUNTS, 0)
    delta = {k: max(last[k] - start.get(k, 0), 0) for k in last}
    reading.entries.append(_codex_entry(last_at, models[-1] if models else "", delta))


def _codex_call(
    reading: Reading,
    calls: dict[str, Entry],
    line: Any,
    payload: Any,
    model: str,
    since: datetime,
    until: datetime,
) -> None:
    """One model response of codex's ``token_usage_record`` line, if in the window."""
    figures = _dig(payload, "usage")
    at = _when(_dig(line, "timestamp"))
    if not isinstance(figures, dict) or at is None:
        reading.broken += 1
        return
    if not since < at <= until:
        return
    try:
        counts = {k: count(figures.get(k)) for k in _CODEX_COUNTS}
    except ValueError:
        reading.broken += 1
        return
    key = _text(_dig(payload, "response_id")) or f"line-{len(calls)}"
    calls[key] = _codex_entry(at, model, counts)  # a response written twice counts once


def _codex_entry(at: datetime, model: str, counts: dict[str, int]) -> Entry:
    """An entry of codex's counts, whose input includes the cached part."""
    cached = min(counts["cached_input_tokens"], counts["input_tokens"])
    return Entry(
        at,
        model,
        counts["input_tokens"] - cached,
        counts["output_tokens"],
        cached,
        counts["cache_write_input_tokens"],
    )


# codex 0.171.0's running totals (`cache_write_input_tokens` is new there; absent: 0).
# ``input_tokens`` includes the cached ones (seen: 1,200 new + 900 cached = 2,100).
_CODEX_COUNTS = ("input_tokens", "cached_input_tokens", "cache_write_input_tokens", "output_tokens")


# pi ------------------------------------------------------------------------------------
def pi_dir(path: str) -> str:
    """pi's folder name for a working directory (``/w/a`` -> ``--w-a--``)."""
    return "--" + re.sub(r"[/\\:]", "-", path.lstrip("/\\")) + "--"


def _pi(
    reading: Reading, home: Path, env: Mapping[str, str], cwd: str, since: datetime, until: datetime
) -> None:
    base = (
        Path(env["PI_CODING_AGENT_DIR"]) if env.get("PI_CODING_AGENT_DIR") else home / ".pi/agent"
    )
    folder = base / "sessions" / pi_dir(cwd)
    if not folder.is_dir():
        return
    for path in _newest(folder.glob("*.jsonl"), since):
        for line in _lines(path, reading, b'"usage"'):
            message = _dig(line, "message")
            usage = _dig(message, "usage")
            if _dig(line, "type") != "message" or _dig(message, "role") != "assistant":
                continue
            at = _when(line.get("timestamp")) or _when(_dig(message, "timestamp"))
            if not isinstance(usage, dict) or at is None:
                reading.broken += 1
                continue
            if not since < at <= until:
                continue
            try:
                reading.entries.append(
                    Entry(
                        at,
                        _text(message.get("model")),
                        count(usage.get("input")),
                        count(usage.get("output")),
                        count(usage.get("cacheRead")),
                        count(usage.get("cacheWrite")),
                        # 0: a model pi has no price for (a custom provider's)
                        amount(_dig(usage, "cost", "total")) or None,
                    )
                )
            except ValueError:
                reading.broken += 1


# opencode ------------------------------------------------------------------------------
def _opencode(
    reading: Reading, home: Path, env: Mapping[str, str], cwd: str, since: datetime, until: datetime
) -> None:
    if env.get("OPENCODE_DB"):
        stores = [Path(env["OPENCODE_DB"])]
    else:
        data = Path(env["XDG_DATA_HOME"]) if env.get("XDG_DATA_HOME") else home / ".local/share"
        stores = sorted((data / "opencode").glob("opencode*.db"))[:8]
    for store in stores:
        if store.is_file():
            _opencode_store(reading, store, cwd, since, until)


def _opencode_store(
    reading: Reading, store: Path, cwd: str, since: datetime, until: datetime
) -> None:
    import sqlite3

    low, high = int(since.timestamp() * 1000), int(until.timestamp() * 1000)
    query = (
        "SELECT m.time_created, substr(m.data, 1, ?) FROM message m "
        "JOIN session s ON m.session_id = s.id "
        "WHERE s.directory = ? AND m.time_created > ? AND m.time_created <= ? LIMIT ?"
    )
    try:
        # Read-only, never creating the file; opencode may be writing it (WAL mode).
        with contextlib.closing(
            sqlite3.connect(f"{store.resolve().as_uri()}?mode=ro", uri=True, timeout=2)
        ) as db:
            rows = db.execute(query, (MAX_LINE + 1, cwd, low, high, MAX_ROWS)).fetchall()
    except sqlite3.Error:
        reading.broken += 1
        return
    for created, data in rows:
        try:
            if not isinstance(data, str) or len(data) > MAX_LINE:
                raise ValueError("not a message")
            message = load_json(data)
            if _dig(message, "role") != "assistant":
                continue
            tokens = _dig(message, "tokens")
            if not isinstance(tokens, dict):
                raise ValueError("no tokens")
            at = _when(created)
            if at is None:
                raise ValueError("no time")
            reading.entries.append(
                Entry(
                    at,
                    _text(message.get("modelID")),
                    count(tokens.get("input")),
                    count(tokens.get("output")) + count(tokens.get("reasoning")),
                    count(_dig(tokens, "cache", "read")),
                    count(_dig(tokens, "cache", "write")),
                    amount(message.get("cost")) or None,  # 0: a provider it has no price for
                )
            )
        except (ValueError, RecursionError):
            reading.broken += 1


_READERS = {"claude": _claude, "codex": _codex, "pi": _pi, "opencode": _opencode}


# The engine's `UsageSource` -------------------------------------------------------------
class LocalUsage:
    """Reads the usage of a task's worktree on this host (the pool worktree this host
    bound to it, `orange.runtime.bindings.workspace_of`), with the readers of the
    task's harnesses (every reader when a harness is not named: all of them match the
    worktree's path, never another's), priced by `orange.runtime.prices`."""

    def read(self, task: Task, since: str, until: str) -> Usage | None:
        try:
            return self._read(task, since, until)
        except Exception:  # a reading never stops a move (it is bounded: belt and braces)
            return None

    def _read(self, task: Task, since: str, until: str) -> Usage | None:
        worktree = workspace_of(task)
        start, end = _when(since), _when(until)
        if worktree is None or start is None or end is None:
            return None
        names, unread = readers_of(task)
        if not names and not unread:
            return None
        table, wrong = prices.table_or_shipped()  # a broken `prices:` never stops a move
        reading = read(names, str(worktree), start, end)
        found = summarise(reading, table, max(int((end - start).total_seconds()), 0))
        found = found._replace(price_error=wrong)
        if unread:  # an agent whose spending cannot be read: the cost is unknown
            found = found._replace(cost=None, unread=unread)
        return found


def readers_of(task: Task) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The usage readers of the task's worker and review harnesses, and the harnesses
    among them that name none (their program's usage cannot be read; one whose usage
    is ``none`` calls no model and is neither)."""
    try:
        table = harness.load_harnesses()
    except OrangeError:
        return READERS, ()
    names: list[str] = []
    unread: list[str] = []
    for name in (task.str_field("harness"), task.str_field("review_harness")):
        if not name:
            names.extend(READERS)
        elif name in table and table[name].usage in READERS:
            names.append(table[name].usage)
        elif name in table and table[name].usage != harness.NO_USAGE:
            unread.append(name)
    return tuple(dict.fromkeys(names)), tuple(dict.fromkeys(unread))
