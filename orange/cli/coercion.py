"""Plain option values without pydantic.

typer (0.29, pinned) converts every parsed value through a pydantic ``TypeAdapter``
built on first use, and importing pydantic is most of what typer costs a command
(about 0.16 s of CPU, more than a summary update's whole run).  Orange's options are
strings, integers, paths, flags and lists of strings: `plain` gives each such parameter
a converter that does what the adapter does for a well-formed value, and hands anything
else (a malformed integer, an empty path, a value of another shape) to typer's own
converter, so an error reads exactly as typer words it.  `tests/cli/test_fast.py`
holds the two to the same results for every parameter of every command.

It sets `_runtime_param`, typer's lazily built converter, on each parameter: a private
attribute, so a typer without it (or with parameters shaped otherwise) is left alone:
everything then goes through pydantic, slower and the same (`tests/cli/test_coercion.py`
simulates both).  This is the one module that touches typer's private API; whether it
still pays is figure 4 of `bench/startup_bench.py`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any


class _Plain:
    """The converter of one parameter whose annotation is ``str``, ``int``, ``Path``,
    ``bool`` or ``list[str]``."""

    def __init__(self, annotation: Any) -> None:
        self.annotation = annotation

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        many = param.multiple or param.nargs == -1
        if value is None:
            return () if many else None
        converted = self.convert(value, many)
        if converted is None:  # not a plain value: typer's converter, and its words
            param._runtime_param = None
            return param.get_runtime_param().coerce(value, param=param, ctx=ctx)
        return converted

    def convert(self, value: Any, many: bool) -> Any:
        if many:
            ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
            return list(value) if ok and self.annotation == list[str] else None
        if self.annotation is bool:
            return value if isinstance(value, bool) else None
        if not isinstance(value, str):
            return None
        if self.annotation is str:
            return value
        if self.annotation is int:
            return int(value) if _is_integer(value) else None
        if self.annotation is Path:
            return Path(value) if value else None
        return None


def _is_integer(text: str) -> bool:
    """``-?[0-9]+`` (a string test: the summary update compiles no pattern)."""
    digits = text[1:] if text.startswith("-") else text
    return digits.isascii() and digits.isdigit()


PLAIN = (str, int, Path, bool, list[str])


def plain(command: Any) -> Any:
    """``command`` (typer's click command, and every command under it) with plain
    converters where they fit.  A parameter not shaped as typer 0.29 shapes it (no
    ``_runtime_param``, no ``get_runtime_param``, a type descriptor without its
    ``annotation`` and ``file_annotation``) keeps typer's own converter: the public
    behaviour, only slower."""
    for param in _params(command):
        annotation = _plain_annotation(param)
        if annotation is not None:
            param._runtime_param = _Plain(annotation)
    return command


def _plain_annotation(param: Any) -> Any:
    """The annotation of ``param`` when its converter can be a plain one, else None."""
    if not hasattr(param, "_runtime_param") or not callable(
        getattr(param, "get_runtime_param", None)
    ):
        return None
    descriptor = getattr(param, "type_descriptor", None)
    missing = object()
    annotation = getattr(descriptor, "annotation", missing)
    if getattr(descriptor, "file_annotation", missing) is not None or annotation is missing:
        return None
    return annotation if annotation in PLAIN else None


def _params(command: Any) -> Iterator[Any]:
    """Every parameter of ``command`` and the commands under it, ``--help`` included
    (click makes that option on first use, so it is made here)."""
    yield from command.params
    help_option = command.get_help_option(command.context_class(command))
    if help_option is not None:
        yield help_option
    for sub in getattr(command, "commands", {}).values():
        yield from _params(sub)
