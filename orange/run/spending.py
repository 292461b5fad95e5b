"""What `orange run`'s agents cost (the ledger, issue 30): one `Usage` per invocation.

A non-interactive agent says what it used on its way out, so that is read first:

- ``claude -p --output-format json``: the result object's ``modelUsage`` (per model:
  ``inputTokens``, ``outputTokens``, ``cacheReadInputTokens``,
  ``cacheCreationInputTokens``, ``costUSD``; it counts every model call of the turn,
  where ``usage`` holds only the main loop's) and ``total_cost_usd``, Claude Code's own
  figure, which wins over the price table (checked against Claude Code 2.1.197:
  tests/fixtures/usage/claude/print.json).  A model named with its context size
  (``claude-opus-4-8[1m]``) is priced as the model.
- ``codex exec --json``: every ``turn.completed`` event's ``usage`` (``input_tokens``,
  which includes ``cached_input_tokens``, ``cache_write_input_tokens``,
  ``output_tokens``; codex-cli 0.171.0: tests/fixtures/usage/codex/exec.jsonl).  The
  events name no model: it is the one the session file codex wrote for the worktree in
  the invocation's window names (`orange.runtime.usage`), priced by the table.
- Any other harness (``pi -p``, ``opencode run``, a user's ``exec_command``): what its
  program's session files recorded for the worktree in the invocation's window, read
  by the reader its harness names; a harness that names none has an unknown cost
  (``usage: none``: it calls no model and costs nothing).

An envelope that cannot be read (not JSON, no usage in it) falls back to the session
files too.  Nothing here ever stops a run: what cannot be known is recorded as unknown.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, NamedTuple

from orange.engine.ledger import TOKEN_KEYS, UNKNOWN_COST, Usage, cost_of, tokens_of
from orange.errors import OrangeError
from orange.run.headless import ExecHarness, Invocation
from orange.runtime import harness, prices, usage
from orange.runtime.usage import Entry, Reading
from orange.store.runfile import RunFile
from orange.store.task import Task

MAX_ENVELOPE = 16 * 1024 * 1024  # bytes of stdout read for the usage (the answer's own cap)


class Spent(NamedTuple):
    """What a run cost: its architect's record and its subtasks' tasks' together."""

    cost: Decimal
    tokens: dict[str, int]
    unknown: bool  # a part of it could not be known (`cost_unknown`)


def spent_by(run: RunFile, tasks: Iterable[Task]) -> Spent:
    """The run's cost: the ledger of its record (its architect) and of ``tasks``."""
    ledgers = [run.fields, *(task.fields for task in tasks)]
    return Spent(
        sum((cost_of(f) for f in ledgers), Decimal(0)),
        {k: sum(tokens_of(f)[k] for f in ledgers) for k in TOKEN_KEYS},
        any(f.get(UNKNOWN_COST) is True for f in ledgers),
    )


def usage_of(h: ExecHarness, run: Invocation, cwd: Path) -> Usage:
    """What one invocation of ``h`` in ``cwd`` used, as the ledger records it."""
    started = run.started or datetime.now(UTC)
    ended = run.ended or datetime.now(UTC)
    seconds = max(int((ended - started).total_seconds()), 0)
    table, wrong = prices.table_or_shipped()  # a broken `prices:` never stops a run
    return _usage(h, run, cwd, table, seconds)._replace(price_error=wrong)


def _usage(h: ExecHarness, run: Invocation, cwd: Path, table: Any, seconds: int) -> Usage:
    started = run.started or datetime.now(UTC)
    ended = run.ended or datetime.now(UTC)
    stdout = run.answer[-MAX_ENVELOPE:]
    if h.envelope == "claude-json":
        found = _claude(stdout)
        if found is not None:
            reading, total = found
            result = usage.summarise(reading, table, seconds)
            return result if total is None else result._replace(cost=total, unpriced=())
    if h.envelope == "codex-exec":
        turns = _codex(stdout, cwd, started, ended)
        if turns is not None:
            return usage.summarise(turns, table, seconds)
    return _from_session_files(h, cwd, started, ended, table, seconds)


def _from_session_files(
    h: ExecHarness, cwd: Path, started: datetime, ended: datetime, table: Any, seconds: int
) -> Usage:
    try:
        entry = harness.load_harnesses().get(h.name)
    except OrangeError:
        entry = None
    reader = entry.usage if entry is not None else ""
    if reader == harness.NO_USAGE:
        return Usage(seconds=seconds)
    if reader not in usage.READERS:
        return Usage(cost=None, seconds=seconds, unread=(h.name,))
    reading = usage.read((reader,), str(cwd), started, ended)
    return usage.summarise(reading, table, seconds)


def _claude(stdout: str) -> tuple[Reading, Decimal | None] | None:
    """The entries (one per model) and Claude Code's own total of its result object."""
    data = _last_object(stdout)
    if data is None:
        return None
    reading = Reading()
    now = datetime.now(UTC)
    models = data.get("modelUsage")
    try:
        if isinstance(models, dict) and models:
            for name, figures in models.items():
                if not isinstance(figures, dict):
                    raise ValueError("not a model's usage")
                reading.entries.append(
                    Entry(
                        now,
                        _model(name),
                        usage.count(figures.get("inputTokens")),
                        usage.count(figures.get("outputTokens")),
                        usage.count(figures.get("cacheReadInputTokens")),
                        usage.count(figures.get("cacheCreationInputTokens")),
                        usage.amount(figures.get("costUSD")),
                    )
                )
        elif isinstance(data.get("usage"), dict):
            figures = data["usage"]
            reading.entries.append(
                Entry(
                    now,
                    "",
                    usage.count(figures.get("input_tokens")),
                    usage.count(figures.get("output_tokens")),
                    usage.count(figures.get("cache_read_input_tokens")),
                    usage.count(figures.get("cache_creation_input_tokens")),
                )
            )
        else:
            return None
    except ValueError:
        return None
    return reading, usage.amount(data.get("total_cost_usd"))


def _model(name: Any) -> str:
    """``claude-opus-4-8[1m]`` (the model with its context window) -> the model."""
    return str(name).split("[", 1)[0].strip()[:200]


def _codex(stdout: str, cwd: Path, started: datetime, ended: datetime) -> Reading | None:
    """One entry per completed turn; the model from codex's own session file."""
    reading = Reading()
    for line in stdout.splitlines():
        if '"turn.completed"' not in line:
            continue
        event = _object(line)
        figures = event.get("usage") if event and event.get("type") == "turn.completed" else None
        if not isinstance(figures, dict):
            continue
        try:
            given = usage.count(figures.get("input_tokens"))
            cached = min(usage.count(figures.get("cached_input_tokens")), given)
            reading.entries.append(
                Entry(
                    ended,
                    "",
                    given - cached,
                    usage.count(figures.get("output_tokens")),
                    cached,
                    usage.count(figures.get("cache_write_input_tokens")),
                )
            )
        except ValueError:
            reading.broken += 1
    if not reading.entries:
        return None
    session = usage.read(("codex",), str(cwd), started, ended)
    model = next((e.model for e in reversed(session.entries) if e.model), "")
    reading.entries = [e._replace(model=model) for e in reading.entries]
    return reading


def _last_object(stdout: str) -> dict[str, Any] | None:
    """The result object: the whole output, else its last line (a warning may come
    first, or stream-json's lines)."""
    whole = _object(stdout.strip())
    if whole is not None:
        return whole
    lines = [line for line in stdout.splitlines() if line.strip()]
    return _object(lines[-1]) if lines else None


def _object(text: str) -> dict[str, Any] | None:
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, dict) else None
