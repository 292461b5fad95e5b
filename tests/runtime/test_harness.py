"""The harness table: argv shapes, user harnesses from config, resolution order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import NamedTuple

import pytest

from orange.errors import InvalidInput
from orange.home import orange_home
from orange.runtime.harness import (
    BUILTINS,
    EXCLUDES,
    ORANGE_PERMISSIONS,
    installed_names,
    load_harnesses,
    resolve,
    review_name,
)
from tests.conftest import git, make_repo

PROMPT = '# Task: x\nsay "hi"; $(rm -rf /) `id`\n🍊 end;'


def write_config(text: str) -> Path:
    path = orange_home() / "config.yml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def bin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty PATH of our own; `fake(name)` puts an executable on it."""
    path = tmp_path / "bin"
    path.mkdir()
    monkeypatch.setenv("PATH", str(path))
    return path


def fake(bin_dir: Path, *names: str) -> None:
    for name in names:
        exe = bin_dir / name
        exe.write_text("#!/bin/sh\nexit 0\n")
        exe.chmod(0o755)


class Shape(NamedTuple):
    harness: str
    role: str
    effort: str | None
    argv: list[str]


SHAPES = [
    Shape("claude", "worker", None, ["claude", "--dangerously-skip-permissions", "--", PROMPT]),
    Shape(
        "claude",
        "reviewer",
        None,
        [
            "claude",
            "--dangerously-skip-permissions",
            "--disallowedTools",
            "Bash(gh pr review:*)",
            "Bash(gh pr comment:*)",
            "--",
            PROMPT,
        ],
    ),
    Shape(
        "claude",
        "reduced_worker",
        "high",
        ["claude", "--effort", "high", "--dangerously-skip-permissions", "--", PROMPT],
    ),
    Shape("pi", "worker", "xhigh", ["pi", "--thinking", "xhigh", PROMPT]),
    Shape("opencode", "reviewer", None, ["opencode", f"--prompt={PROMPT}"]),
    Shape(
        "codex",
        "worker",
        None,
        [
            "codex",
            "--no-daemon",
            "-c",
            "allow_login_shell=false",
            "--dangerously-bypass-approvals-and-sandbox",
            "--dangerously-bypass-hook-trust",
            "--",
            PROMPT,
        ],
    ),
    Shape(
        "codex",
        "reduced_worker",
        "high",
        [
            "codex",
            "-c",
            "model_reasoning_effort=high",
            "--no-daemon",
            "-c",
            "allow_login_shell=false",
            "--sandbox",
            "workspace-write",
            "--",
            PROMPT,
        ],
    ),
]


@pytest.mark.parametrize("shape", SHAPES, ids=[f"{s.harness}-{s.role}-{s.effort}" for s in SHAPES])
def test_builtin_argv_shapes(shape: Shape) -> None:
    argv = BUILTINS[shape.harness].command(PROMPT, role=shape.role, effort=shape.effort)  # type: ignore[arg-type]
    assert argv == shape.argv
    assert sum(PROMPT in arg for arg in argv) == 1  # one argv element, never split


def test_prompt_is_substituted_literally() -> None:
    tricky = "{effort} {prompt} {0} %s"
    assert BUILTINS["pi"].command(tricky) == ["pi", tricky]


def test_empty_prompt_starts_the_bare_agent() -> None:
    assert BUILTINS["claude"].command("") == ["claude", "--dangerously-skip-permissions", "--"]
    assert BUILTINS["opencode"].command("") == ["opencode"]


def test_unknown_effort_level_is_refused() -> None:
    with pytest.raises(InvalidInput, match=r'no effort level "ultra".*low, medium'):
        BUILTINS["claude"].command("x", effort="ultra")


def test_codex_effort_is_a_checked_config_override() -> None:
    codex = BUILTINS["codex"]
    assert codex.command("x", effort="xhigh")[1:3] == ["-c", "model_reasoning_effort=xhigh"]
    with pytest.raises(InvalidInput, match=r'"codex" has no effort level "max"'):
        codex.check_effort("max")
    with pytest.raises(InvalidInput, match=r'"opencode" has no effort setting'):
        BUILTINS["opencode"].check_effort("high")


def test_excludes_cover_every_agent_file() -> None:
    assert set(EXCLUDES) >= {"TASK.md", ".claude/", ".pi/", ".codex/", ".opencode/"}
    assert {"opencode.json", ".orange-task"} <= set(EXCLUDES)
    for harness in BUILTINS.values():
        assert set(harness.excludes) <= set(EXCLUDES)


def test_user_defined_harness_from_config(bin_dir: Path) -> None:
    write_config(
        "harnesses:\n"
        "  mine:\n"
        '    command: [my-agent, --yes, "{prompt}"]\n'
        '    review_command: [my-agent, --read-only, "--task={prompt}"]\n'
        "    effort_flag: --level\n"
        "    effort_levels: [low, high]\n"
    )
    mine = load_harnesses()["mine"]
    assert mine.command(PROMPT) == ["my-agent", "--yes", PROMPT]
    assert mine.command(PROMPT, role="reviewer") == ["my-agent", "--read-only", f"--task={PROMPT}"]
    assert mine.command(PROMPT, role="reduced_worker", effort="low") == [
        "my-agent", "--level", "low", "--yes", PROMPT,
    ]  # fmt: skip
    assert set(BUILTINS) < set(load_harnesses())
    fake(bin_dir, "my-agent")
    assert resolve("mine") == mine


class BadConfig(NamedTuple):
    text: str
    message: str


BAD_CONFIGS = [
    BadConfig("harnesses: [a]\n", "harnesses: must be a mapping"),
    BadConfig(
        "harnesses:\n  mine: {command: my-agent}\n",
        "harnesses.mine.command: must be a non-empty list",
    ),
    BadConfig(
        "harnesses:\n  mine: {command: []}\n", "harnesses.mine.command: must be a non-empty list"
    ),
    BadConfig(
        "harnesses:\n  mine: {command: [a]}\n", 'harnesses.mine.command: must contain "{prompt}"'
    ),
    BadConfig(
        'harnesses:\n  mine: {command: [a, "{prompt}"], review_command: x}\n',
        "harnesses.mine.review_command: must be a non-empty list",
    ),
    BadConfig('harnesses:\n  mine: {command: [a, "{prompt}"], comand: 1}\n', "unknown key comand"),
    BadConfig('harnesses:\n  "My Agent": {command: [a, "{prompt}"]}\n', "harness name"),
]


@pytest.mark.parametrize("case", BAD_CONFIGS, ids=[c.message for c in BAD_CONFIGS])
def test_invalid_config_names_file_and_key(case: BadConfig) -> None:
    path = write_config(case.text)
    with pytest.raises(InvalidInput) as caught:
        load_harnesses()
    assert str(path) in caught.value.message
    assert case.message in caught.value.message


def test_unknown_and_missing_harnesses(bin_dir: Path) -> None:
    with pytest.raises(
        InvalidInput, match=r'unknown harness "x" \(known: claude, pi, opencode, codex, demo\)'
    ):
        resolve("x")
    with pytest.raises(InvalidInput, match='harness "codex" is not installed: "codex" not found'):
        resolve("codex")


class Order(NamedTuple):
    on_path: tuple[str, ...]
    expected: str


ORDERS = [
    Order(("claude", "pi", "opencode", "codex"), "claude"),
    Order(("codex", "opencode", "pi"), "pi"),
    Order(("codex", "opencode"), "opencode"),
    Order(("codex", "zz-agent"), "codex"),
    Order(("zz-agent", "aa-agent"), "zz"),
]


@pytest.mark.parametrize("order", ORDERS, ids=["+".join(o.on_path) for o in ORDERS])
def test_default_order(bin_dir: Path, order: Order) -> None:
    write_config(
        "harnesses:\n"
        '  zz: {command: [zz-agent, "{prompt}"]}\n'
        '  aa: {command: [aa-agent, "{prompt}"]}\n'
    )
    fake(bin_dir, *order.on_path)
    assert resolve(None).name == order.expected


def test_no_harness_installed_says_how_to_configure_one(bin_dir: Path) -> None:
    with pytest.raises(InvalidInput) as caught:
        resolve(None)
    assert "no coding agent found" in caught.value.message
    assert caught.value.hint and "harnesses:" in caught.value.hint
    assert "--harness demo" in caught.value.hint


def test_the_demo_stand_in_runs_only_when_named(bin_dir: Path) -> None:
    """`demo` needs nothing on PATH (it is this Python), so it must never be the harness a
    task gets by default: a task meant for a real agent would quietly get a script."""
    demo = resolve("demo")
    assert demo.installed()
    argv = demo.command(PROMPT)
    assert argv[1:4] == ["-P", "-m", "orange.demo_agent"] and argv[-2:] == ["--", PROMPT]
    assert "--plan-by" in argv and "--role" in demo.command(PROMPT, role="reviewer")
    with pytest.raises(InvalidInput, match="no coding agent found"):
        resolve(None)


def test_the_demo_stand_in_is_offered_last(bin_dir: Path) -> None:
    write_config('harnesses:\n  zz: {command: [zz-agent, "{prompt}"]}\n')
    fake(bin_dir, "zz-agent", "codex")
    assert installed_names() == ["codex", "zz", "demo"]


def test_review_name_precedence() -> None:
    assert review_name(None, "claude") == "claude"
    write_config("review_harness: codex\n")
    assert review_name(None, "claude") == "codex"
    assert review_name("pi", "claude") == "pi"
    write_config("review_harness: [x]\n")
    with pytest.raises(InvalidInput, match="review_harness"):
        review_name(None, "claude")


def test_setup_claude_merges_local_settings(tmp_path: Path) -> None:
    worktree = make_repo(tmp_path / "wt")
    settings = worktree / ".claude" / "settings.local.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"permissions": {"allow": ["Read", "Bash(orange:*)"]}, "x": 1}))
    assert BUILTINS["claude"].setup(worktree) == [settings]
    data = json.loads(settings.read_text())
    # the agent's `orange` commands, no longer every one (issue 24, finding 4)
    assert data == {"permissions": {"allow": ["Read", *ORANGE_PERMISSIONS]}, "x": 1}
    assert "Bash(orange task show:*)" in ORANGE_PERMISSIONS
    assert not any("workflow" in rule or "project" in rule for rule in ORANGE_PERMISSIONS)
    assert BUILTINS["claude"].setup(worktree) == []  # already there


def test_setup_never_clobbers_a_tracked_file(tmp_path: Path) -> None:
    worktree = make_repo(tmp_path / "wt")
    (worktree / "opencode.json").write_text('{"model": "mine"}\n')
    git(worktree, "add", "opencode.json")
    git(worktree, "commit", "-q", "-m", "opencode config")
    assert BUILTINS["opencode"].setup(worktree) == []
    assert (worktree / "opencode.json").read_text() == '{"model": "mine"}\n'


def test_setup_opencode_allows_everything(tmp_path: Path) -> None:
    worktree = make_repo(tmp_path / "wt")
    assert BUILTINS["opencode"].setup(worktree) == [worktree / "opencode.json"]
    assert json.loads((worktree / "opencode.json").read_text())["permission"] == "allow"
    assert BUILTINS["pi"].setup(worktree) == []


def test_reduced_worker_command_and_its_old_name(capsys: pytest.CaptureFixture[str]) -> None:
    write_config(
        "harnesses:\n"
        "  new:\n"
        '    command: [a, "{prompt}"]\n'
        '    reduced_worker_command: [a, --sandboxed, "{prompt}"]\n'
        "  old:\n"
        '    command: [a, "{prompt}"]\n'
        '    respawn_command: [a, --sandboxed, "{prompt}"]\n'
    )
    for _ in range(3):  # loaded many times by one command: warned once
        table = load_harnesses()
    for name in ("new", "old"):
        assert table[name].command("p", role="reduced_worker") == ["a", "--sandboxed", "p"]
        assert table[name].command("p", role="reviewer") == ["a", "p"]
    err = capsys.readouterr().err
    assert err.splitlines() == [
        f"warning: {orange_home() / 'config.yml'}: harnesses.old.respawn_command is "
        "deprecated: rename it to reduced_worker_command (same meaning)"
    ]


def test_old_and_new_name_together_are_refused() -> None:
    write_config(
        "harnesses:\n"
        "  both:\n"
        '    command: [a, "{prompt}"]\n'
        '    respawn_command: [a, "{prompt}"]\n'
        '    reduced_worker_command: [a, "{prompt}"]\n'
    )
    with pytest.raises(InvalidInput, match="both respawn_command and reduced_worker_command"):
        load_harnesses()
