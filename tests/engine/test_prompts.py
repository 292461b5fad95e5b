"""Prompt building: literal, single-pass substitution of the fixed variables."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from orange.engine.loader import load_workflow
from orange.engine.prompts import VARIABLES, build_prompt
from orange.run.headless import BUILTIN_EXEC

FIELDS = {
    "summary": "Add dark mode",
    "project": "coffee",
    "branch": "dark-mode",
    "review_round": 1,
    "status": "working",
    "id": "4f2a",
}


def test_substitutes_every_variable() -> None:
    template = "{summary}|{project}|{branch}|{review_round}|{status}|{id}|{harness}"
    fields = {**FIELDS, "harness": "codex"}
    assert build_prompt(template, fields) == "Add dark mode|coffee|dark-mode|1|working|4f2a|codex"


@pytest.mark.parametrize("key", ["worker", "worker_respawn"])
@pytest.mark.parametrize("harness", sorted(BUILTIN_EXEC))
def test_self_review_names_the_review_command_of_the_tasks_program(key: str, harness: str) -> None:
    """Issue 25, finding 3: the prompt told every agent to run `claude --print --prompt`
    (no such option).  It names the task's program and, for each built-in one, the
    one-shot mode `orange run` starts it in (checked against each program's --help in
    tests/runtime/test_harness_help.py)."""
    text = (files("orange._workflows") / "self-review.yml").read_text()
    template = load_workflow(text, "self-review.yml").prompts[key]
    prompt = build_prompt(template, {**FIELDS, "harness": harness})
    assert f"({harness})" in prompt or f"program, {harness}:" in prompt
    one_shot = " ".join(BUILTIN_EXEC[harness].argv[:2])  # claude -p, codex exec, ...
    assert f'{one_shot} "' in prompt
    assert "--prompt" not in prompt


def test_value_is_not_expanded_again() -> None:
    fields = {**FIELDS, "summary": "print {status} and {id}"}
    assert build_prompt("# {summary} ({status})", fields) == "# print {status} and {id} (working)"


@pytest.mark.parametrize(
    "text",
    ["{foo}", "${HOME}", '{"json": 1}', "{{summary}}x", "{ summary }", "{}", "{0}"],
    ids=["unknown name", "shell var", "json", "double braces", "spaced", "empty", "index"],
)
def test_other_braces_stay(text: str) -> None:
    out = build_prompt(text, FIELDS)
    assert out == text.replace("{summary}", "Add dark mode")


def test_missing_values() -> None:
    assert build_prompt("[{summary}] round {review_round}", {}) == "[] round 0"
    assert build_prompt("{branch}", {"branch": None}) == ""


@pytest.mark.parametrize("name", ["default", "minimal", "fresh-worker", "self-review"])
def test_shipped_prompts_use_only_known_variables(name: str) -> None:
    text = (files("orange._workflows") / f"{name}.yml").read_text()
    workflow = load_workflow(text, f"{name}.yml")
    for key, template in workflow.prompts.items():
        used = set(re.findall(r"\{(\w+)\}", template))
        assert used <= set(VARIABLES), f"{name}.yml prompts.{key}: {used - set(VARIABLES)}"
        assert "{" not in build_prompt(template, FIELDS), key
