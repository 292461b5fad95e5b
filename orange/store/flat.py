"""Frontmatter as Orange writes it, read without the YAML loader.

`orange.store.taskfile.join` writes one ``key: scalar`` line per key, the scalar plain
or single-quoted, or an empty ``{}`` / ``[]``.  `read` gives exactly what the loader
would for such a header, and None for anything else (nesting, non-empty lists or flow
collections, block or double-quoted scalars, comments, anchors, aliases, tags,
duplicate keys, CR line ends), which the caller then hands to the loader.

A cold listing cache reads every task this way, and the lines it has read before (most
of them) cost a dictionary lookup; each line's JSON member is kept with it, so the
cache's JSON text of a task is a join (`read_json`), not an encoding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from json.encoder import encode_basestring
from typing import Any

# A header is read a line at a time.  A line YAML reads as itself holds no control (C0
# but the tab, DEL, C1), U+2028/9, BOM, non-character or surrogate: `str.isprintable`
# (quick, and stricter) passes most lines, and the few it refuses (a no-break space, a joiner)
# are searched for those.  That class is compiled when first needed (`re`'s cache), not
# at import: naming characters beyond Latin-1 costs half a millisecond to compile.
_NOT_PRINTABLE = "[\x00-\x1f\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]"
# A key YAML reads as a string: a letter or _, then up to 127 of these and digits and
# - (YAML caps an implicit key at 1024 characters).  String tests, not a regular
# expression: compiling one costs an agent's summary update a tenth of a millisecond.
KEY_FIRST = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_"
KEY_CHARS = f"{KEY_FIRST}0123456789-"
# What a plain scalar may start with: no indicator (``-?:`` only before a non-space).
_PLAIN_FIRST = frozenset("$()+./;<=\\^_~0123456789abcdefghijklmnopqrstuvwxyz")
_PLAIN_FIRST |= frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_RESERVED_KEYS = frozenset(("null", "Null", "NULL", "true", "True", "TRUE"))
_RESERVED_KEYS |= frozenset(("false", "False", "FALSE"))
_RESOLVED: dict[str, Any] = {"~": None, "null": None, "Null": None, "NULL": None}
_RESOLVED.update(dict.fromkeys(("true", "True", "TRUE"), True))
_RESOLVED.update(dict.fromkeys(("false", "False", "FALSE"), False))
# Empty flow collections (the engine writes ``gate_baseline: {}``): a new one per read.
_EMPTY: dict[str, type[dict[str, Any]] | type[list[Any]]] = {"{}": dict, "[]": list}
# What the flat reader has read already, emptied when full (`_SEEN_MAX` lines): most
# lines of a listing repeat from task to task (``status: pending``, ``workspace: null``).
# - each flat line's (key, value) (values are immutable; a line that is not flat is
#   read again each time: its header goes to the loader, which costs far more);
# - the lines whose value is an empty collection: one set test per header finds them,
#   instead of comparing every value with ``dict`` and ``list``;
# - each flat line's JSON member (``"key": value``) as `json` writes it with
#   ``ensure_ascii`` off (`read_json`).
# One tuple, replaced (not emptied) when full: a reader in another thread (`orange run`
# reads tasks from several) keeps a consistent one to the end of its header.
_Memo = tuple[dict[str, tuple[str, Any]], set[str], dict[str, str]]
_MEMO: _Memo = ({}, set(), {})
_SEEN_MAX = 4096


def read(header: str) -> dict[str, Any] | None:
    """``header`` as the loader would read it, if it is flat ``key: scalar`` lines;
    None for anything else (the caller then asks the loader)."""
    flat = _read(header)
    return None if flat is None else flat[0]


def read_json(header: str) -> tuple[dict[str, Any], str] | None:
    """`read`, with the same mapping as JSON text (``{"key": value, ...}``, as `json`
    writes it with ``ensure_ascii`` off): each line's member was made when the line was
    first read."""
    flat = _read(header)
    if flat is None:
        return None
    data, lines, members = flat
    return data, "{" + ", ".join(map(members.__getitem__, lines)) + "}"


def _read(header: str) -> tuple[dict[str, Any], list[str], dict[str, str]] | None:
    """`read`, with the header's lines (one key each, in order) and JSON members.

    Lines seen before cost a lookup: the loops over a header's lines run in C (the set
    difference, `map`, `dict`), and only a new line is read in Python."""
    global _MEMO
    lines = header.split("\n")
    if lines.pop():  # the header ends with a line feed (an empty one splits as [""])
        return None
    memo = _MEMO
    seen, empties, members = memo
    # The lines not read before (or not flat): a set of the header's lines, each looked
    # up in the memory, in C.
    new: Iterable[str] = set(lines).difference(seen)
    if new:
        if len(seen) > _SEEN_MAX:  # and no room: a new memory, all lines read into it
            memo = _MEMO = ({}, set(), {})
            seen, empties, members = memo
            new = lines
        for line in new:
            read = _read_line(line)
            if read is None:
                return None
            key, value = read  # a key is letters, digits, _ and -: JSON as it is
            if type(value) is str:
                members[line] = f'"{key}": {encode_basestring(value)}'
            else:  # null, a boolean, an integer, or an empty collection (its type)
                members[line] = f'"{key}": {_json_value(value)}'
                if type(value) is type:
                    empties.add(line)
            seen[line] = read
    items = list(map(seen.__getitem__, lines))
    data: dict[str, Any] = dict(items)
    if len(data) != len(items):  # a key twice: the loader's (and the checks') to refuse
        return None
    if empties and not empties.isdisjoint(lines):  # a new empty one per read
        data.update([(key, value()) for key, value in data.items() if value in (dict, list)])
    return data, lines, members


def _json_value(value: Any) -> str:
    """JSON of a flat value that is not text, as `json` writes it (an int as
    `int.__repr__` does); an empty collection is held as its type (`_EMPTY`)."""
    if value is None:
        return "null"
    if value is True or value is False:
        return "true" if value else "false"
    if type(value) is int:
        return int.__repr__(value)
    return "{}" if value is dict else "[]"


def _read_line(line: str) -> tuple[str, Any] | None:
    """One ``key: scalar`` line as the loader reads it, or None: a key, then nothing
    (null), an empty flow collection, a single-quoted scalar (quotes only in pairs
    inside) or a plain one (no indicator first, no ``: `` or `` #`` inside, no trailing
    space or colon).  String tests, not a regular expression: half the time per line
    (a cold listing reads five new lines a task: the tests are ordered for them)."""
    if not line.isprintable() and re.search(_NOT_PRINTABLE, line):
        return None
    # A key holds no colon, so the first ": " follows the key exactly when the key's
    # colon is followed by a space (anything else after it is no flat line).
    key, colon, value = line.partition(": ")
    if not colon:  # "key:" alone is null
        key = line[:-1]
        return (key, None) if line[-1:] == ":" and _is_key(key) else None
    if not value or (key not in _GOOD_KEYS and not _good_key(key)):  # `_is_key`, inline
        return None
    first = value[0]
    if first == "'":
        inner = value[1:-1]
        if len(value) < 2 or value[-1] != "'":
            return None
        if "'" not in inner:  # the usual quoted value (an id, a time): nothing to undo
            return key, inner
        if "'" in inner.replace("''", ""):
            return None
        return key, inner.replace("''", "'")
    if first in _PLAIN_FIRST or first > "\x7f":
        if ": " in value or " #" in value or value[-1] in " :":
            return None
        if value in _RESOLVED:
            return key, _RESOLVED[value]
        if first in "+0123456789":
            return key, _number(value)
        return key, value
    if first in "{[":
        return (key, _EMPTY[value]) if value in _EMPTY else None
    if first not in "-?:" or value[1:2] in ("", " "):  # an indicator, not before a space
        return None
    if ": " in value or " #" in value or value[-1] in " :":
        return None
    return key, _number(value) if first == "-" else value


# Keys checked already (a listing meets the same few thousands of times); bounded.
_GOOD_KEYS: set[str] = set()


def _is_key(key: str) -> bool:
    return key in _GOOD_KEYS or _good_key(key)


def _good_key(key: str) -> bool:
    """Whether YAML reads ``key`` (unquoted) as that string."""
    good = 0 < len(key) <= 128 and key[0] in KEY_FIRST and not key.strip(KEY_CHARS)
    good = good and key not in _RESERVED_KEYS
    if good and len(_GOOD_KEYS) < _SEEN_MAX:
        _GOOD_KEYS.add(key)
    return good


def _number(value: str) -> Any:
    """A plain scalar that starts with a sign or digit: a decimal integer as the loader
    resolves it (``[-+]?(0|[1-9][0-9]*)``), else the text."""
    digits = value[1:] if value[0] in "+-" else value
    if digits.isdigit() and digits.isascii() and (digits[0] != "0" or digits == "0"):
        return int(value)
    return value


# Plain scalars another YAML reader (1.1 or 1.2) might take for a number (`number_like`).
_NUMBER_LIKE = r"^[-+]?(?:\.?[0-9]|\.(?:inf|nan))"


def number_like(text: str) -> bool:
    """Whether ``text`` matches `_NUMBER_LIKE` (the writers quote such text): a digit
    first, after a sign, is told by string tests; the expression is compiled (`re`'s
    cache) for the rest that starts with a dot, so writing a task compiles none."""
    rest = text[1:] if text[:1] in ("-", "+") else text
    if "0" <= rest[:1] <= "9":
        return True
    return rest[:1] == "." and re.match(_NUMBER_LIKE, text, re.IGNORECASE) is not None
