"""Workflow diagrams as Mermaid stateDiagram-v2."""

from __future__ import annotations

import re
from importlib.resources import files

import pytest

from orange.engine.loader import load_workflow
from orange.engine.mermaid import state_id, to_mermaid
from orange.engine.workflow import Workflow


def shipped(name: str) -> Workflow:
    text = (files("orange._workflows") / f"{name}.yml").read_text()
    return load_workflow(text, f"{name}.yml")


def test_default_diagram() -> None:
    lines = to_mermaid(shipped("default")).splitlines()
    assert lines[0] == "stateDiagram-v2"
    assert '    state "agent-review" as agent_review' in lines
    assert "    [*] --> pending" in lines
    assert "    done --> [*]" in lines
    assert "    cancelled --> [*]" in lines
    assert "    planning --> working: Plan" in lines
    assert "    working --> agent_review: Handoff" in lines
    assert "    agent_review --> reviewing: Review PASS" in lines
    assert "    agent_review --> working: Review FAIL, review_round #lt; 2" in lines
    assert "    agent_review --> stuck: Review FAIL, review_round #gt;= 2" in lines
    assert "    pending --> cancelled" in lines
    assert not any("agent-review -->" in line or "--> agent-review" in line for line in lines)


@pytest.mark.parametrize("name", ["default", "minimal", "fresh-worker", "self-review"])
def test_every_transition_is_an_edge_between_declared_ids(name: str) -> None:
    workflow = shipped(name)
    text = to_mermaid(workflow)
    edges = re.findall(r"^    (\w+) --> (\w+)", text, flags=re.MULTILINE)
    expected = [(state_id(t.from_), state_id(t.to)) for t in workflow.transitions]
    assert edges == expected
    terminal = re.findall(r"^    (\w+) --> \[\*\]$", text, flags=re.MULTILINE)
    assert terminal == [state_id(n) for n, s in workflow.states.items() if s.terminal]


def test_state_id() -> None:
    assert state_id("agent-review") == "agent_review"
    assert state_id("9lives") == "s_9lives"
    assert state_id("working") == "working"
