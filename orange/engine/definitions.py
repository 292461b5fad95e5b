"""The workflow definitions committed in the ref: which one a task runs under.

A task records the name (``workflow``) and revision (``workflow_rev``) of the
definition it was created under; the text lives in ``meta/workflows/<name>.yml`` (the
first definition used under that name) or ``meta/workflows/<name>@<rev>.yml`` (a later
edit), so every clone and a bare server validate history against the same rules.
"""

from __future__ import annotations

import hashlib
from typing import Protocol

from orange.engine.catalog import load_named
from orange.engine.loader import load_workflow
from orange.engine.workflow import Workflow
from orange.store import layout
from orange.store.task import Task


class TreeReader(Protocol):
    def read(self, path: str) -> bytes | None: ...


_parsed: dict[str, Workflow] = {}


def workflow_rev(workflow: Workflow) -> str:
    return hashlib.sha1(workflow.source_text.encode()).hexdigest()[:10]


def workflow_writes(snap: TreeReader, workflow: Workflow) -> dict[str, bytes | None]:
    """Commit a workflow definition into the ref the first time it is used.

    ``meta/workflows/<name>.yml`` holds the first definition used under a name.  If the
    user's file changes later, the new text goes to ``meta/workflows/<name>@<rev>.yml``
    and new tasks record that ``workflow_rev``: old tasks keep the rules they were
    created under, new ones get the edited rules.
    """
    text = workflow.source_text.encode()
    rev = workflow_rev(workflow)
    primary = layout.workflow_path(workflow.name)
    existing = snap.read(primary)
    if existing is None:
        return {primary: text}
    if existing == text:
        return {}
    variant = layout.workflow_path(f"{workflow.name}@{rev}")
    return {} if snap.read(variant) is not None else {variant: text}


def committed_workflow_text(snap: TreeReader, task: Task) -> str | None:
    """The definition a task was created under, from the ref."""
    name = task.workflow
    rev = task.str_field("workflow_rev")
    primary = snap.read(layout.workflow_path(name))
    if primary is not None and (not rev or hashlib.sha1(primary).hexdigest()[:10] == rev):
        return primary.decode()
    variant = snap.read(layout.workflow_path(f"{name}@{rev}")) if rev else None
    return None if variant is None else variant.decode()


def parse_committed(text: str, name: str) -> Workflow:
    """A committed definition, parsed once per process per content."""
    key = hashlib.sha1(text.encode()).hexdigest()
    if key not in _parsed:
        _parsed[key] = load_workflow(text, f"refs/orange/tasks:meta/workflows/{name}.yml")
    return _parsed[key]


def workflow_of(snap: TreeReader, task: Task) -> Workflow:
    """The definition the task was created under, as committed in the ref."""
    text = committed_workflow_text(snap, task)
    if text is None:
        return load_named(task.workflow)  # a task from before definitions were committed
    return parse_committed(text, task.workflow)
