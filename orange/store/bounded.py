"""The one bounded reader: the limits every byte of YAML or JSON from the tasks ref or
from a workflow file is held to before anything is built from it (DESIGN §8).

A TASK.md's or RUN.md's frontmatter (`orange.store.yamlfront`), a workflow definition,
committed in ``meta/workflows/`` or a local file (`orange.engine.yamldoc`), and the JSON
sections of a run record (`orange.store.runfile`) are all read through here: at most
`MAX_TEXT` characters, nested at most `MAX_DEPTH` deep, no key twice in one mapping, and
no YAML anchors or aliases (an alias bomb costs nothing to write and exponential time
to follow) except in a workflow file, where they are counted as followed: at most
`MAX_NODES` nodes and `MAX_DEPTH` levels with every alias expanded.  The checks read
libyaml's events, or scan the JSON text once: linear in the text, no recursion, no
object built.
"""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any, NamedTuple

MAX_TEXT = 1024 * 1024  # characters of one YAML document or JSON text (as a TASK.md)
MAX_DEPTH = 32  # nested mappings and sequences
MAX_NODES = 100_000  # nodes of a workflow file with its aliases followed (default.yml: 633)


class Problem(NamedTuple):
    """Why a text is refused: ``path`` is the key path of the offending node (``""`` for
    the whole text), ``text`` the reason in words (``uses YAML anchors or aliases``)."""

    path: str
    text: str


def yaml_problem(text: str, *, aliases: bool = False) -> Problem | None:
    """Why ``text`` may not be built as YAML (None: it may): too long, not valid YAML,
    nested deeper than `MAX_DEPTH`, a key twice in one mapping, and an anchor or alias
    at all, or with ``aliases`` (a workflow file, written by a person who may share a
    list of hooks that way) one that makes the document, aliases followed, more than
    `MAX_NODES` nodes or deeper than `MAX_DEPTH`."""
    if len(text) > MAX_TEXT:
        return Problem("", f"is larger than {MAX_TEXT // 1024} KiB")
    # PyYAML is imported here, not above: a JSON reader and the flat TASK.md reader do
    # not need it, and its import costs more than an agent's whole summary update.
    import yaml

    walk = _Walk(yaml, aliases)
    try:
        for event in yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
            problem = walk.step(event)
            if problem is not None:
                return problem
    except yaml.MarkedYAMLError as exc:
        reason = " ".join(str(exc.problem or exc.context or "syntax error").split())
        if "maximum nesting depth" in reason:  # libyaml 0.2.6's own limit (1000) came first
            return Problem("", f"is nested deeper than {MAX_DEPTH}")
        mark = exc.problem_mark or exc.context_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        return Problem("", f"is not valid YAML: {reason}{where}")
    except yaml.YAMLError as exc:
        return Problem("", f"is not valid YAML: {' '.join(str(exc).split())}")
    return None


class _Frame:
    """An open collection: its key path, whether it is a mapping, whether its next node
    is a key, the keys seen, the key or index of the node being read, its anchor, the
    node count when it opened and the deepest level reached inside it."""

    __slots__ = ("anchor", "at_key", "deepest", "key", "keys", "mapping", "opened", "path")

    def __init__(self, path: str, mapping: bool, anchor: str | None, opened: int, depth: int):
        self.path = path
        self.mapping = mapping
        self.at_key = True
        self.keys: set[str] = set()
        self.key: str | int = 0
        self.anchor = anchor
        self.opened = opened
        self.deepest = depth


class _Walk:
    """libyaml's events of one document, checked as they come; ``nodes`` counts the
    nodes the document holds once every alias is followed."""

    def __init__(self, yaml: ModuleType, aliases: bool) -> None:
        self.yaml = yaml  # PyYAML, imported by `yaml_problem`
        self.aliases = aliases
        self.stack: list[_Frame] = []
        self.nodes = 0
        self.anchored: dict[str, tuple[int, int]] = {}  # anchor -> (nodes, levels)
        self.nodes_as_keys = 0

    def step(self, event: object) -> Problem | None:
        yaml = self.yaml
        alias = isinstance(event, yaml.AliasEvent)  # its `anchor` names the node it repeats
        anchor = None if alias else getattr(event, "anchor", None)
        if (anchor or alias) and not self.aliases:
            return Problem(self.path(), "uses YAML anchors or aliases")
        if isinstance(event, yaml.CollectionEndEvent):
            return self.closed()
        if not isinstance(event, yaml.ScalarEvent | yaml.CollectionStartEvent | yaml.AliasEvent):
            return None
        problem = self.keyed(event)
        if problem is not None:
            return problem
        if anchor and (anchor in self.anchored or any(f.anchor == anchor for f in self.stack)):
            return Problem(self.path(), f"defines the anchor {anchor!r} twice")
        if isinstance(event, yaml.AliasEvent):
            return self.alias(str(event.anchor))
        self.nodes += 1
        if isinstance(event, yaml.ScalarEvent):
            if anchor:
                self.anchored[anchor] = (1, 0)
            self.node_done()
            return None
        if len(self.stack) == MAX_DEPTH:
            return Problem(self.path(), f"is nested deeper than {MAX_DEPTH}")
        mapping = isinstance(event, yaml.MappingStartEvent)
        depth = len(self.stack) + 1
        self.stack.append(_Frame(self.path(), mapping, anchor, self.nodes - 1, depth))
        return None

    def keyed(self, event: object) -> Problem | None:
        """In a mapping, a key node: seen before in it?"""
        yaml = self.yaml
        frame = self.stack[-1] if self.stack else None
        if frame is None or not frame.mapping or not frame.at_key:
            return None
        if isinstance(event, yaml.ScalarEvent):
            key = event.value
        else:  # a collection or an alias as a key: never the same as another key
            self.nodes_as_keys += 1
            key = f"<key node {self.nodes_as_keys}>"
        if key in frame.keys:
            mark = getattr(event, "start_mark", None)
            line = f" (line {mark.line + 1})" if mark else ""
            return Problem(frame.path, f"has the key {key!r} twice{line}")
        frame.keys.add(key)
        frame.key = key
        return None

    def alias(self, name: str) -> Problem | None:
        if name not in self.anchored:  # never defined, or repeating itself (a node in itself)
            return Problem(self.path(), f"uses the alias {name!r} before its anchor ends")
        nodes, levels = self.anchored[name]
        self.nodes += nodes
        if self.nodes > MAX_NODES:
            return Problem(self.path(), f"makes more than {MAX_NODES} nodes with its aliases")
        reached = len(self.stack) + levels
        if reached > MAX_DEPTH:
            return Problem(self.path(), f"is nested deeper than {MAX_DEPTH} with its aliases")
        if self.stack:
            self.stack[-1].deepest = max(self.stack[-1].deepest, reached)
        self.node_done()
        return None

    def closed(self) -> Problem | None:
        frame = self.stack.pop()
        if frame.anchor:
            levels = frame.deepest - len(self.stack)
            self.anchored[frame.anchor] = (self.nodes - frame.opened, levels)
        if self.stack:
            self.stack[-1].deepest = max(self.stack[-1].deepest, frame.deepest)
        self.node_done()
        return None

    def path(self) -> str:
        """The key path of the node being read in the innermost collection."""
        if not self.stack:
            return ""
        return _join(self.stack[-1].path, self.stack[-1].key)

    def node_done(self) -> None:
        """A node inside the innermost collection ended."""
        if not self.stack:
            return
        frame = self.stack[-1]
        if frame.mapping:
            frame.at_key = not frame.at_key
        else:
            frame.key = int(frame.key) + 1


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def json_problem(text: str) -> str | None:
    """Why ``text`` may not be parsed as JSON (None: it may): too long or nested deeper
    than `MAX_DEPTH` (Python's parser recurses, and a deep enough text stops it with a
    RecursionError instead of an answer)."""
    if len(text) > MAX_TEXT:
        return f"is larger than {MAX_TEXT // 1024} KiB"
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None  # cannot be deeper: spares the scan of every ordinary record
    # One pass, strings skipped as it goes (a pattern for string literals rescans to the
    # end from every quote of a string that never closes: quadratic).
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return f"is nested deeper than {MAX_DEPTH}"
        elif char in "]}":
            depth -= 1
    return None


def load_json(text: str) -> Any:
    """``json.loads`` of a text `json_problem` passed; raises ValueError (the reason)
    for one it refuses, as `json.loads` does for a text that is not JSON."""
    problem = json_problem(text)
    if problem is not None:
        raise ValueError(problem)
    return json.loads(text)
