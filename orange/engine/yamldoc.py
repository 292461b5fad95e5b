"""Reading a parsed YAML document with the key path of every value in its errors.

`Doc` wraps one file: it parses safely through the bounded reader, which rejects
duplicate keys (which plain ``yaml.safe_load`` would silently collapse), deep nesting
and aliases that expand past its bounds (an alias bomb), and offers typed accessors that raise
`WorkflowError` as ``<source>: <key path>: <what is wrong>``.
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable
from typing import NoReturn

import yaml

from orange.errors import WorkflowError
from orange.store import bounded

# libyaml's parser when PyYAML has it (ten times faster, and a workflow is parsed on
# every task command that loads one); the same safe constructor and resolver either way.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def join(path: str, key: str | int) -> str:
    """``transitions`` + 3 -> ``transitions[3]``; ``states`` + ``x`` -> ``states.x``."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def describe(value: object) -> str:
    """How a YAML value reads in an error: ``a list``, ``a string``, ``null`` ..."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    names = {dict: "a mapping", list: "a list", str: "a string", int: "an integer"}
    return names.get(type(value), f"a {type(value).__name__}")


def known(names: Iterable[str]) -> str:
    return ", ".join(names) or "none"


def did_you_mean(word: str, names: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(names), n=1)
    return f'; did you mean "{close[0]}"?' if close else ""


class Doc:
    """One YAML file being read; ``source`` is the name every error starts with."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: str, message: str) -> NoReturn:
        where = f"{path}: " if path else ""
        raise WorkflowError(f"{self.source}: {where}{message}")

    def parse(self, text: str) -> object:
        """``yaml.safe_load`` of ``text``, refusing syntax errors and what the bounded
        reader refuses (`orange.store.bounded`: aliases that expand past its bounds,
        deep nesting, a key twice), checked before anything is built."""
        problem = bounded.yaml_problem(text, aliases=True)
        if problem is not None:
            self.fail(problem.path, problem.text)
        loader = _Loader(text)
        try:
            return loader.get_single_data()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
            reason = " ".join(str(exc.problem or exc.context or "syntax error").split())
            self.fail("", f"invalid YAML: {reason}{where}")
        except yaml.YAMLError as exc:
            self.fail("", f"invalid YAML: {' '.join(str(exc).split())}")
        finally:
            loader.dispose()

    def mapping(
        self,
        value: object,
        path: str,
        allowed: Collection[str],
        required: Collection[str] = (),
    ) -> dict[str, object]:
        """A mapping with only ``allowed`` keys and every ``required`` one."""
        if value is None and not required:
            return {}
        if not isinstance(value, dict):
            self.fail(path, f"expected a mapping, got {describe(value)}")
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"keys must be strings, got {describe(key)} {key!r}")
            if key not in allowed:
                hint = did_you_mean(key, allowed)
                self.fail(join(path, key), f"unknown key (known: {known(allowed)}){hint}")
        for key in required:
            if key not in value:
                self.fail(join(path, key), "required key is missing")
        return value

    def reference(self, value: object, path: str, names: Collection[str], kind: str) -> str:
        """A string naming one of ``names``: ``unknown state "x" (states: ...)``."""
        text = self.string(value, path)
        if text not in names:
            hint = did_you_mean(text, names)
            self.fail(path, f'unknown {kind} "{text}" ({kind}s: {known(names)}){hint}')
        return text

    def string(self, value: object, path: str) -> str:
        if not isinstance(value, str) or not value.strip():
            self.fail(path, f"expected a non-empty string, got {describe(value)}")
        return value

    def integer(self, value: object, path: str, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(path, f"expected an integer, got {describe(value)}")
        if value < minimum:
            self.fail(path, f"must be at least {minimum}, got {value}")
        return value

    def boolean(self, value: object, path: str) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {describe(value)}")
        return value

    def sequence(self, value: object, path: str) -> list[object]:
        """A list; ``null`` counts as empty."""
        if value is None:
            return []
        if not isinstance(value, list):
            self.fail(path, f"expected a list, got {describe(value)}")
        return value

    def strings(self, value: object, path: str) -> list[str]:
        """A list of non-empty, distinct strings."""
        items = [
            self.string(item, join(path, i)) for i, item in enumerate(self.sequence(value, path))
        ]
        for i, item in enumerate(items):
            if item in items[:i]:
                self.fail(join(path, i), f'"{item}" is listed twice')
        return items
