from __future__ import annotations

import re
from typing import NamedTuple

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from orange.errors import BrokenTaskFile
from orange.store import flat, yamlfront
from orange.store.task import Task
from orange.store.taskfile import join, split
from tests.conftest import examples

# Strings YAML 1.1 would read as something else when written bare.
TRAPS = [
    "no",
    "No",
    "on",
    "off",
    "yes",
    "y",
    "n",
    "true",
    "null",
    "~",
    "2024-01-01",
    "2024-01-01T10:00:00Z",
    "007",
    "123",
    "1e3",
    "1.5",
    ".inf",
    "0x1F",
    "1_000",
    "12:30",
    "-",
    "",
    " padded ",
    "#hash",
    "a: b",
    "'quoted'",
    "[list]",
    "{map}",
]


@pytest.mark.parametrize("value", TRAPS, ids=repr)
def test_yaml_traps_round_trip_as_the_strings_they_were(value: str) -> None:
    fm = {"id": "abc", "summary": value, "custom": value}
    parsed, body = split(join(fm, "body"))
    assert parsed == fm
    assert body == "body"


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("no", "no"),
        ("on", "on"),
        ("2024-01-01", "2024-01-01"),
        ("123", "123"),
        ("1.5", "1.5"),
        ("007", "007"),
        ("yes", "yes"),
    ],
    ids=lambda v: str(v),
)
def test_hand_written_bare_traps_read_back_as_strings(written: str, expected: str) -> None:
    task = Task.parse(f"---\nid: abc\nsummary: {written}\n---\n", where="t")
    assert task.fields["summary"] == expected


def test_key_order_is_kept_and_unknown_keys_survive() -> None:
    text = "---\nzeta: 1\nid: abc\nalpha: x\nnested:\n  b: 1\n  a: 2\n---\nbody\n"
    task = Task.parse(text, where="t")
    assert list(task.fields) == ["zeta", "id", "alpha", "nested"]
    again = Task.parse(task.render(), where="t")
    assert list(again.fields) == ["zeta", "id", "alpha", "nested"]
    assert again.fields["nested"] == {"b": 1, "a": 2}
    assert list(again.fields["nested"]) == ["b", "a"]


BODIES = st.text(alphabet=st.characters(blacklist_categories=["Cs"]), max_size=300)


@examples(200)
@given(body=BODIES, summary=st.text(max_size=40))
def test_body_and_summary_survive_byte_for_byte(body: str, summary: str) -> None:
    fm = {"id": "abc", "summary": summary, "review_round": 2, "attention": None}
    text = join(fm, body)
    parsed, parsed_body = split(text)
    assert parsed_body == body
    assert parsed == fm
    assert join(parsed, parsed_body) == text


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no frontmatter", "does not start"),
        ("---\nid: a\n", "no closing"),
        ("---\nid: [unclosed\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "must be a mapping"),
        ("---\nsummary: x\n---\n", "has no 'id'"),
        ("---\nid: ../../etc\n---\n", "not a valid task id"),
    ],
    ids=["no-fence", "unclosed", "bad-yaml", "not-mapping", "missing-id", "escaping-id"],
)
def test_broken_files_say_why(text: str, reason: str) -> None:
    with pytest.raises(BrokenTaskFile, match=reason):
        Task.parse(text, where="tasks/ab/x/TASK.md")


# The fast reader of flat frontmatter (`flat.read`) must read exactly what the YAML loader
# reads, and hand everything else to it.


def _typed(data: object) -> object:
    """Frontmatter with each value's type, so True and 1 (equal in Python) differ."""
    if not isinstance(data, dict):
        return data
    return [(key, type(value).__name__, value) for key, value in data.items()]


def _loader_reads(header: str) -> object:
    """What the YAML loader makes of ``header``: typed fields, or "broken" where `split`
    must refuse it."""
    try:
        data = yaml.load(header, Loader=yamlfront.loader()) or {}
        node = yaml.compose(header, Loader=yamlfront.loader())
    except yaml.YAMLError:
        return "broken"
    if not isinstance(data, dict) or not all(isinstance(key, str) for key in data):
        return "broken"
    if _refused_shape(header, node):
        return "broken"
    return _typed(data)


def _refused_shape(header: str, node: yaml.Node | None) -> bool:
    """What the bounded reader refuses although YAML takes it (DESIGN §8): anchors or
    aliases, a key twice in one mapping, nesting deeper than 32.  Found on the composed
    node tree, not with the event walk of the code under test."""
    for event in yaml.parse(header, Loader=yamlfront.loader()):
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            return True

    def bad(node: yaml.Node, depth: int) -> bool:
        if isinstance(node, yaml.MappingNode | yaml.SequenceNode) and depth > 32:
            return True
        if isinstance(node, yaml.MappingNode):
            keys = [key.value for key, _ in node.value if isinstance(key, yaml.ScalarNode)]
            if len(keys) != len(set(keys)):
                return True
            return any(bad(k, depth + 1) or bad(v, depth + 1) for k, v in node.value)
        if isinstance(node, yaml.SequenceNode):
            return any(bad(item, depth + 1) for item in node.value)
        return False

    return node is not None and bad(node, 1)


def _header(text: str) -> str:
    return text[len("---\n") : text.index("\n---\n") + 1]


# What YAML keeps as plain text in a one-line scalar: no controls, line or paragraph
# separators, format characters (BOM) or unassigned code points.
LINE_TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Cf", "Cn", "Zl", "Zp")),
    max_size=30,
)
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(), LINE_TEXT, st.sampled_from(TRAPS), st.text()
)
KEYS = st.from_regex(r"[a-z_][a-z0-9_-]{0,15}", fullmatch=True)


@given(fields=st.dictionaries(KEYS, VALUES, max_size=8))
def test_flat_reader_reads_rendered_frontmatter_as_the_loader_does(
    fields: dict[str, object],
) -> None:
    header = _header(join({"id": "abc", **fields}, "body\n"))
    fast = flat.read(header)
    assert fast is None or _typed(fast) == _loader_reads(header)
    one_line = all(not isinstance(v, str) or "\n" not in v for v in fields.values())
    printable = all(
        not isinstance(v, str) or v in TRAPS or LINE_TEXT_RE.fullmatch(v) for v in fields.values()
    )
    # A key YAML 1.1 reads as another type is quoted ('no': ...): left to the loader.
    plain_keys = all(f"\n{key}:" in header for key in fields)
    if one_line and printable and plain_keys:  # Orange's own shape: the fast path takes it
        assert fast is not None, header
        assert _typed(fast) == _typed({"id": "abc", **fields})


# What `join` writes plain or single-quoted (the rest it writes double-quoted).
LINE_TEXT_RE = re.compile("[^\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\U0010ffff]*")

# Hand-written or foreign frontmatter: lines built from YAML's awkward pieces.
PIECES = st.sampled_from(
    [
        *"a #:'-?&*[]{}!|>%@`\\\",.~0",
        *("\t", "\r", "\x85", "\u2028", "é", "😀", "  ", ": ", " #", "\n", "\n  ", "\n- "),
        *("null", "true", "007", "-1", "''"),
    ]
)
LINES = st.tuples(
    st.sampled_from(["id", "a", "no", "null", "True", "x-y", "_", "1", "a b", "'q'", "- a"]),
    st.sampled_from([":", ": ", ":  ", " :", ""]),
    st.lists(PIECES, max_size=6).map("".join),
).map(lambda parts: "".join(parts) + "\n")


@given(header=st.lists(LINES, max_size=5).map("".join))
def test_anything_the_flat_reader_does_not_take_goes_to_the_loader(header: str) -> None:
    expected = _loader_reads(header)
    fast = flat.read(header)
    if fast is not None:
        assert _typed(fast) == expected
    try:
        parsed, body = split(f"---\n{header}---\nbody")
    except BrokenTaskFile:
        assert expected == "broken"
    else:
        assert body == "body"
        assert _typed(parsed) == expected


class Foreign(NamedTuple):
    id: str
    header: str


FOREIGN = [
    Foreign("nested", "id: a\nnested:\n  b: 1\n"),
    Foreign("list", "id: a\ntags:\n- x\n- y\n"),
    Foreign("flow", "id: a\ntags: [x, y]\nmap: {b: 1}\n"),
    Foreign("anchor-alias", "id: &x a\nother: *x\n"),
    Foreign("block-scalar", "id: a\nsummary: |\n  two\n  lines\n"),
    Foreign("double-quoted", 'id: a\nsummary: "tab\\there"\n'),
    Foreign("comment", "# a comment\nid: a\nsummary: x # trailing\n"),
    Foreign("duplicate-key", "id: a\nsummary: one\nsummary: two\n"),
    Foreign("crlf", "id: a\r\nsummary: x\r\n"),
    Foreign("tag", "id: a\nn: !!str 12\n"),
    Foreign("null-key", "id: a\nnull: x\n"),
    Foreign("indented", " id: a\n"),
    Foreign("colon-space-in-value", "id: a\nsummary: a: b\n"),
    Foreign("trailing-colon", "id: a\nsummary: a:\n"),
    Foreign("next-line-break", "id: a\nsummary: x\x85y\n"),
    Foreign("line-separator", "id: a\nsummary: x\u2028y\n"),
    Foreign("byte-order-mark", "id: a\nsummary: x\ufeffy\n"),
    Foreign("tab", "id: a\nsummary: x\ty\n"),
    Foreign("true-key", "id: a\ntrue: x\n"),
    Foreign("sequence-dash", "id: a\nsummary: - x\n"),
]


@pytest.mark.parametrize("case", FOREIGN, ids=[case.id for case in FOREIGN])
def test_foreign_frontmatter_is_read_by_the_loader(case: Foreign) -> None:
    assert flat.read(case.header) is None
    expected = _loader_reads(case.header)
    try:
        parsed, _body = split(f"---\n{case.header}---\n")
    except BrokenTaskFile:
        assert expected == "broken"
    else:
        assert _typed(parsed) == expected
