"""The typer-free fast path for `task update` / `task list` means what typer means."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer.main

from orange.cli import coercion, fast, main
from orange.cli.fast import fast_command
from orange.cli.main import build_app
from orange.store import layout
from tests.conftest import Cli, git, make_repo


@pytest.mark.parametrize(
    ("args", "fast"),
    [
        (["task", "update", "abc", "--summary", "x"], True),
        (["task", "update", "--status", "working", "--json"], True),
        (["task", "update", "abc", "--branch="], True),
        (["task", "list", "--json", "--all"], True),
        (["task", "update", "abc", "--help"], False),
        (["task", "update", "abc", "--summary"], False),
        (["task", "update", "abc", "--summary", "a", "--summary", "b"], False),
        (["task", "update", "a", "b", "--summary", "x"], False),
        (["task", "list", "--bogus"], False),
        (["task", "show", "abc"], True),
        (["task", "show", "--json", "--project", "p"], True),
        (["task", "show", "abc", "--lines", "3"], False),
        (["task", "log", "abc"], False),
        (["sync"], True),
        (["sync", "upstream", "--json", "--project", "p"], True),
        (["sync", "--setup"], True),
        (["sync", "a", "b"], False),
        (["sync", "--help"], False),
        (["dashboard"], True),
        (["dashboard", "--project=p", "--all-projects", "--exit-on-attach"], True),
        (["dashboard", "--project"], False),
        (["dashboard", "proj"], False),
        (["dashboard", "--help"], False),
        (["hook-impl", "update", "refs/orange/tasks", "0" * 40, "1" * 40], True),
        (["hook-impl", "post-commit"], True),
        (["hook-impl"], False),
        (["hook-impl", "--help"], False),
        (["hook-impl", "pre-commit", "--bogus"], False),
        (["monitor", "--once"], True),
        (["monitor", "--once", "--json"], False),
        (["monitor"], False),
    ],
    ids=[
        "update-summary",
        "update-status",
        "adopt-branch",
        "list",
        "help",
        "missing-value",
        "repeated",
        "two-ids",
        "unknown-option",
        "show",
        "show-options",
        "show-unknown-option",
        "other-command",
        "sync",
        "sync-options",
        "sync-setup",
        "sync-two-remotes",
        "sync-help",
        "dashboard",
        "dashboard-options",
        "dashboard-missing-value",
        "dashboard-argument",
        "dashboard-help",
        "hook",
        "hook-no-args",
        "hook-no-name",
        "hook-help",
        "hook-option",
        "monitor-once",
        "monitor-once-json",
        "monitor-loop",
    ],
)
def test_fast_path_takes_only_what_it_fully_understands(args: list[str], fast: bool) -> None:
    assert (fast_command(args) is not None) is fast


def test_fast_and_typer_paths_agree(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)
    task_id = cli.ok("task", "create", "b", "first", "--no-spawn", "--json").json()["id"]
    fast = cli.ok("task", "update", task_id, "--summary", "via fast", "--json").json()
    typer_path = cli.ok(
        "task", "update", task_id, "--summary=via typer", "--project", "proj", "--json"
    ).json()
    assert fast["summary"] == "via fast" and typer_path["summary"] == "via typer"
    bad = cli("task", "update", task_id, "--summary", "x", "--bogus")
    assert bad.code == 2  # typer's usage error, not a silent fast-path guess
    listed = cli.ok("task", "list", "--json").json()
    assert [t["summary"] for t in listed["tasks"]] == ["via typer"]


@pytest.mark.parametrize(
    ("args", "code"),
    # show 1: no task named, outside a worktree; dashboard 1: it needs a terminal
    [(["task", "list", "--json"], 0), (["task", "show", "--json"], 1), (["dashboard"], 1),
     (["monitor", "--once"], 0)],
    ids=["list", "show", "dashboard", "monitor-once"],
)  # fmt: skip
def test_fast_path_does_not_import_typer(repo: Path, cli: Cli, args: list[str], code: int) -> None:
    cli.ok("project", "add", cwd=repo)
    probe = (
        "import sys; from orange.cli.main import run\n"
        f"code = run({args!r})\n"
        "print(json.dumps({'code': code, 'typer': 'typer' in sys.modules}))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", "import json\n" + probe],
        cwd=repo,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {"code": code, "typer": False}


def _typer_command(*path: str) -> Any:
    """The click command typer builds for ``orange PATH...``."""
    import typer.main

    command: Any = typer.main.get_command(build_app())
    for name in path:
        command = command.commands[name]
    return command


@pytest.mark.parametrize(
    ("path", "table", "positionals"),
    [(("task", "update"), fast._UPDATE, 1), (("task", "list"), fast._LIST, 0),
     (("task", "show"), fast._SHOW, 1), (("sync",), fast._SYNC, 1),
     (("dashboard",), fast._DASHBOARD, 0)],
    ids=["update", "list", "show", "sync", "dashboard"],
)  # fmt: skip
def test_fast_option_tables_match_the_typer_commands(
    path: tuple[str, ...], table: dict[str, bool], positionals: int
) -> None:
    command = _typer_command(*path)
    takes_value = {
        opt: not param.is_flag
        for param in command.params
        if param.param_type_name == "option"
        for opt in param.opts
    }
    assert {opt: takes_value.get(opt) for opt in table} == table
    arguments = [p for p in command.params if p.param_type_name == "argument"]
    assert len(arguments) == positionals


TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)")


def _run_both_ways(
    cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> list[tuple[int, str, str, str]]:
    """Run ``args`` from the same tasks ref on the fast path, then on typer's; each run's
    exit code, stdout, stderr and resulting ref tree (timestamps masked)."""
    before = git(repo, "rev-parse", layout.TASKS_REF).strip()
    typer_runs: list[list[str]] = []
    real_run_typer = main._run_typer

    def counting_run_typer(argv: list[str]) -> int:
        typer_runs.append(argv)
        return real_run_typer(argv)

    monkeypatch.setattr(main, "_run_typer", counting_run_typer)
    outcomes = []
    for use_fast in (True, False):
        # git's hooks stay out of it: the ref goes back without any reaction
        git(repo, "-c", "core.hooksPath=/dev/null", "update-ref", layout.TASKS_REF, before)
        if not use_fast:
            monkeypatch.setattr(main, "fast_command", lambda argv: None)
        # outside the project unless the arguments do not name it
        result = cli(*args, cwd=repo.parent if "--project" in args else repo)
        tree = git(repo, "ls-tree", "-r", f"{layout.TASKS_REF}^{{tree}}")
        files = "".join(git(repo, "cat-file", "-p", line.split()[2]) for line in tree.splitlines())
        outcomes.append((result.code, TIME.sub("T", result.out), result.err, TIME.sub("T", files)))
        assert len(typer_runs) == (0 if use_fast else 1)  # the path it was meant to take
    return outcomes


@pytest.mark.parametrize(
    "args",
    [
        ["task", "update", "{id}", "--summary", "new words"],
        ["task", "update", "{id}", "--summary=inline", "--json"],
        ["task", "update", "{id}", "--branch", "renamed", "--project", "proj"],
        ["task", "update", "{id}", "--status", "cancelled"],
        ["task", "update", "{id}", "--status", "nowhere"],
        ["task", "update", "nosuchtask", "--summary", "x"],
        ["task", "list"],
        ["task", "list", "--json", "--all", "--body"],
        ["task", "list", "--status", "pending", "--all-projects"],
        ["task", "list", "--project", "proj", "--json"],
        ["task", "show", "{id}"],
        ["task", "show", "{id}", "--json", "--project", "proj"],
        ["task", "show", "nosuchtask", "--json"],
        ["dashboard", "--project", "nope"],
        ["dashboard", "--all-projects", "--exit-on-attach"],
        ["monitor", "--once"],
    ],
    ids=[
        "summary",
        "inline-json",
        "branch-project",
        "status",
        "bad-status",
        "no-task",
        "list",
        "list-json",
        "list-status",
        "list-project",
        "show",
        "show-json-project",
        "show-no-task",
        "dashboard-no-project",
        "dashboard-no-terminal",
        "monitor-once",
    ],
)
def test_fast_and_typer_paths_give_the_same_result(
    cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    cli.ok("project", "add", cwd=repo)
    task_id = cli.ok("task", "create", "b", "first", "--no-spawn", "--json").json()["id"]
    cli.ok("task", "create", "other", "second", "--no-spawn")
    elsewhere = make_repo(repo.parent / "elsewhere")  # a second project: --project matters
    cli.ok("project", "add", cwd=elsewhere)
    cli.ok("task", "create", "b", "elsewhere", "--no-spawn", cwd=elsewhere)
    args = [task_id if a == "{id}" else a for a in args]
    assert fast.fast_command(args) is not None
    fast_outcome, typer_outcome = _run_both_ways(cli, repo, monkeypatch, args)
    assert fast_outcome == typer_outcome


@pytest.mark.parametrize(
    "args",
    [
        ["hook-impl", "update", "refs/heads/feature", "0" * 40, "1" * 40],
        ["hook-impl", "update", "refs/orange/other", "0" * 40, "1" * 40],
        ["hook-impl", "update", "refs/orange/tasks", "1" * 40, "0" * 40],
        ["hook-impl", "update", "refs/orange/tasks"],
        ["hook-impl", "no-such-hook", "x"],
    ],
    ids=["other-branch", "other-orange-ref", "tasks-deleted", "too-few-args", "unknown-hook"],
)
def test_a_hook_gives_the_same_exit_code_and_words_both_ways(
    cli: Cli, repo: Path, monkeypatch: pytest.MonkeyPatch, args: list[str]
) -> None:
    """Git runs `orange hook-impl NAME ARGS` for every commit, merge and push in a
    project: the fast path answers as typer's command does, exit code included."""
    cli.ok("project", "add", cwd=repo)
    cli.ok("task", "create", "b", "first", "--no-spawn")
    assert fast.fast_command(args) is not None
    fast_outcome, typer_outcome = _run_both_ways(cli, repo, monkeypatch, args)
    assert fast_outcome == typer_outcome
    assert (fast_outcome[0] == 0) is (args[2:3] == ["refs/heads/feature"]), fast_outcome


# Values as the parser hands them over: strings from the command line (well-formed or
# not), flags' booleans, a repeated option's tuple.
SAMPLES: dict[object, list[object]] = {
    str: ["x", "", " a b ", "-", "ünï", "12"],
    int: ["0", "12", "-3", "007", " 5", "1_0", "x", "1.0", "", "+4", "-", "--1", "\u0663"],
    Path: ["a/b", "", ".", "~/x", "/abs/"],
    bool: [True, False, None],
    list[str]: [("a", "b"), (), ["x"], ("",)],
}
WELL_FORMED = {str: "x", int: "12", Path: "a/b", bool: True, list[str]: ("a", "b")}


def _typer_params(command: Any) -> Any:
    yield command, command.params
    for sub in getattr(command, "commands", {}).values():
        yield from _typer_params(sub)


def _outcome(converter: Any, param: Any, ctx: Any, value: object) -> tuple[str, object]:
    try:
        return "value", converter.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # typer's own error, compared as text
        return type(exc).__name__, str(exc)


def test_plain_converters_give_what_typers_pydantic_gives() -> None:
    """Every parameter of every command: the plain converter (`orange.cli.coercion`)
    turns each sample into what typer's pydantic adapter turns it into, and hands a value
    it does not take to typer's converter (the same words on an error)."""
    seen = set()
    for command, params in _typer_params(typer.main.get_command(build_app())):
        ctx = command.context_class(command)
        for param in params:
            annotation = param.type_descriptor.annotation
            seen.add(annotation)
            assert annotation in coercion.PLAIN, f"{param.name}: {annotation} is not plain"
            typer_converter = param.get_runtime_param()
            assert not isinstance(typer_converter, coercion._Plain)
            many = param.multiple or param.nargs == -1
            kind = list[str] if many else annotation
            plain = coercion._Plain(annotation)
            for value in SAMPLES[kind]:
                want = _outcome(typer_converter, param, ctx, value)
                param._runtime_param = plain  # what coercion.plain installs
                got = _outcome(plain, param, ctx, value)
                assert got == want, (command.name, param.name, value)
                param._runtime_param = typer_converter
            assert plain.convert(WELL_FORMED[kind], many) is not None
    assert seen == set(coercion.PLAIN)  # each converter is exercised by some option


def test_a_typer_command_loads_no_pydantic(repo: Path, cli: Cli) -> None:
    """Only a value the plain converters do not take (here a malformed integer) loads
    pydantic, for typer's own error."""
    cli.ok("project", "add", cwd=repo)
    probe = "import sys; from orange.cli.main import run; run(sys.argv[1:]); "
    probe += "print('pydantic' in sys.modules)"
    cases = {
        ("task", "show", "nope", "--json"): "False",
        ("monitor", "status", "--json"): "False",
        ("task", "peek", "nope", "--lines", "7"): "False",
        ("task", "peek", "nope", "--lines", "x"): "True",
    }
    for args, loaded in cases.items():
        out = subprocess.run(
            [sys.executable, "-c", probe, *args], cwd=repo, capture_output=True, text=True
        )
        assert out.stdout.strip().splitlines()[-1] == loaded, (args, out.stderr)
