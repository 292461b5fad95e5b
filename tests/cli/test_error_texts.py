"""Error lines read as one sentence: a hint never nests or stacks parentheses."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import pytest

from orange.errors import InvalidInput
from tests.conftest import Cli, make_repo, run_orange


def _nesting(text: str) -> int:
    """The deepest nesting of parentheses in ``text``."""
    depth = deepest = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        deepest = max(deepest, depth)
    return deepest


class Case(NamedTuple):
    id: str
    args: tuple[str, ...]
    says: str


CASES = [
    Case(
        "no-task-id",
        ("task", "respawn"),
        "no task id given; pass the task id (see `orange task list`)",
    ),
    Case(
        "unknown-workflow",
        ("workflow", "show", "nope"),
        "(known: default, fresh-worker, minimal, run-subtask, self-review); ",
    ),
    Case(
        "bad-branch",
        ("task", "create", "a b", "s", "--no-spawn"),
        "is not a valid branch name; use ",
    ),
    Case("name-taken", ("project", "add", "--name", "proj"), "is already registered ("),
    Case("unknown-task", ("task", "respawn", "zzzz"), "no task 'zzzz'"),
    # Before: exit 0 and nothing printed, as if the agent had said nothing.
    Case("peek-no-lines", ("task", "peek", "zzzz", "--lines", "0"), "--lines must be at least 1"),
    # Before: exit 0 and empty figures or an empty pass, as if the filter had matched.
    Case(
        "stats-unknown-harness",
        ("stats", "--harness", "nope"),
        "unknown harness 'nope' (known: claude, codex, demo, opencode, pi)",
    ),
    Case(
        "monitor-unknown-task",
        ("monitor", "--once", "--task", "zzzz"),
        "no task 'zzzz' in any registered project",
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_error_lines_never_nest_parentheses(
    cli: Cli, repo: Path, tmp_path: Path, case: Case
) -> None:
    cli.ok("project", "add", cwd=repo)
    adding = case.args[:2] == ("project", "add")
    cwd = make_repo(tmp_path / "other") if adding else repo
    result = cli(*case.args, cwd=cwd)
    assert result.code == 1 and result.err.count("\n") == 1, result.err
    assert case.says in result.err
    assert "((" not in result.err and "))" not in result.err and ") (" not in result.err
    assert _nesting(result.err) <= 1, result.err


def test_a_monitor_filter_that_names_a_task_is_no_error(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    task_id = str(cli.ok("task", "create", "b", "s", "--no-spawn", "--json").json()["id"])
    assert cli.ok("monitor", "--once", "--task", task_id[:3], "--json").json()["checked"] == 0


def test_a_plain_hint_stays_in_parentheses() -> None:
    assert str(InvalidInput("bad", hint="do this")) == "bad (do this)"
    assert str(InvalidInput("bad (x)", hint="do this")) == "bad (x); do this"
    assert str(InvalidInput("bad", hint="do (this)")) == "bad; do (this)"


def test_an_argument_that_is_not_utf8_is_one_line_not_a_crash(tmp_path: Path) -> None:
    # Bytes 0xed 0xb2 0x80 (no UTF-8) reach Python as a lone surrogate.
    broken = b"s\xed\xb2\x80x".decode("utf-8", "surrogateescape")
    result = run_orange("task", "create", broken, "--no-spawn", cwd=tmp_path)
    assert (result.code, result.out) == (1, "")
    assert result.err == (
        "orange: argument 3 is not UTF-8 text (pass it as UTF-8 text, as a terminal types it)\n"
    )
