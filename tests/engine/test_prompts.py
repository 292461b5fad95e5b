"""Prompt building: literal, single-pass substitution of the fixed variables."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from orange.engine.loader import load_workflow
from orange.engine.prompts import VARIABLES, build_prompt

FIELDS = {
    "summary": "Add dark mode",
    "project": "coffee",
    "branch": "dark-mode",
    "review_round": 1,
    "status": "working",
    "id": "4f2a",
}


def test_substitutes_every_variable() -> None:
    template = "{summary}|{project}|{branch}|{review_round}|{status}|{id}"
    assert build_prompt(template, FIELDS) == "Add dark mode|coffee|dark-mode|1|working|4f2a"


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
