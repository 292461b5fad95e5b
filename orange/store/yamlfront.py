"""TASK.md frontmatter through PyYAML: the loader and dumper for the headers that are
not of the flat shape `orange.store.flat` reads and `orange.store.taskfile` writes.

Loaded only when such a header is met (`orange.store.taskfile` imports it then):
importing PyYAML costs about 20 ms, more than the rest of an agent's summary update,
which reads and writes flat frontmatter only.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from orange.errors import BrokenTaskFile
from orange.store import bounded, flat


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """SafeLoader (libyaml's when present: ten times faster) with YAML-1.2-core-like
    implicit typing and no timestamps (`loader` adds the resolvers)."""


_Loader.yaml_implicit_resolvers = {}
# Implicit types the loader resolves: (tag, regular expression, first characters).
_RESOLVERS = (
    ("tag:yaml.org,2002:null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("tag:yaml.org,2002:bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("tag:yaml.org,2002:int", r"^[-+]?(?:0|[1-9][0-9]*)$", list("-+0123456789")),
)


def loader() -> type[_Loader]:
    """The loader, its resolvers added the first time it is needed (a listing of flat
    frontmatter compiles none of their regular expressions).  Added in one assignment,
    as `add_implicit_resolver` would add them: a loader in another thread sees all of
    them or none."""
    if not _Loader.yaml_implicit_resolvers:
        resolvers: dict[str | None, list[tuple[str, re.Pattern[str]]]] = {}
        for tag, pattern, first in _RESOLVERS:
            for char in first:
                resolvers.setdefault(char, []).append((tag, re.compile(pattern)))
        _Loader.yaml_implicit_resolvers = resolvers
    return _Loader


class Dumper(yaml.SafeDumper):
    """SafeDumper that keeps multi-line strings readable as literal blocks."""


# Characters YAML reads as line breaks, or that a plain/literal scalar cannot carry
# (none of them printable: only text `str.isprintable` refuses is searched).
_NEEDS_DOUBLE_QUOTES = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\r]"


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    if not data.isprintable() and re.search(_NEEDS_DOUBLE_QUOTES, data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style='"')
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    if flat.number_like(data):
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="'")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


Dumper.add_representer(str, _represent_str)
# The same object twice in the frontmatter is written twice, never as an anchor and an
# alias (which readers refuse).
Dumper.ignore_aliases = lambda self, data: True  # type: ignore[method-assign]


def dump(frontmatter: dict[str, Any]) -> str:
    """Frontmatter the flat writer does not write, as YAML (in its own key order)."""
    return yaml.dump(
        frontmatter,
        Dumper=Dumper,
        sort_keys=False,
        allow_unicode=True,
        default_flow_style=False,
        width=1_000_000,
    )


def load(header: str, where: str) -> Any:
    """Frontmatter YAML (its size checked already) as the loader reads it, refused
    (`BrokenTaskFile`) when it is not valid YAML or too deep, or uses anchors or a key
    twice (`_check`)."""
    _check(header, where)
    try:
        return yaml.load(header, Loader=loader())  # _Loader derives from SafeLoader
    except yaml.YAMLError as exc:
        reason = " ".join(str(exc).split())
        raise BrokenTaskFile(f"{where}: frontmatter is not valid YAML: {reason}") from None


def _check(header: str, where: str) -> None:
    """Refuse, before anything is built from it, frontmatter the bounded reader refuses
    (`orange.store.bounded`: too deep, anchors or aliases, a key twice)."""
    problem = bounded.yaml_problem(header)
    if problem is not None:
        raise BrokenTaskFile(f"{where}: frontmatter {problem.text}")
