"""TASK.md: YAML frontmatter between ``---`` lines, then a markdown body.

The format is written and read here only.  Properties this module guarantees (tests
check them, since python-frontmatter's dumper strips whitespace and sorts keys):

- the body survives byte for byte (leading blank lines, trailing whitespace, CRLF);
- frontmatter key order is kept, unknown keys survive a round trip;
- strings that YAML 1.1 would read as something else (``no``, ``on``, ``2024-01-01``,
  ``007``, ``1e3``) are written quoted, and are read back as the strings they were,
  even when a human wrote them unquoted: the loader resolves only null, ``true`` /
  ``false`` and plain decimal integers.

Reading the shape ``join`` writes (one ``key: scalar`` line per key) skips the YAML
loader: `orange.store.flat` gives exactly what the loader would, and hands anything
else back to it.  PyYAML itself is loaded (`orange.store.yamlfront`) only for a header
of another shape, read or written.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from orange.errors import BrokenTaskFile, InvalidInput
from orange.store import bounded, flat

_FENCE = "---"

# What one task file may hold (DESIGN §8): a file over these is one broken task, and a
# write over them is refused, before anything is built from the data.
MAX_FRONTMATTER = 64 * 1024  # bytes of YAML between the fences
MAX_FILE = 1024 * 1024  # bytes of the whole TASK.md
MAX_DEPTH = bounded.MAX_DEPTH  # nested mappings and sequences in the frontmatter


def split(text: str, *, where: str = "TASK.md") -> tuple[dict[str, Any], str]:
    """Parse a TASK.md into (frontmatter, body).  Raises BrokenTaskFile."""
    _check_size(text, where)
    header, body = _sections(text, where)
    return parse_header(header, where), body


def frontmatter(text: str, *, where: str = "TASK.md") -> dict[str, Any]:
    """Only the frontmatter of a TASK.md (the listing needs no body).  Raises
    BrokenTaskFile."""
    _check_size(text, where)
    return parse_header(_header(text, where)[0], where)


def frontmatter_json(text: str, *, where: str = "TASK.md") -> tuple[dict[str, Any], str | None]:
    """`frontmatter`, and the same mapping as JSON text (``{"key": value, ...}``, as
    `json` writes it with ``ensure_ascii`` off) when the flat reader read it, else None:
    each line's JSON was made when the line was first read.  Raises BrokenTaskFile."""
    if len(text) > MAX_FILE // 4:  # only a text this long can be over the limit
        _check_size(text, where)
    header = _header(text, where)[0]
    read = flat.read_json(header) if len(header) <= MAX_FRONTMATTER // 4 else None
    return (parse_header(header, where), None) if read is None else read


def parse_header(header: str, where: str) -> dict[str, Any]:
    """The frontmatter text between the ``---`` lines as a mapping."""
    if _over(header, MAX_FRONTMATTER):
        raise BrokenTaskFile(f"{where}: frontmatter is larger than {MAX_FRONTMATTER // 1024} KiB")
    data = flat.read(header)
    if data is not None:
        return data
    # PyYAML only for a header that is not flat: its import costs more than the rest
    # of an agent's summary update
    from orange.store import yamlfront

    data = yamlfront.load(header, where)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BrokenTaskFile(f"{where}: frontmatter must be a mapping of keys to values")
    if _has_surrogate(data):  # a "\udcff" escape: not text
        raise BrokenTaskFile(f"{where}: frontmatter holds text that is not UTF-8")
    for key in data:
        if not isinstance(key, str):
            raise BrokenTaskFile(f"{where}: frontmatter key {key!r} is not a string")
    return data


# What str.splitlines ends a line at, besides "\n": in ASCII (each looked for with
# `in`, much quicker than a character class), and all of them, for text beyond ASCII
# (compiled then, see `_NOT_PRINTABLE`).
_ASCII_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e"
_OTHER_BREAKS = "[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]"


_OPEN, _CLOSE = f"{_FENCE}\n", f"\n{_FENCE}\n"


def _sections(text: str, where: str) -> tuple[str, str]:
    """The frontmatter text between the ``---`` lines, and the body after them."""
    header, start = _header(text, where)
    return header, text[start:]


def _header(text: str, where: str) -> tuple[str, int]:
    """The frontmatter text between the ``---`` lines, and where the body after them
    starts (a listing reads no body: it is not copied)."""
    if text.startswith(_OPEN):  # the usual shape, found without splitting lines
        end = text.find(_CLOSE, 3)
        header = text[4 : end + 1]
        only_lf = end != -1 and not any(map(header.__contains__, _ASCII_BREAKS))
        if only_lf and (header.isascii() or not re.search(_OTHER_BREAKS, header)):
            return header, end + 5
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != _FENCE:
        raise BrokenTaskFile(f"{where}: does not start with a '---' frontmatter line")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n") == _FENCE:
            return "".join(lines[1:index]), sum(map(len, lines[: index + 1]))
    raise BrokenTaskFile(f"{where}: frontmatter has no closing '---' line")


def join(frontmatter: Mapping[str, Any], body: str) -> str:
    """Serialise frontmatter (in its own key order) and body into TASK.md text."""
    header = _flat_yaml(frontmatter)
    if header is None:
        # PyYAML only for frontmatter that is not flat (see `parse_header`)
        from orange.store import yamlfront

        header = yamlfront.dump(dict(frontmatter))
    if header.strip() == "{}":
        header = ""
    text = f"{_FENCE}\n{header}{_FENCE}\n{body}"
    if _has_surrogate(body) or _has_surrogate(dict(frontmatter)):
        raise InvalidInput(
            "text that is not UTF-8 cannot go into a task",
            hint="pass the summary, branch or text as UTF-8",
        )
    if _over(header, MAX_FRONTMATTER):
        raise InvalidInput(
            f"the task's frontmatter would be larger than {MAX_FRONTMATTER // 1024} KiB",
            hint="keep long text in the body (a section), not in a field",
        )
    if _over(text, MAX_FILE):
        raise InvalidInput(
            f"TASK.md would be larger than {MAX_FILE // 1024 // 1024} MiB",
            hint="keep the task's text shorter; put long output in files on the branch",
        )
    return text


def _flat_yaml(frontmatter: Mapping[str, Any]) -> str | None:
    """What the dumper writes (`join`) for frontmatter of the flat shape `orange.store.flat`
    reads, made line by line (the dumper's Python costs an agent's update 1 % of its
    CPU); None for anything else: a value other than null, a boolean, an int, an empty
    dict or list or printable ASCII text; a key not a plain identifier.  A property test
    holds it equal to the dumper."""
    lines = []
    for key, value in frontmatter.items():
        if type(key) is not str or not _plain_key(key):
            return None
        if type(value) is str:
            text = _flat_text(value)
            if text is None:
                return None
        elif value is None or type(value) is bool:
            text = "null" if value is None else "true" if value else "false"
        elif type(value) is int:
            text = str(value)
        elif type(value) in (dict, list) and not value:
            text = "{}" if type(value) is dict else "[]"
        else:
            return None
        lines.append(f"{key}: {text}\n")
    return "".join(lines)


_PLAIN_KEYS: set[str] = set()  # keys checked already (bounded)


def _plain_key(key: str) -> bool:
    """A key the dumper writes as it is: letters, digits, _ and -, a letter or _ first
    (never an indicator), short (a simple key), read back as text."""
    if key in _PLAIN_KEYS:
        return True
    plain = 0 < len(key) < 100 and key[0] in flat.KEY_FIRST and not key.strip(flat.KEY_CHARS)
    plain = plain and not flat.number_like(key) and _resolves_as_text(key)
    if plain and len(_PLAIN_KEYS) < 4096:
        _PLAIN_KEYS.add(key)
    return plain


def _flat_text(text: str) -> str | None:
    """Printable ASCII text as the dumper writes it as a mapping's value (`_represent_str`,
    then the emitter's choice): plain when a plain scalar reads back as this text, else
    single-quoted; None for other text."""
    if not (text.isascii() and text.isprintable()):
        return None  # a line break, a control, or beyond ASCII: the dumper's to write
    plain = text and not flat.number_like(text) and _resolves_as_text(text)
    if plain and text[0] not in "#,[]{}&*!|>'\"%@` " and text[-1] not in " :":
        lone = text[0] in "?:-" and text[1:2] in ("", " ")  # an indicator
        inside = ": " in text or " #" in text or text.startswith(("---", "..."))
        if not lone and not inside:
            return text
    return "'" + text.replace("'", "''") + "'"


# Plain text the dumper's resolver (YAML 1.1) reads as something else, besides what
# `flat.number_like` takes for a number (integers, floats, times and dates all begin
# with a digit, a sign or a dot): booleans, nulls, the merge key, the value key and the
# indicators of a tag, an anchor and an alias alone.  A test holds these to PyYAML's
# table (`yaml.SafeDumper.yaml_implicit_resolvers`).
_NOT_TEXT = frozenset(("yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off"))
_NOT_TEXT |= {"OFF", "true", "True", "TRUE", "false", "False", "FALSE"}
_NOT_TEXT |= {"~", "null", "Null", "NULL", "<<", "=", "!", "&", "*"}


def _resolves_as_text(text: str) -> bool:
    """Whether the dumper's resolver reads ``text`` (not `flat.number_like`), written
    plain, as text."""
    return text not in _NOT_TEXT


# Lone surrogates: what Python makes of bytes that are not UTF-8 (in argv, say).
# (Compiled when first needed, see `_NOT_PRINTABLE`; never for ASCII text.)
_SURROGATE = "[\ud800-\udfff]"


def _has_surrogate(value: object, depth: int = 0) -> bool:
    """Whether a frontmatter value holds text that was not UTF-8 (a lone surrogate),
    which the dumper would write as an escape no reader turns back into text."""
    if isinstance(value, str):
        return not value.isascii() and re.search(_SURROGATE, value) is not None
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, dict):
        return any(
            _has_surrogate(k, depth + 1) or _has_surrogate(v, depth + 1) for k, v in value.items()
        )
    if isinstance(value, list | tuple):
        return any(_has_surrogate(item, depth + 1) for item in value)
    return False


def _over(text: str, limit: int) -> bool:
    """Whether ``text`` is more than ``limit`` bytes as UTF-8 (lone surrogates count
    three); encoded only when it could be (a character is at most four bytes)."""
    return len(text) > limit // 4 and len(text.encode("utf-8", "surrogatepass")) > limit


def _check_size(text: str, where: str) -> None:
    if _over(text, MAX_FILE):
        raise BrokenTaskFile(f"{where}: TASK.md is larger than {MAX_FILE // 1024 // 1024} MiB")
