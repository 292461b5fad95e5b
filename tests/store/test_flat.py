"""The flat reader's JSON text: what a cold listing caches for each task (the cache
writes it out as it is for `task list --json`)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from orange.store import flat
from orange.store.taskfile import frontmatter_json, join

FAST = settings(max_examples=25, derandomize=True, deadline=None)

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
    if flat_shape:  # one printable line each: the flat reader's, so the text is given
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
