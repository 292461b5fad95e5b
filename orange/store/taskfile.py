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
else back to it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from orange.errors import BrokenTaskFile, InvalidInput
from orange.store import flat

_FENCE = "---"

# What one task file may hold (DESIGN §8): a file over these is one broken task, and a
# write over them is refused, before anything is built from the data.
MAX_FRONTMATTER = 64 * 1024  # bytes of YAML between the fences
MAX_FILE = 1024 * 1024  # bytes of the whole TASK.md
MAX_DEPTH = 32  # nested mappings and sequences in the frontmatter


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader (libyaml's when present: ten times faster) with YAML-1.2-core-like
    implicit typing and no timestamps (`_loader` adds the resolvers)."""


_Loader.yaml_implicit_resolvers = {}
# Implicit types the loader resolves: (tag, regular expression, first characters).
_RESOLVERS = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0|[1-9][0-9]*)$", list("-+0123456789")),
)


def _loader() -> type[_Loader]:
    """The loader, its resolvers added the first time it is needed: an agent's summary
    update reads flat frontmatter (`orange.store.flat`) and compiles none of their
    regular expressions.  Added in one assignment, as `add_implicit_resolver` would
    add them: a loader in another thread sees all of them or none."""
    if not _Loader.yaml_implicit_resolvers:
        resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}
        for tag, pattern, first in _RESOLVERS:
            for char in first:
                resolvers.setdefault(char, []).append((tag, re.compile(pattern)))
        _Loader.yaml_implicit_resolvers = resolvers
    return _Loader


class _Dumper(yaml.SafeDumper):
    """SafeDumper that keeps multi-line strings readable as literal blocks."""


# Plain scalars another YAML reader (1.1 or 1.2) might take for a number (`_number_like`).
_NUMBER_LIKE = r"^[-+]?(?:\.?[0-9]|\.(?:inf|nan))"


# Characters YAML reads as line breaks, or that a plain/literal scalar cannot carry
# (none of them printable: only text `str.isprintable` refuses is searched, and the
# class is compiled then, see `_NOT_PRINTABLE`).
_NEEDS_DOUBLE_QUOTES = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\r]"


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if not data.isprintable() and re.search(_NEEDS_DOUBLE_QUOTES, data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if _number_like(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


def _number_like(text: str) -> bool:
    """Whether ``text`` matches `_NUMBER_LIKE`: a digit first, after a sign, is told by
    string tests; the expression is compiled (`re`'s cache) for the rest that starts
    with a dot, so writing a task compiles none."""
    rest = text[1:] if text[:1] in ("-", "+") else text
    if "0" <= rest[:1] <= "9":
        return True
    return rest[:1] == "." and re.match(_NUMBER_LIKE, text, re.IGNORECASE) is not None


_Dumper.add_representer(str, _represent_str)
# The same object twice in the frontmatter is written twice, never as an anchor and an
# alias (which readers refuse).
_Dumper.ignore_aliases = lambda self, data: True  # type: ignore[method-assign]


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
    _check_yaml(header, where)
    try:
        data = yaml.load(header, Loader=_loader())  # _Loader derives from SafeLoader
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        raise BrokenTaskFile(f"{where}: frontmatter is not valid YAML: {reason}") from None
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


def _check_yaml(header: str, where: str) -> None:
    """Refuse, before anything is built from it, frontmatter YAML (its size checked
    already) nested deeper than `MAX_DEPTH`, with anchors or aliases, or with a key
    twice in one mapping.  Reads libyaml's events: linear in the text, no recursion,
    no object built."""
    # One frame per open collection: [is a mapping, next node is a key, keys seen].
    stack: list[tuple[bool, list[bool], set[str]]] = []
    try:
        for event in yaml.parse(header, Loader=_loader()):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise BrokenTaskFile(f"{where}: frontmatter uses YAML anchors or aliases")
            if isinstance(event, yaml.CollectionEndEvent):
                stack.pop()
                _node_done(stack)
                continue
            if not isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent):
                continue
            if stack and stack[-1][0] and stack[-1][1][0]:  # this node is a mapping key
                key = event.value if isinstance(event, yaml.ScalarEvent) else f"<{id(event)}>"
                if key in stack[-1][2]:
                    raise BrokenTaskFile(f"{where}: frontmatter has the key {key!r} twice")
                stack[-1][2].add(key)
            if isinstance(event, yaml.ScalarEvent):
                _node_done(stack)
            elif len(stack) == MAX_DEPTH:
                raise BrokenTaskFile(f"{where}: frontmatter is nested deeper than {MAX_DEPTH}")
            else:
                stack.append((isinstance(event, yaml.MappingStartEvent), [True], set()))
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        if "maximum nesting depth" in reason:  # libyaml 0.2.6's own limit (1000) came first
            raise BrokenTaskFile(
                f"{where}: frontmatter is nested deeper than {MAX_DEPTH}"
            ) from None
        raise BrokenTaskFile(f"{where}: frontmatter is not valid YAML: {reason}") from None


def _node_done(stack: list[tuple[bool, list[bool], set[str]]]) -> None:
    """A node inside the innermost collection ended: in a mapping, keys and values
    take turns."""
    if stack and stack[-1][0]:
        stack[-1][1][0] = not stack[-1][1][0]


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
        header = yaml.dump(
            dict(frontmatter),
            Dumper=_Dumper,
            sort_keys=False,
            allow_unicode=True,
            default_flow_style=False,
            width=1_000_000,
        )
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


_KEY_CHARS = f"{flat.KEY_FIRST}0123456789-"
_PLAIN_KEYS: set[str] = set()  # keys checked already (bounded)


def _plain_key(key: str) -> bool:
    """A key the dumper writes as it is: letters, digits, _ and -, a letter or _ first
    (never an indicator), short (a simple key), read back as text."""
    if key in _PLAIN_KEYS:
        return True
    plain = 0 < len(key) < 100 and key[0] in flat.KEY_FIRST and not key.strip(_KEY_CHARS)
    plain = plain and not _number_like(key) and _resolves_as_text(key)
    if plain and len(_PLAIN_KEYS) < 4096:
        _PLAIN_KEYS.add(key)
    return plain


def _flat_text(text: str) -> str | None:
    """Printable ASCII text as the dumper writes it as a mapping's value (`_represent_str`,
    then the emitter's choice): plain when a plain scalar reads back as this text, else
    single-quoted; None for other text."""
    if not (text.isascii() and text.isprintable()):
        return None  # a line break, a control, or beyond ASCII: the dumper's to write
    plain = text and not _number_like(text) and _resolves_as_text(text)
    if plain and text[0] not in "#,[]{}&*!|>'\"%@` " and text[-1] not in " :":
        lone = text[0] in "?:-" and text[1:2] in ("", " ")  # an indicator
        inside = ": " in text or " #" in text or text.startswith(("---", "..."))
        if not lone and not inside:
            return text
    return "'" + text.replace("'", "''") + "'"


# The dumper's implicit types (YAML 1.1: yes, on, 1_000, 2024-01-01 ...): text one of
# them would read is written quoted.
_IMPLICIT = yaml.SafeDumper.yaml_implicit_resolvers


def _resolves_as_text(text: str) -> bool:
    """Whether the dumper's resolver reads ``text`` (not empty), written plain, as text."""
    for _tag, expression in _IMPLICIT.get(text[0], []) + _IMPLICIT.get(None, []):
        if expression.match(text):
            return False
    return True


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
