"""The usage readers (`orange.runtime.usage`): each program's session format, read for
one worktree in one window, and files that are cut short, huge or hostile."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from orange.runtime import harness, prices, usage
from orange.runtime.usage import claude_dir, pi_dir
from orange.store.task import Task

FIXTURES = Path(__file__).parent.parent / "fixtures" / "usage"
SINCE = datetime(2026, 11, 27, 13, 0, tzinfo=UTC)
UNTIL = datetime(2026, 11, 27, 15, 0, tzinfo=UTC)
WORKTREE = "/home/me/orange/workspaces/shop--1"
CAPTURED = "/home/user/project"  # the samples' working directory
# What the scripted model server reported on every call (tests/fixtures/usage/README.md).
CALL = (1200, 80, 900, 300)


def sample(name: str, cwd: str = WORKTREE) -> str:
    """A session file the real program wrote, as if it had run in ``cwd``."""
    return (FIXTURES / name).read_text().replace(CAPTURED, cwd)


def place_claude(home: Path, text: str, cwd: str = WORKTREE, name: str = "s1.jsonl") -> Path:
    path = home / ".claude" / "projects" / claude_dir(cwd) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def place_codex(home: Path, text: str, name: str = "rollout-2026-11-27T14-01-46-1.jsonl") -> Path:
    path = home / ".codex" / "sessions" / "2026" / "11" / "27" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def place_opencode(home: Path, directory: str = WORKTREE) -> Path:
    """opencode's store with the captured rows (its ``message`` table), the session in
    ``directory`` and one more session elsewhere with the same messages."""
    path = home / ".local" / "share" / "opencode" / "opencode.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE session (id TEXT PRIMARY KEY, project_id TEXT, directory TEXT)")
    db.execute(
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INTEGER, "
        "time_updated INTEGER, data TEXT NOT NULL)"
    )
    rows = [json.loads(line) for line in sample("opencode/message.jsonl").splitlines()]
    for session, where in (("ses_other", "/somewhere/else"), (rows[0]["session_id"], directory)):
        db.execute("INSERT INTO session VALUES (?, 'p1', ?)", (session, where))
        for row in rows:
            created = row["data"]["time"]["created"]
            db.execute(
                "INSERT INTO message VALUES (?, ?, ?, ?, ?)",
                (f"{session}-{row['id']}", session, created, created, json.dumps(row["data"])),
            )
    db.commit()
    db.close()
    return path


def read(home: Path, *readers: str, cwd: str = WORKTREE) -> usage.Reading:
    return usage.read(readers, cwd, SINCE, UNTIL, home=home, env={})


def total(reading: usage.Reading) -> tuple[int, int, int, int]:
    entries = reading.entries
    return (
        sum(e.tokens_in for e in entries),
        sum(e.tokens_out for e in entries),
        sum(e.cache_read for e in entries),
        sum(e.cache_write for e in entries),
    )


def calls(n: int, cache_write: bool = True) -> tuple[int, int, int, int]:
    tokens_in, tokens_out, cache_read, write = CALL
    return (n * tokens_in, n * tokens_out, n * cache_read, n * write if cache_write else 0)


# Each program's format, as the real program wrote it ---------------------------------
def test_claude_counts_what_the_model_reported(tmp_path: Path) -> None:
    place_claude(tmp_path, sample("claude/session.jsonl"))
    reading = read(tmp_path, "claude")
    assert total(reading) == calls(3)
    assert {e.model for e in reading.entries} == {"claude-opus-4-8"}
    assert reading.broken == 0


def test_claude_priced_as_claude_code_prices_it(tmp_path: Path) -> None:
    place_claude(tmp_path, sample("claude/session.jsonl"))
    result = usage.summarise(read(tmp_path, "claude"), prices.shipped())
    # `claude -p` reported $0.02065 for two such calls (claude/print.json): three cost
    # half as much again.
    reported = json.loads(sample("claude/print.json"))["total_cost_usd"]
    assert result.cost == Decimal(str(reported)) * 3 / 2
    assert (result.tokens_in, result.tokens_out, result.cache) == (3600, 240, 3600)
    assert result.model == "claude-opus-4-8"


def test_claude_counts_a_message_written_twice_once(tmp_path: Path) -> None:
    lines = sample("claude/session.jsonl").splitlines()
    first = json.loads(lines[1])
    partial = json.loads(lines[1])
    partial["message"]["usage"]["output_tokens"] = 5  # an earlier block of the message
    place_claude(tmp_path, "\n".join([json.dumps(partial), *lines]) + "\n")
    reading = read(tmp_path, "claude")
    assert total(reading) == calls(3)
    assert first["message"]["id"] == partial["message"]["id"]


def test_claude_reads_only_its_worktree_and_its_window(tmp_path: Path) -> None:
    place_claude(tmp_path, sample("claude/session.jsonl", "/home/me/other"), "/home/me/other")
    place_claude(tmp_path, sample("claude/session.jsonl"))
    late = usage.read(("claude",), WORKTREE, UNTIL, None, home=tmp_path, env={})
    assert late.entries == []
    assert total(read(tmp_path, "claude")) == calls(3)
    # A folder name two paths share ("a.b" and "a-b"): the lines' own cwd decides.
    twin = WORKTREE.replace("shop--1", "shop-.1")
    assert claude_dir(twin) == claude_dir(WORKTREE)
    assert read(tmp_path, "claude", cwd=twin).entries == []


def test_claude_config_dir_is_where_it_writes_when_set(tmp_path: Path) -> None:
    config = tmp_path / "elsewhere"
    path = config / "projects" / claude_dir(WORKTREE) / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(sample("claude/session.jsonl"))
    env = {"CLAUDE_CONFIG_DIR": str(config)}
    reading = usage.read(("claude",), WORKTREE, SINCE, UNTIL, home=tmp_path, env=env)
    assert total(reading) == calls(3)


def test_codex_counts_each_response_as_soon_as_it_is_written(tmp_path: Path) -> None:
    place_codex(tmp_path, sample("codex/rollout.jsonl"))
    reading = read(tmp_path, "codex")
    # codex's input includes the cached tokens; OpenAI's wire format has no cache write.
    assert total(reading) == calls(3, cache_write=False)
    assert [e.model for e in reading.entries] == ["scripted-model"] * 3
    # codex writes a response's `token_usage_record` at once, its running total
    # (`token_count`) only after the tool call the response asked for: a move made by
    # that tool call (the agent's `orange task update`) must count the response.
    cut = datetime(2026, 11, 27, 14, 1, 47, 100_000, tzinfo=UTC)  # the first call's tool runs
    first = usage.read(("codex",), WORKTREE, SINCE, cut, home=tmp_path, env={})
    rest = usage.read(("codex",), WORKTREE, cut, UNTIL, home=tmp_path, env={})
    assert total(first) == calls(1, cache_write=False)
    assert total(rest) == calls(2, cache_write=False)


def test_codex_without_response_records_counts_its_running_total(tmp_path: Path) -> None:
    # An older codex writes only the running totals: the window's is the last total in
    # it less the last one before it.
    lines = sample("codex/rollout.jsonl").splitlines(keepends=True)
    place_codex(tmp_path, "".join(line for line in lines if "token_usage_record" not in line))
    assert total(read(tmp_path, "codex")) == calls(3, cache_write=False)
    cut = datetime(2026, 11, 27, 14, 1, 47, 500_000, tzinfo=UTC)  # after two token counts
    later = usage.read(("codex",), WORKTREE, cut, UNTIL, home=tmp_path, env={})
    assert total(later) == calls(1, cache_write=False)


def test_codex_skips_a_session_of_another_directory(tmp_path: Path) -> None:
    place_codex(tmp_path, sample("codex/rollout.jsonl", "/home/me/other"))
    assert read(tmp_path, "codex").entries == []


def test_pi_counts_and_its_zero_cost_is_no_cost(tmp_path: Path) -> None:
    path = tmp_path / ".pi" / "agent" / "sessions" / pi_dir(WORKTREE) / "s.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text(sample("pi/session.jsonl"))
    reading = read(tmp_path, "pi")
    assert total(reading) == calls(3, cache_write=False)
    result = usage.summarise(reading, prices.shipped())
    assert result.cost is None and result.unpriced == ("scripted-model",)
    assert usage.summarise(reading, _with("scripted-model", "1")).cost == Decimal("0.00654")


def test_opencode_reads_its_store_for_the_worktree_only(tmp_path: Path) -> None:
    place_opencode(tmp_path)
    reading = read(tmp_path, "opencode")
    assert total(reading) == calls(1, cache_write=False)
    assert usage.summarise(reading, prices.shipped()).cost is None  # its cost is 0
    assert read(tmp_path, "opencode", cwd="/home/me/third").entries == []


def _with(model: str, dollars: str) -> prices.Table:
    base = prices.shipped()
    each = Decimal(dollars)
    return prices.Table(base.date, {**base.models, model: prices.Price(each, each, each, each)})


def test_unknown_model_tokens_recorded_cost_empty(tmp_path: Path) -> None:
    text = sample("claude/session.jsonl").replace("claude-opus-4-8", "mystery-1")
    place_claude(tmp_path, text)
    result = usage.summarise(read(tmp_path, "claude"), prices.shipped())
    assert result.cost is None
    assert result.unpriced == ("mystery-1",)
    assert result.tokens_in == 3600


def test_config_prices_override_and_extend(hermetic: Path) -> None:
    orange_home = hermetic / "orange"
    orange_home.mkdir()
    (orange_home / "config.yml").write_text(
        "prices:\n  mystery-1: {input: 1, output: 2}\n"
        "  claude-opus-4-8: {input: 0, output: 0, cache_read: 0, cache_write: 0}\n"
    )
    table = prices.table()
    assert table.find("mystery-1-preview") == prices.Price(
        Decimal(1), Decimal(2), Decimal(0), Decimal(0)
    )
    opus = table.find("anthropic/claude-opus-4-8")
    assert opus is not None and opus.output == 0
    (orange_home / "config.yml").write_text("prices:\n  x: {input: -1}\n")
    with pytest.raises(Exception, match=r"prices\.x\.input: must be dollars per million"):
        prices.table()


def test_a_harness_without_a_reader_is_named_not_skipped(hermetic: Path) -> None:
    orange_home = hermetic / "orange"
    orange_home.mkdir()
    (orange_home / "config.yml").write_text(
        "harnesses:\n"
        "  mine: {command: [mine, '{prompt}']}\n"
        "  script: {command: [script, '{prompt}'], usage: none}\n"
        "  wrapped: {command: [wrapped, '{prompt}'], usage: codex}\n"
    )

    def of(worker: str, reviewer: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        task = Task({"id": "t1", "harness": worker, "review_harness": reviewer}, "")
        return usage.readers_of(task)

    assert of("mine", "script") == ((), ("mine",))
    assert of("wrapped", "mine") == (("codex",), ("mine",))
    assert of("claude", "script") == (("claude",), ())
    bad = "harnesses:\n  x: {command: [x, '{prompt}'], usage: nine}\n"
    (orange_home / "config.yml").write_text(bad)
    with pytest.raises(Exception, match=r"usage: must name a built-in usage reader"):
        harness.load_harnesses()


# Cut short, huge, hostile -----------------------------------------------------------------
def test_a_truncated_line_is_one_broken_entry(tmp_path: Path) -> None:
    text = sample("claude/session.jsonl")
    place_claude(tmp_path, text[: len(text) - 40])  # the last line cut in the middle
    reading = read(tmp_path, "claude")
    assert reading.broken == 1
    assert total(reading) == calls(2)


def test_a_huge_file_is_read_from_its_end(tmp_path: Path) -> None:
    filler = json.dumps({"type": "user", "message": {"content": "x" * 1000}}) + "\n"
    text = filler * (usage.MAX_FILE // len(filler) + 10) + sample("claude/session.jsonl")
    place_claude(tmp_path, text)
    reading = read(tmp_path, "claude")
    assert total(reading) == calls(3)
    assert reading.broken == 1  # the line the cut fell in


def test_hostile_lines_are_skipped_and_counted(tmp_path: Path) -> None:
    good = sample("claude/session.jsonl")
    line = json.loads(good.splitlines()[-1])
    bad_count = dict(line, message=dict(line["message"], id="m3"))
    bad_count["message"]["usage"] = {"input_tokens": -5, "output_tokens": "lots"}
    deep = '{"usage": ' + "[" * 100_000 + "]" * 100_000 + "}"
    long_line = '{"usage": "' + "x" * (usage.MAX_LINE + 10) + '"}'
    no_time = dict(line, timestamp="yesterday", message=dict(line["message"], id="m4"))
    text = "\n".join([good.rstrip(), json.dumps(bad_count), deep, long_line, json.dumps(no_time)])
    place_claude(tmp_path, text + '\n\x00\xff garbage "usage"\n')
    reading = read(tmp_path, "claude")
    assert total(reading) == calls(3)
    assert reading.broken == 5


def test_an_unreadable_store_is_one_broken_entry(tmp_path: Path) -> None:
    path = tmp_path / ".local" / "share" / "opencode" / "opencode.db"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a database" * 100)
    reading = read(tmp_path, "opencode")
    assert (reading.entries, reading.broken) == ([], 1)


def test_hostile_codex_response_records_are_skipped_and_counted(tmp_path: Path) -> None:
    good = sample("codex/rollout.jsonl")
    record = json.loads(next(x for x in good.splitlines() if "token_usage_record" in x))
    payload = record["payload"]
    twice = json.dumps(record)  # the same response written again: counted once
    negative = dict(record, payload=dict(payload, response_id="r2", usage={"input_tokens": -1}))
    huge = dict(record, payload=dict(payload, response_id="r3", usage={"output_tokens": 10**13}))
    no_usage = dict(record, payload=dict(payload, response_id="r4", usage="lots"))
    no_time = dict(record, timestamp=12.5e99, payload=dict(payload, response_id="r5"))
    hostile = [twice, *(json.dumps(x) for x in (negative, huge, no_usage, no_time))]
    place_codex(tmp_path, good + "\n".join(hostile) + "\n")
    reading = read(tmp_path, "codex")
    assert total(reading) == calls(3, cache_write=False)
    assert reading.broken == 4


def _place_pi(home: Path, text: str) -> None:
    path = home / ".pi" / "agent" / "sessions" / pi_dir(WORKTREE) / "s.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


Counts = tuple[int, int, int, int]
# The sample, where it goes, what it holds, what is left when cut short.
PLACES: dict[str, tuple[str, Callable[[Path, str], object], Counts, Counts]] = {
    "claude": ("claude/session.jsonl", place_claude, calls(3), calls(2)),
    "codex": ("codex/rollout.jsonl", place_codex, calls(3, False), calls(3, False)),
    "pi": ("pi/session.jsonl", _place_pi, calls(3, cache_write=False), calls(2, False)),
}


@pytest.mark.parametrize("program", sorted(PLACES))
def test_each_format_cut_short_or_huge_is_read_to_what_it_holds(
    tmp_path: Path, program: str
) -> None:
    name, place, whole, left = PLACES[program]
    text = sample(name)
    # The program was writing its last line (codex: its turn's end; the others: a
    # call): that line is one broken entry, the rest counts.
    place(tmp_path / "cut", text[: len(text) - 40])
    reading = read(tmp_path / "cut", program)
    assert (total(reading), reading.broken) == (left, 1)
    # A file larger than Orange reads: its end is read, the line the cut fell in broken.
    filler = json.dumps({"type": "filler", "payload": "x" * 1000, "usage": None}) + "\n"
    place(tmp_path / "huge", filler * (usage.MAX_FILE // len(filler) + 10) + text)
    huge = read(tmp_path / "huge", program)
    assert (total(huge), huge.broken) == (whole, 1)
