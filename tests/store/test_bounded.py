"""The one bounded reader (`orange.store.bounded`): what it refuses, before anything is
built, in YAML and JSON text, and that it answers for every document a property test
draws (bombs, deep nesting, duplicate keys among them)."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import NamedTuple

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from orange.errors import BrokenTaskFile
from orange.store import bounded, runfile


class Case(NamedTuple):
    text: str
    path: str
    says: str


YAML_CASES = {
    "alias": Case("a: &x [1]\nb: *x\n", "a", "uses YAML anchors or aliases"),
    "anchor only": Case("a:\n  b: &x 1\n", "a.b", "uses YAML anchors or aliases"),
    "key twice": Case("a: 1\nb:\n  c: 1\n  c: 2\n", "b", "has the key 'c' twice (line 4)"),
    "deep": Case("a: " + "[" * 33 + "]" * 33, "a" + "[0]" * 31, "is nested deeper than 32"),
    "deeper than libyaml": Case("[" * 5000 + "]" * 5000, "", "is nested deeper than 32"),
    "not yaml": Case("a: [1\n", "", "is not valid YAML"),
    "too large": Case("a: " + "x" * bounded.MAX_TEXT, "", "is larger than 1024 KiB"),
}


@pytest.mark.parametrize("case", YAML_CASES.values(), ids=YAML_CASES.keys())
def test_yaml_the_reader_refuses(case: Case) -> None:
    problem = bounded.yaml_problem(case.text)
    assert problem is not None
    assert problem.path == case.path
    assert problem.text.startswith(case.says)


def test_a_workflow_files_aliases_are_counted_as_followed() -> None:
    shared = "hooks: &h [{action: notify}, {action: kill_session}]\nmore: [*h, *h]\n"
    assert bounded.yaml_problem(shared, aliases=True) is None
    bomb = "a: &a [" + ", ".join(["x"] * 400) + "]\nb: [" + ", ".join(["*a"] * 300) + "]\n"
    problem = bounded.yaml_problem(bomb, aliases=True)
    assert problem == ("b[248]", f"makes more than {bounded.MAX_NODES} nodes with its aliases")

    def deep(levels: int) -> str:
        return "a: &a " + "[" * 20 + "]" * 20 + "\nb: " + "[" * levels + "*a" + "]" * levels

    assert bounded.yaml_problem(deep(11), aliases=True) is None  # 32: the top, b's, a's
    assert bounded.yaml_problem(deep(12), aliases=True) == (
        "b" + "[0]" * 12,
        f"is nested deeper than {bounded.MAX_DEPTH} with its aliases",
    )


@pytest.mark.parametrize("text", ["a: *n\n", "a: &n [1, *n]\n"], ids=["undefined", "in itself"])
def test_an_alias_must_follow_its_anchors_end(text: str) -> None:
    problem = bounded.yaml_problem(text, aliases=True)
    assert problem is not None and problem.text == "uses the alias 'n' before its anchor ends"


def test_yaml_at_the_limits_is_read() -> None:
    assert bounded.yaml_problem("a: " + "[" * 31 + "]" * 31 + "\nb: {c: 1, d: [1, 2]}\n") is None
    assert bounded.yaml_problem("- {a: 1}\n- {a: 1}\n") is None  # same key, two mappings


JSON_CASES = {
    "deep": ("[" * 33 + "]" * 33, "is nested deeper than 32"),
    "deeper than Python's parser": ("[" * 200_000 + "]" * 200_000, "is nested deeper than 32"),
    "too large": ('"' + "x" * bounded.MAX_TEXT + '"', "is larger than 1024 KiB"),
}


@pytest.mark.parametrize(("text", "says"), JSON_CASES.values(), ids=JSON_CASES.keys())
def test_json_the_reader_refuses(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        bounded.load_json(text)


def test_json_brackets_inside_strings_are_not_nesting() -> None:
    text = json.dumps(["[" * 100, {"k": "{" * 100}, '\\"[[['])
    assert bounded.load_json(text) == json.loads(text)


def test_a_run_records_deep_json_section_is_a_broken_record() -> None:
    deep = "[" * 200_000 + "]" * 200_000
    text = f"---\nid: runaaaaa\nsubtasks: []\n---\n\n## Plan\n\n```json\n{deep}\n```\n"
    record = runfile.parse(text, "runs/runaaaaa/RUN.md")
    with pytest.raises(BrokenTaskFile, match="## Plan is not valid JSON: is nested deeper"):
        record.json_section("Plan")


# Documents of every shape, hostile ones included: nesting up to 40 deep, anchors and
# aliases, keys drawn from a small alphabet (so repeated keys are common).
_scalars = st.sampled_from(["1", "x", "null", "'a'", "[]", "{}"])
_keys = st.sampled_from(["a", "b", "c"])


def _flow(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    mapping = st.lists(st.tuples(_keys, children), max_size=3).map(
        lambda items: "{" + ", ".join(f"{k}: {v}" for k, v in items) + "}"
    )
    sequence = st.lists(children, max_size=3).map(lambda items: "[" + ", ".join(items) + "]")
    anchored = children.map(lambda text: f"&n {text}")
    return st.one_of(mapping, sequence, anchored, st.just("*n"))


documents = st.recursive(_scalars, _flow, max_leaves=60)


@given(documents)
def test_what_the_reader_passes_builds_within_its_bounds(
    text: str,
) -> None:
    problem = bounded.yaml_problem(text)
    if problem is None:
        events = list(yaml.parse(text))
        assert not any(isinstance(e, yaml.AliasEvent) or getattr(e, "anchor", None) for e in events)
    if bounded.yaml_problem(text, aliases=True) is None:
        value = yaml.safe_load(text)
        assert _depth(value) <= bounded.MAX_DEPTH
        assert _nodes(value) <= bounded.MAX_NODES


def _nodes(value: object) -> int:
    if isinstance(value, dict):
        return 1 + sum(_nodes(k) + _nodes(v) for k, v in value.items())
    if isinstance(value, list):
        return 1 + sum(_nodes(v) for v in value)
    return 1


def _depth(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    return 0


def test_a_json_string_that_never_closes_is_scanned_once() -> None:
    """A pattern for string literals rescans to the end from every quote of a string
    that never closes; the scan must not (a hang here is the bug: run in a process of
    its own, given a minute)."""
    text = "[" * 33 + '"' + '\\"' * 200_000  # an escaped quote, again and again
    probe = (
        "import sys; from orange.store import bounded as b; print(b.json_problem(sys.stdin.read()))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], input=text, capture_output=True, text=True,
        timeout=60, check=True,
    )  # fmt: skip
    assert done.stdout.strip() == "is nested deeper than 32"


def test_two_keys_that_are_collections_are_two_keys() -> None:
    assert bounded.yaml_problem("? [a]\n: 1\n? [b]\n: 2\n") is None
