"""What one `orange run` invocation used (`orange.run.spending`), from what the real
programs print: `claude -p --output-format json` and `codex exec --json` (samples from
Claude Code 2.1.197 and codex-cli 0.171.0 in tests/fixtures/usage), else the session
files a harness's reader names, else unknown."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from orange.engine.ledger import usage_messages
from orange.home import orange_home
from orange.ops.doctor import check
from orange.run.headless import BUILTIN_EXEC, ExecHarness, Invocation
from orange.run.spending import usage_of

FIXTURES = Path(__file__).parents[1] / "fixtures" / "usage"
STARTED = datetime(2026, 11, 27, 14, 0, tzinfo=UTC)
ENDED = datetime(2026, 11, 27, 14, 5, tzinfo=UTC)


def invocation(stdout: str) -> Invocation:
    return Invocation(stdout, 0, Path("log"), STARTED, ENDED)


def test_claude_print_json_counts_every_model_call_at_its_own_cost(tmp_path: Path) -> None:
    found = usage_of(
        BUILTIN_EXEC["claude"], invocation((FIXTURES / "claude/print.json").read_text()), tmp_path
    )
    # modelUsage (two calls), not `usage` (the main loop's one); Claude Code's own cost.
    assert (found.tokens_in, found.tokens_out, found.cache) == (2400, 160, 2400)
    assert found.cost == Decimal("0.02065")
    assert found.model == "claude-opus-4-8"  # "[1m]", its context window, dropped
    assert found.seconds == 300


def test_codex_exec_json_is_priced_by_the_model_its_session_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worktree = tmp_path / "wt"
    worktree.mkdir()
    codex_home = tmp_path / "codex"
    monkeypatch.setenv("CODEX_HOME", str(codex_home))
    rollout = codex_home / "sessions/2026/11/27/rollout-2026-11-27T14-01-46-1.jsonl"
    rollout.parent.mkdir(parents=True)
    text = (FIXTURES / "codex/rollout.jsonl").read_text()
    rollout.write_text(text.replace("/home/user/project", str(worktree)))
    stdout = (FIXTURES / "codex/exec.jsonl").read_text()
    found = usage_of(BUILTIN_EXEC["codex"], invocation(stdout), worktree)
    assert (found.tokens_in, found.tokens_out, found.cache) == (3600, 240, 2700)
    assert found.model == "scripted-model" and found.cost is None  # no price: unknown
    orange_home().mkdir(parents=True, exist_ok=True)
    (orange_home() / "config.yml").write_text(
        "prices:\n  scripted-model: {input: 1, output: 10, cache_read: 0.1}\n"
    )
    priced = usage_of(BUILTIN_EXEC["codex"], invocation(stdout), worktree)
    assert priced.cost == Decimal("0.00627")  # 3600 x $1 + 240 x $10 + 2700 x $0.10 a million


def test_a_harness_that_names_no_reader_costs_unknown(tmp_path: Path) -> None:
    orange_home().mkdir(parents=True, exist_ok=True)
    (orange_home() / "config.yml").write_text(
        "harnesses:\n"
        "  mine: {command: [mine, '{prompt}'], exec_command: [mine, '{prompt}']}\n"
        "  script: {command: [s, '{prompt}'], exec_command: [s, '{prompt}'], usage: none}\n"
    )
    mine = usage_of(ExecHarness("mine", ("mine",), "plain"), invocation("done"), tmp_path)
    assert mine.cost is None and mine.unread == ("mine",) and mine.empty
    script = usage_of(ExecHarness("script", ("s",), "plain"), invocation("done"), tmp_path)
    assert script.cost == 0 and not script.unread


def test_an_envelope_without_usage_falls_back_to_the_session_files(tmp_path: Path) -> None:
    for stdout in ("not json", '{"result": "x"}', '{"modelUsage": {"m": 7}}', ""):
        found = usage_of(BUILTIN_EXEC["claude"], invocation(stdout), tmp_path)
        assert found.empty and found.cost == 0  # nothing there: nothing invented


def test_a_wrong_price_table_is_said_and_the_shipped_one_used(tmp_path: Path) -> None:
    orange_home().mkdir(parents=True, exist_ok=True)
    (orange_home() / "config.yml").write_text("prices:\n  claude-opus-4-8: {input: lots}\n")
    text = (FIXTURES / "claude/print.json").read_text()
    stdout = text.replace('"total_cost_usd":0.02065,', "").replace('"costUSD":0.02065,', "")
    found = usage_of(BUILTIN_EXEC["claude"], invocation(stdout), tmp_path)
    assert found.cost == Decimal("0.02065")  # the shipped price of claude-opus-4-8
    said = usage_messages(found, {})
    assert len(said) == 1 and "prices.claude-opus-4-8.input: must be dollars per million" in said[0]
    assert said[0].endswith("; the shipped prices were used")
    doctor = [f for f in check(tmp_path) if f.check == "prices"]
    assert [(f.level, f.fix) for f in doctor] == [("warn", "correct `prices:` in config.yml")]
