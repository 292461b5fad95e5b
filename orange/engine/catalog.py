"""Finding workflows by name: shipped ones and the user's own.

Shipped workflows are package data (``workflows/*.yml``, importable as
``orange._workflows``); user workflows live in ``$ORANGE_HOME/workflows/<name>.yml``
and override a shipped one of the same name.  Loaded workflows are cached per process,
keyed by file and modification time, so an edited user file is picked up.
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from typing import NamedTuple

from orange.engine.loader import load_workflow, load_workflow_file
from orange.engine.workflow import Workflow
from orange.errors import NotFound
from orange.home import orange_home

SHIPPED_PACKAGE = "orange._workflows"
DEFAULT = "default"

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_cache: dict[tuple[str, int, int], Workflow] = {}


class WorkflowEntry(NamedTuple):
    """One workflow the catalog can load; ``path`` is where its file lives."""

    name: str
    path: str
    is_user: bool


def user_dir() -> Path:
    return orange_home() / "workflows"


def _shipped() -> dict[str, str]:
    root = files(SHIPPED_PACKAGE)
    return {
        entry.name.removesuffix(".yml"): entry.name
        for entry in root.iterdir()
        if entry.name.endswith(".yml") and entry.is_file()
    }


def _user() -> dict[str, Path]:
    folder = user_dir()
    if not folder.is_dir():
        return {}
    return {path.stem: path for path in folder.glob("*.yml") if path.is_file()}


def list_workflows() -> list[WorkflowEntry]:
    """Every loadable workflow, by name; a user file hides the shipped one it overrides."""
    entries = {
        name: WorkflowEntry(name, str(files(SHIPPED_PACKAGE).joinpath(file)), False)
        for name, file in _shipped().items()
    }
    for name, path in _user().items():
        entries[name] = WorkflowEntry(name, str(path), True)
    return [entries[name] for name in sorted(entries)]


def load_named(name: str) -> Workflow:
    """The workflow called ``name``; `NotFound` listing the known names otherwise."""
    user = _user()
    shipped = _shipped()
    if not _NAME.fullmatch(name) or (name not in user and name not in shipped):
        names = ", ".join(sorted({*user, *shipped}))
        raise NotFound(
            f'unknown workflow "{name}" (known: {names})',
            hint=f"add it as {user_dir() / (name + '.yml')}",
        )
    if name in user:
        path = user[name]
        stat = path.stat()
        key = (str(path), stat.st_mtime_ns, stat.st_size)
        if key not in _cache:
            _cache[key] = load_workflow_file(path, source=str(path))
        return _cache[key]
    resource = files(SHIPPED_PACKAGE).joinpath(shipped[name])
    key = (f"{SHIPPED_PACKAGE}/{shipped[name]}", 0, 0)
    if key not in _cache:
        _cache[key] = load_workflow(resource.read_text(encoding="utf-8"), shipped[name])
    return _cache[key]


def clear_cache() -> None:
    """Forget loaded workflows (tests; a long-running process after a reinstall)."""
    _cache.clear()
