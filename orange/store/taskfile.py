"""TASK.md: YAML frontmatter between ``---`` lines, then a markdown body.

The format is written and read here only.  Properties this module guarantees (tests
check them, since python-frontmatter's dumper strips whitespace and sorts keys):

- the body survives byte for byte (leading blank lines, trailing whitespace, CRLF);
- frontmatter key order is kept, unknown keys survive a round trip;
- strings that YAML 1.1 would read as something else (``no``, ``on``, ``2024-01-01``,
  ``007``, ``1e3``) are written quoted, and are read back as the strings they were,
  even when a human wrote them unquoted: the loader resolves only null, ``true`` /
  ``false`` and plain decimal integers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import yaml

from orange.errors import BrokenTaskFile

_FENCE = "---"


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


def split(text: str, *, where: str = "TASK.md") -> tuple[dict[str, Any], str]:
    """Parse a TASK.md into (frontmatter, body).  Raises BrokenTaskFile."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != _FENCE:
        raise BrokenTaskFile(f"{where}: does not start with a '---' frontmatter line")
    for index in range(1, len(lines)):
        if lines[index].rstrip("\r\n") == _FENCE:
            header = "".join(lines[1:index])
            body = "".join(lines[index + 1 :])
            break
    else:
        raise BrokenTaskFile(f"{where}: frontmatter has no closing '---' line")
    try:
        data = yaml.load(header, Loader=_Loader)  # _Loader derives from SafeLoader
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        raise BrokenTaskFile(f"{where}: frontmatter is not valid YAML: {reason}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise BrokenTaskFile(f"{where}: frontmatter must be a mapping of keys to values")
    for key in data:
        if not isinstance(key, str):
            raise BrokenTaskFile(f"{where}: frontmatter key {key!r} is not a string")
    return data, body


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
    return f"{_FENCE}\n{header}{_FENCE}\n{body}"
