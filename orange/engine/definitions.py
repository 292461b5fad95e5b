"""The workflow definitions committed in the ref: which one a task runs under.

A task records the name (``workflow``) and revision (``workflow_rev``) of the
definition it was created under; the text lives in ``meta/workflows/<name>.yml`` (the
first definition used under that name) or ``meta/workflows/<name>@<rev>.yml`` (a later
edit), so every clone and a bare server validate history against the same rules.
"""

from __future__ import annotations

import copyreg
import hashlib
import os
import pickle
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Protocol

from orange.engine.trust import definition_hash, record_committed, trusted_here
from orange.engine.workflow import Workflow
from orange.errors import OrangeError, Untrusted
from orange.home import orange_home
from orange.store import layout
from orange.store.task import Task

if TYPE_CHECKING:
    import pygit2


class TreeReader(Protocol):
    def read(self, path: str) -> bytes | None: ...


_parsed: dict[str, Workflow] = {}


class TreeView:
    """A `TreeReader` over one git tree (a commit's, on either side of a merge)."""

    def __init__(self, tree: pygit2.Tree) -> None:
        self.tree = tree

    def read(self, path: str) -> bytes | None:
        try:
            return bytes(self.tree[path].read_raw())
        except KeyError:
            return None


def workflow_rev(workflow: Workflow) -> str:
    return hashlib.sha1(workflow.source_text.encode()).hexdigest()[:10]


def workflow_writes(snap: TreeReader, workflow: Workflow) -> dict[str, bytes | None]:
    """Commit a workflow definition into the ref the first time it is used.

    ``meta/workflows/<name>.yml`` holds the first definition used under a name.  If the
    user's file changes later, the new text goes to ``meta/workflows/<name>@<rev>.yml``
    and new tasks record that ``workflow_rev``: old tasks keep the rules they were
    created under, new ones get the edited rules.
    """
    # This host creates a task under this text: trusted here from now on, whatever
    # becomes of the local file (recorded once; task creation only, never a summary).
    record_committed(workflow.source_text, workflow.name)
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
    return definition_text(snap, task.workflow, task.str_field("workflow_rev"))


def definition_text(snap: TreeReader, name: str, rev: str) -> str | None:
    """The committed definition named ``name`` at revision ``rev`` (any, if empty)."""
    primary = snap.read(layout.workflow_path(name))
    if primary is not None and (not rev or hashlib.sha1(primary).hexdigest()[:10] == rev):
        return primary.decode()
    variant = snap.read(layout.workflow_path(f"{name}@{rev}")) if rev else None
    return None if variant is None else variant.decode()


def parse_committed(text: str, name: str) -> Workflow:
    """A committed definition, validated by the loader once per content on this host:
    after that its parsed form comes from a cache (`parsed_cache`)."""
    key = hashlib.sha256(text.encode()).hexdigest()
    if key not in _parsed:
        workflow = _read_parsed(key, text)
        if workflow is None:
            # The loader (and its validation) runs for a definition not seen before.
            from orange.engine.loader import load_workflow

            workflow = load_workflow(text, f"refs/orange/tasks:meta/workflows/{name}.yml")
            _write_parsed(key, workflow)
        _parsed[key] = workflow
    return _parsed[key]


def parsed_cache() -> Path:
    """Parsed definitions, one pickle per definition text and version of the workflow
    model: a change to the model's code makes a new directory, never a stale object."""
    return orange_home() / "cache" / "workflows" / _model_version()


@cache
def _model_version() -> str:
    digest = hashlib.sha256()
    for module in _MODEL_MODULES:
        digest.update((Path(__file__).parent / f"{module}.py").read_bytes())
    return digest.hexdigest()[:16]


def _read_parsed(key: str, text: str) -> Workflow | None:
    try:
        data = (parsed_cache() / f"{key}.pickle").read_bytes()
        workflow = pickle.loads(data)
    except Exception:  # missing, unreadable or from another model: parse again
        return None
    if not isinstance(workflow, Workflow) or workflow.source_text != text:
        return None
    return workflow


def _write_parsed(key: str, workflow: Workflow) -> None:
    directory = parsed_cache()
    try:
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f".{key}.{os.getpid()}.tmp"
        temporary.write_bytes(pickle.dumps(workflow))
        temporary.replace(directory / f"{key}.pickle")
    except OSError:
        pass  # a cache: the next process parses again


def _frozen(mapping: dict[str, object]) -> MappingProxyType[str, object]:
    return MappingProxyType(mapping)


# A parsed workflow holds read-only mappings (hook parameters): pickle them as dicts.
copyreg.pickle(MappingProxyType, lambda proxy: (_frozen, (dict(proxy),)))
# The modules whose code defines what a parsed workflow is.
_MODEL_MODULES = (
    "workflow",
    "when",
    "loader",
    "loadbase",
    "roles",
    "exitparse",
    "hooklist",
    "actionspec",
    "yamldoc",
    "definitions",
)


def workflow_of(snap: TreeReader, task: Task) -> Workflow:
    """The definition the task was created under, as committed in the ref."""
    return definition(snap, task.workflow, task.str_field("workflow_rev"))


def definition(snap: TreeReader, name: str, rev: str) -> Workflow:
    """The committed definition ``name`` at ``rev``, parsed; the named one for a task
    from before definitions were committed."""
    text = definition_text(snap, name, rev)
    if text is None:
        from orange.engine.catalog import load_named  # loads the loader: rare

        return load_named(name)
    return parse_committed(text, name)


def trusted(snap: TreeReader, task: Task, *, refuse: bool = False) -> bool:
    """Whether the task's committed definition is trusted on this host (a task from
    before definitions were committed runs under the local file of its name); with
    ``refuse``, an untrusted one raises `Untrusted` instead."""
    try:
        text = committed_workflow_text(snap, task)
        if text is None or trusted_here(text):
            return True
    except UnicodeDecodeError:
        text = ""  # not UTF-8: no Orange wrote it, and it is trusted nowhere
    if refuse:
        raise untrusted_error(task, text)
    return False


def require_trusted(snap: TreeReader, task: Task) -> None:
    """Refuse (`Untrusted`) a task whose committed definition is not trusted here."""
    trusted(snap, task, refuse=True)


def untrusted_error(task: Task, text: str) -> Untrusted:
    return Untrusted(
        f"task {task.id} runs under a workflow {task.workflow!r} (sha256 "
        f"{definition_hash(text)[:12]}) that this host does not trust: its moves are "
        "refused here",
        hint=f"review and trust it with `orange workflow trust {task.workflow}`, "
        f"or cancel the task with `orange task cancel {task.id}`",
    )


def is_active(snap: TreeReader, task: Task) -> bool:
    """Whether the task is in a non-terminal state of its workflow.  A task whose
    definition cannot be read counts as active: it is shown, and keeps what it holds."""
    try:
        return not workflow_of(snap, task).is_terminal(task.status)
    except OrangeError:
        return True


class Definitions:
    """The committed definitions of one snapshot, each read and parsed once: for code
    that asks about many tasks (a listing, a monitor pass, the pool, ``spawn_next``)."""

    def __init__(self, snap: TreeReader) -> None:
        self._snap = snap
        self._known: dict[tuple[str, str], Workflow | None] = {}
        self._trusted: dict[tuple[str, str], bool] = {}

    def workflow(self, name: str, rev: str) -> Workflow | None:
        """The definition ``name`` at ``rev``; None when it cannot be read."""
        key = (name, rev)
        if key not in self._known:
            try:
                self._known[key] = definition(self._snap, name, rev)
            except OrangeError:
                self._known[key] = None
        return self._known[key]

    def of(self, task: Task) -> Workflow | None:
        return self.workflow(task.workflow, task.str_field("workflow_rev"))

    def is_active(self, name: str, rev: str, status: str) -> bool:
        """Whether ``status`` is not one the definition ends in.  An unknown or
        unreadable definition ends nothing: its tasks are shown, and keep what they
        hold, so a person can look at them."""
        workflow = self.workflow(name, rev)
        return workflow is None or not workflow.is_terminal(status)

    def task_is_active(self, task: Task) -> bool:
        return self.is_active(task.workflow, task.str_field("workflow_rev"), task.status)

    def trusted(self, name: str, rev: str) -> bool:
        """Whether the committed definition ``name`` at ``rev`` is trusted here (one
        read and one hash per definition; a missing one is the local file)."""
        key = (name, rev)
        if key not in self._trusted:
            try:
                text = definition_text(self._snap, name, rev)
                self._trusted[key] = text is None or trusted_here(text)
            except UnicodeDecodeError:
                self._trusted[key] = False  # not UTF-8: trusted nowhere
        return self._trusted[key]

    def task_trusted(self, task: Task) -> bool:
        return self.trusted(task.workflow, task.str_field("workflow_rev"))
