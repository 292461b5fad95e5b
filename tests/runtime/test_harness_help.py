"""The built-in harnesses' command lines against each tool's own `--help` text.

The tools need a network and a login to run, so their `--help` output (of the releases
named in ../shared/HARNESSES.md, installed from the npm registry) is kept as fixtures:
every option Orange passes exists, the prompt goes where the tool takes a first prompt
for its interactive mode, and the effort levels are the ones the tool accepts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from orange.run.headless import BUILTIN_EXEC
from orange.runtime.harness import BUILTINS, DEMO

HELP = Path(__file__).resolve().parent.parent / "fixtures" / "harness-help"
ROLES = ("worker", "reviewer", "reduced_worker")
PROMPT = "-looks like an option; @looks like a file"
SAFE = "Fix the bug"
# How each tool's interactive mode takes a first prompt, in its usage line.
FIRST_PROMPT = {
    "claude": "Usage: claude [options] [command] [prompt]",
    "codex": "Usage: codex [OPTIONS] [PROMPT]",
    "opencode": "--prompt        prompt to use",
    "pi": "pi [options] [@files...] [messages...]",
}
# The one-turn modes, which exit after the first answer: never for workers or reviewers.
ONE_TURN = {"claude": {"-p", "--print"}, "codex": {"exec", "e"}, "opencode": {"run"}, "pi": {"-p"}}
# The tools of others; `demo` is Orange's own scripted stand-in (tests/runtime/test_harness.py).
TOOLS = sorted(name for name in BUILTINS if name != DEMO)


def _help(tool: str) -> str:
    return (HELP / f"{tool}.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("name", TOOLS)
@pytest.mark.parametrize("role", ROLES)
def test_every_option_exists_and_the_mode_is_interactive(name: str, role: str) -> None:
    text = _help(name)
    assert FIRST_PROMPT[name] in text
    argv = BUILTINS[name].command(SAFE, role=role)  # type: ignore[arg-type]
    for arg in argv[1:]:
        assert arg not in ONE_TURN[name], argv
        if arg.startswith("--") and arg != "--":
            option = arg.split("=", 1)[0]
            assert re.search(rf"(^|[\s,]){re.escape(option)}([\s,=]|$)", text, re.M), option


@pytest.mark.parametrize("name", ["claude", "codex"])
def test_a_prompt_that_looks_like_an_option_follows_the_end_of_options(name: str) -> None:
    argv = BUILTINS[name].command(PROMPT)
    assert argv[-2:] == ["--", PROMPT]


def test_opencode_takes_the_prompt_glued_to_its_option() -> None:
    assert BUILTINS["opencode"].command(PROMPT) == ["opencode", f"--prompt={PROMPT}"]


@pytest.mark.parametrize("name", ["claude", "pi"])
def test_the_effort_levels_are_the_ones_the_tool_accepts(name: str) -> None:
    harness = BUILTINS[name]
    assert harness.effort_flag is not None
    option = re.search(rf"^\s*{harness.effort_flag} <level>(.*)\n(.*)$", _help(name), re.M)
    assert option is not None
    words = option.group(1) + " " + option.group(2)
    listed = re.findall(r"\b(off|minimal|low|medium|high|xhigh|max)\b", words)
    assert tuple(listed) == harness.effort_levels


def test_codex_exec_takes_every_option_orange_passes() -> None:
    """`orange run` starts `codex exec`, which runs its tool calls in its own process
    (codex-cli 0.171.0 was seen neither starting nor joining the TUI's shared daemon)
    and refuses the TUI's `--no-daemon`."""
    text = _help("codex-exec")
    assert "Usage: codex exec [OPTIONS] [PROMPT]" in text
    argv = BUILTIN_EXEC["codex"].argv
    assert argv[:2] == ("codex", "exec")
    for arg in argv[2:]:
        if arg.startswith("--") and arg != "--":
            assert re.search(rf"(^|[\s,]){re.escape(arg)}([\s,=]|$)", text, re.M), arg
    assert "--no-daemon" not in text
