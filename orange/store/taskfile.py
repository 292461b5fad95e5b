"""TASK.md: YAML frontmatter between ``---`` lines, then a markdown body.

The format is written and read here only.  Properties this module guarantees (tests
check them, since python-frontmatter's dumper strips whitespace and sorts keys):

- the body survives byte for byte (leading blank lines, trailing whitespace, CRLF);
- frontmatter key order is kept, unknown keys survive a round trip;
- strings that YAML 1.1 would read as something else (``no``, ``on``, ``2024-01-01``,
  ``007``, ``1e3``) are written quoted, and are read back as the strings they were,
  even when a human wrote them unquoted: the loader resolves only null, ``true`` /
  ``false`` and plain decimal integers.

Reading the shape ``join`` writes (one ``key: scalar`` line per key, the scalar plain or
single-quoted) skips the YAML loader: ``_flat`` gives exactly what the loader would, and
hands anything else (nesting, lists, block or double-quoted scalars, comments, anchors,
aliases, tags, duplicate keys, CR line ends) back to it.  A cold listing cache parses
every task this way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from orange.errors import BrokenTaskFile, InvalidInput

_FENCE = "---"

# What one task file may hold (DESIGN §8): a file over these is one broken task, and a
# write over them is refused, before anything is built from the data.
MAX_FRONTMATTER = 64 * 1024  # bytes of YAML between the fences
MAX_FILE = 1024 * 1024  # bytes of the whole TASK.md
MAX_DEPTH = 32  # nested mappings and sequences in the frontmatter


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader (libyaml's when present: ten times faster) with YAML-1.2-core-like
    implicit typing and no timestamps."""


_Loader.yaml_implicit_resolvers = {}
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$"), ["~", "n", "N", ""]
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*)$"), list("-+0123456789")
)


# The flat frontmatter `join` writes, read without the loader (see the module doc).
# What YAML reads as itself: no C0/C1 control or NEL (in the classes below), and no
# U+2028/9, BOM, non-character or surrogate (one search first: classes that name
# characters beyond Latin-1 cost every process half a millisecond more to compile).
_NOT_PRINTABLE = r"\x00-\x1f\x7f-\x9f"
_NOT_PRINTABLE_WIDE = re.compile("[\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")
# A key YAML reads as a string (YAML caps an implicit key at 1024 characters).
_KEY = r"(?!(?:null|Null|NULL|true|True|TRUE|false|False|FALSE):)[A-Za-z_][A-Za-z0-9_-]{0,127}"
_QUOTED = rf"'([^{_NOT_PRINTABLE}']*(?:''[^{_NOT_PRINTABLE}']*)*)'"
# A plain scalar: no indicator first (``-?:`` only before a non-space), no ``: `` or
# `` #`` inside, no trailing space or colon.  (Loops unrolled: sre is much quicker
# repeating one class than trying alternatives at every character.)
_PLAIN_CHARS = rf"[^{_NOT_PRINTABLE} :]*"
_PLAIN = (
    rf"(?:[A-Za-z0-9$()+./;<=\\^_~]|[^{_NOT_PRINTABLE}\x20-\x7e]|[-?:](?=[^ \n]))"
    rf"{_PLAIN_CHARS}(?:(?::(?=[^ \n])| (?=[^#\n])){_PLAIN_CHARS})*"
)
# One line: the key, then nothing (null), a single-quoted scalar (its text captured)
# or a plain one.  ``split`` on it leaves only empty strings between the lines when
# every line is one of these.
_FLAT_LINE = re.compile(rf"({_KEY}):(?: {_QUOTED}| ({_PLAIN}))?\n")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_RESOLVED: dict[str, Any] = {"~": None, "null": None, "Null": None, "NULL": None}
_RESOLVED.update(dict.fromkeys(("true", "True", "TRUE"), True))
_RESOLVED.update(dict.fromkeys(("false", "False", "FALSE"), False))


def _flat(header: str) -> dict[str, Any] | None:
    """``header`` as the loader would read it, if it is flat ``key: scalar`` lines;
    None for anything else (the caller then asks the loader)."""
    if _NOT_PRINTABLE_WIDE.search(header):
        return None
    pieces = _FLAT_LINE.split(header)  # [between, key, quoted, plain, between, ...]
    if any(pieces[0::4]):
        return None
    data: dict[str, Any] = {}
    for key, quoted, plain in zip(pieces[1::4], pieces[2::4], pieces[3::4], strict=True):
        if quoted is not None:
            data[key] = quoted.replace("''", "'")
        elif plain is None:
            data[key] = None
        elif plain in _RESOLVED:
            data[key] = _RESOLVED[plain]
        elif plain[0] in "+-0123456789" and _INT.fullmatch(plain):
            data[key] = int(plain)
        else:
            data[key] = plain
    return data if 4 * len(data) + 1 == len(pieces) else None  # duplicates: the loader's


class _Dumper(yaml.SafeDumper):
    """SafeDumper that keeps multi-line strings readable as literal blocks."""


# Plain scalars another YAML reader (1.1 or 1.2) might take for a number.
_NUMBER_LIKE = re.compile(r"^[-+]?(?:\.?[0-9]|\.(?:inf|nan))", re.IGNORECASE)


# Characters YAML reads as line breaks, or that a plain/literal scalar cannot carry.
_NEEDS_DOUBLE_QUOTES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\r]")


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if _NEEDS_DOUBLE_QUOTES.search(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if _NUMBER_LIKE.match(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


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
    return parse_header(_sections(text, where)[0], where)


def parse_header(header: str, where: str) -> dict[str, Any]:
    """The frontmatter text between the ``---`` lines as a mapping."""
    if _over(header, MAX_FRONTMATTER):
        raise BrokenTaskFile(f"{where}: frontmatter is larger than {MAX_FRONTMATTER // 1024} KiB")
    data = _flat(header)
    if data is not None:
        return data
    _check_yaml(header, where)
    try:
        data = yaml.load(header, Loader=_Loader)  # _Loader derives from SafeLoader
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


# What str.splitlines ends a line at, besides "\n".
_OTHER_BREAKS = re.compile("[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def _check_yaml(header: str, where: str) -> None:
    """Refuse, before anything is built from it, frontmatter YAML (its size checked
    already) nested deeper than `MAX_DEPTH`, with anchors or aliases, or with a key
    twice in one mapping.  Reads libyaml's events: linear in the text, no recursion,
    no object built."""
    # One frame per open collection: [is a mapping, next node is a key, keys seen].
    stack: list[tuple[bool, list[bool], set[str]]] = []
    try:
        for event in yaml.parse(header, Loader=_Loader):
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
        raise BrokenTaskFile(f"{where}: frontmatter is not valid YAML: {reason}") from None


def _node_done(stack: list[tuple[bool, list[bool], set[str]]]) -> None:
    """A node inside the innermost collection ended: in a mapping, keys and values
    take turns."""
    if stack and stack[-1][0]:
        stack[-1][1][0] = not stack[-1][1][0]


def _sections(text: str, where: str) -> tuple[str, str]:
    """The frontmatter text between the ``---`` lines, and the body after them."""
    if text.startswith(f"{_FENCE}\n"):  # the usual shape, found without splitting lines
        end = text.find(f"\n{_FENCE}\n", len(_FENCE))
        if end != -1 and _OTHER_BREAKS.search(text, 0, end) is None:
            return text[len(_FENCE) + 1 : end + 1], text[end + len(_FENCE) + 2 :]
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != _FENCE:
        raise BrokenTaskFile(f"{where}: does not start with a '---' frontmatter line")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n") == _FENCE:
            return "".join(lines[1:index]), "".join(lines[index + 1 :])
    raise BrokenTaskFile(f"{where}: frontmatter has no closing '---' line")


def join(frontmatter: Mapping[str, Any], body: str) -> str:
    """Serialise frontmatter (in its own key order) and body into TASK.md text."""
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
    if _SURROGATE.search(body) or _has_surrogate(dict(frontmatter)):
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


# Lone surrogates: what Python makes of bytes that are not UTF-8 (in argv, say).
_SURROGATE = re.compile("[\ud800-\udfff]")


def _has_surrogate(value: object, depth: int = 0) -> bool:
    """Whether a frontmatter value holds text that was not UTF-8 (a lone surrogate),
    which the dumper would write as an escape no reader turns back into text."""
    if isinstance(value, str):
        return _SURROGATE.search(value) is not None
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
