"""Orange's flat frontmatter without YAML's Python: the reader's JSON text (what a cold
listing caches for each task, written out as it is by `task list --json`), and the
writer (`taskfile._flat_yaml`), which must write what the dumper writes."""

from __future__ import annotations

import json

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from orange.store import flat, taskfile, yamlfront
from orange.store.taskfile import frontmatter_json, join
from tests.conftest import examples

FAST = examples(25)

VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.text(max_size=30),
    st.sampled_from(["", "'", "it's", '"q"', "back\\slash", "é", "😀", "007", "null"]),
    st.builds(dict),
    st.builds(list),
)
KEYS = st.from_regex(r"[a-z_][a-z0-9_-]{0,15}", fullmatch=True)


@FAST
@given(fields=st.dictionaries(KEYS, VALUES, max_size=8))
def test_the_json_text_is_json_of_what_was_read(fields: dict[str, object]) -> None:
    text = join({"id": "abc", **fields}, "body\n")
    data, json_text = frontmatter_json(text)
    assert data == {"id": "abc", **fields}
    if json_text is not None:  # written by the flat reader: as `json` writes the mapping
        assert json_text == json.dumps(data, ensure_ascii=False)
    flat_shape = all(not isinstance(v, str) or v.isprintable() for v in fields.values())
    # The dumper quotes a key YAML 1.1 reads as another type ('no': ...), which the flat
    # reader leaves to the loader.
    plain_keys = all(f"\n{key}:" in text for key in fields)
    if (
        flat_shape and plain_keys
    ):  # one printable line each: the flat reader's, so the text is given
        assert json_text is not None


def test_a_header_read_as_the_memory_of_lines_is_replaced_is_read_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Lines known before the memory of read lines was full, read again with a new one
    once it is: every member of the JSON text comes from the one memory."""
    monkeypatch.setattr(flat, "_SEEN_MAX", 3)
    monkeypatch.setattr(flat, "_MEMO", ({}, set(), {}))
    known = "id: 'abc'\nstatus: pending\n"
    assert flat.read_json(known) == (
        {"id": "abc", "status": "pending"},
        '{"id": "abc", "status": "pending"}',
    )
    for n in range(2):  # four lines now: full
        assert flat.read(f"summary: s{n}\n") == {"summary": f"s{n}"}
    read = flat.read_json(known + "summary: new\n")
    assert read == (
        {"id": "abc", "status": "pending", "summary": "new"},
        '{"id": "abc", "status": "pending", "summary": "new"}',
    )
    assert len(flat._MEMO[0]) == 3  # a new memory, with this header's lines


def _dumped(fields: dict[str, object]) -> str:
    """What the dumper writes for ``fields`` (`join` without the flat writer)."""
    return yaml.dump(
        fields,
        Dumper=yamlfront.Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )


# Text around each rule the writer decides by: indicators first or inside, spaces at
# the ends, YAML 1.1's implicit types, quotes, and what is not printable ASCII.
PIECES = st.sampled_from(
    [
        *[
            "a",
            "Z",
            "0",
            "5",
            "-",
            "?",
            ":",
            "#",
            ",",
            "[",
            "]",
            "{",
            "}",
            "&",
            "*",
            "!",
            "|",
            ">",
            "'",
            '"',
            "%",
            "@",
            "`",
            ".",
            "~",
            "=",
            "<",
            "_",
            "+",
            "\\",
            "/",
        ],
        *(" ", ": ", " #", "--", "...", "---", "0x", "1e3", ".inf", "<<", "\t", "\n", "é"),
        *("yes", "No", "on", "OFF", "null", "~", "true", "2024-01-01", "12:30:00", "1_000"),
    ]
)
TEXTS = st.lists(PIECES, max_size=5).map("".join) | st.text(max_size=12)
KEYS_ANY = st.sampled_from(
    ["id", "a-b", "_x", "on", "yes", "null", "1a", "a b", "é", *("x" * n for n in (99, 127, 128))]
)
FLAT_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), TEXTS, st.builds(dict), st.builds(list)
)


@examples(500)
@given(key=KEYS | KEYS_ANY, value=FLAT_VALUES | st.floats())
def test_the_flat_writer_writes_each_value_as_the_dumper_does(key: str, value: object) -> None:
    written = taskfile._flat_yaml({key: value})
    assert written is None or written == _dumped({key: value})


@examples(100)
@given(fields=st.dictionaries(KEYS, FLAT_VALUES, max_size=6))
def test_the_flat_writer_writes_what_the_dumper_writes(fields: dict[str, object]) -> None:
    written = taskfile._flat_yaml(fields)
    assert written is None or written == ("" if not fields else _dumped(fields))


# Each rule of the emitter's choice between plain and quoted text, at its edge.
EDGE_TEXTS = [
    *("a #b", "a #", "a#b", "x: y", "a:", "a:b", "a ", " a", "a b", "a  b", "-", "- a", "-a"),
    *("?", "? a", "?a", ":", ": a", ":a", "---", "---a", "...", "...a", "..a", "#a", ",a"),
    *("a,b", "[a", "a[b", "]a", "{a", "}a", "&a", "*a", "!a", "|a", ">a", "'a", "a'b", '"a'),
    *("%a", "@a", "`a", "a`", "=", "<<", "~", "", "y", "n", "yes", "No", "on", "OFF", "null"),
    *("true", "2024-01-01", "12:30:00", "190:20:30", "1_000", "0x1f", ".inf", ".5", "1e3"),
    *("+1", "-1.5", "0o17", "a\tb", "a\nb", "é", "a\x7f"),
]


@pytest.mark.parametrize("text", EDGE_TEXTS)
def test_the_flat_writer_quotes_text_as_the_dumper_does(text: str) -> None:
    written = taskfile._flat_yaml({"k": text})
    expected = _dumped({"k": text})
    assert written == (expected if text.isascii() and text.isprintable() else None)


def test_the_flat_writer_takes_what_orange_writes() -> None:
    fields: dict[str, object] = {"id": "9hziakx6", "project": "p", "branch": "agent/fix-it"}
    fields |= {"status": "in_progress", "review_round": 0, "summary": "fix: the 'parser' #2"}
    fields |= {"workspace": None, "created_at": "2026-01-01T00:00:00.000Z", "gate_baseline": {}}
    assert taskfile._flat_yaml(fields) == _dumped(fields)
