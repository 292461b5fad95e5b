"""The replay checker: is every commit of a tasks history a legal step?

It trusts nothing a commit says about itself (trailers can lie in a pushed history):
for every commit it diffs the task files against the parent and checks each status
change against the workflow definition committed in the ref — the transition exists
(or is the workflow's escalation after a counted crash), its ``when`` held on the
previous frontmatter, its gate held on the new body, fresh against the baseline
recorded when the previous state was entered.  New tasks must start in an initial
status; ids must match their paths.  Used by tests and by the server-side ``update``
git hook, which has no ``projects.json``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pygit2

from orange.engine.definitions import committed_workflow_text, parse_committed
from orange.engine.fields import BASELINE_FIELD
from orange.engine.gates import check_gate
from orange.engine.workflow import Workflow
from orange.errors import OrangeError
from orange.store import layout
from orange.store.task import Task

if TYPE_CHECKING:
    import pygit2


@dataclass(frozen=True)
class Violation:
    commit: str
    task_id: str
    reason: str

    def __str__(self) -> str:
        return f"commit {self.commit[:10]}: task {self.task_id}: {self.reason}"


def check_history(repo: pygit2.Repository, new: str, old: str | None = None) -> list[Violation]:
    """Check the commits reachable from ``new`` but not from ``old`` (all if None)."""

    walker = repo.walk(new, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.REVERSE)
    if old:
        walker.hide(old)
    found: list[Violation] = []
    for commit in walker:
        found.extend(check_commit(repo, commit))
    return found


def check_commit(repo: pygit2.Repository, commit: pygit2.Commit) -> list[Violation]:
    # A merge (sharing) is checked against its first parent like any other commit.
    parents = commit.parents
    parent_tree = parents[0].tree if parents else None
    found: list[Violation] = []
    for path, old_blob, new_blob in _changed_task_files(repo, parent_tree, commit.tree):
        task_id = path.split("/")[2] if path.count("/") >= 3 else path
        try:
            reason = _check_change(commit, path, old_blob, new_blob)
        except OrangeError as exc:
            reason = exc.message
        if reason:
            found.append(Violation(str(commit.id), task_id, reason))
    return found


def _changed_task_files(
    repo: pygit2.Repository, old: pygit2.Tree | None, new: pygit2.Tree
) -> Iterator[tuple[str, bytes | None, bytes | None]]:

    diff = new.diff_to_tree(swap=True) if old is None else old.diff_to_tree(new)
    for delta in diff.deltas:
        added = delta.status == pygit2.enums.DeltaStatus.ADDED
        deleted = delta.status == pygit2.enums.DeltaStatus.DELETED
        path = delta.old_file.path if deleted else delta.new_file.path
        if not path.startswith("tasks/"):
            continue
        old_data = None if added else repo[delta.old_file.id].read_raw()
        new_data = None if deleted else repo[delta.new_file.id].read_raw()
        yield path, old_data, new_data


def _check_change(
    commit: pygit2.Commit, path: str, old: bytes | None, new: bytes | None
) -> str | None:
    if new is None:
        return None  # deletion: the engine only deletes ended tasks, and git keeps them
    if not path.endswith("/TASK.md"):
        return f"{path}: only TASK.md files belong under tasks/"
    after = Task.parse(new.decode("utf-8"), where=path)
    if layout.task_path(after.id) != path:
        return f"{path}: id {after.id!r} does not match its path"
    workflow = _workflow(commit, after)
    if old is None:
        if after.status not in workflow.initial_statuses:
            return f"created in {after.status!r}, not an initial status of {workflow.name}"
        return None
    before = Task.parse(old.decode("utf-8"), where=path)
    if before.status == after.status:
        return None
    return _check_move(workflow, before, after)


def _check_move(workflow: Workflow, before: Task, after: Task) -> str | None:
    src, dst = before.status, after.status
    if workflow.is_terminal(src):
        return f"moved out of terminal status {src}"
    escalation = workflow.escalation
    escalated = (
        escalation is not None
        and escalation.to == dst
        and src in workflow.active_states()
        and before.int_field("crash_count") >= 1
    )
    candidates = workflow.transitions_between(src, dst)
    passing = [t for t in candidates if t.when is None or t.when.holds(before.fields)]
    if not passing:
        if escalated:
            return None  # the crash rule's monitor-only move, after a counted crash
        if not candidates:
            if escalation is not None and escalation.to == dst:
                return f"escalation {src} -> {dst} without a counted crash"
            return f"illegal transition {src} -> {dst}"
        conditions = " or ".join(str(t.when) for t in candidates if t.when)
        return f"{src} -> {dst} needs {conditions}"
    gate = passing[0].gate
    if gate is not None:
        raw = before.fields.get(BASELINE_FIELD)
        baseline = {str(k): str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
        result = check_gate(gate, after.body, baseline)
        if not result.ok and not escalated:
            return f"{src} -> {dst}: {result.message}"
    if after.int_field("crash_count") != 0:
        return f"{src} -> {dst} did not reset crash_count"
    return None


class _TreeView:
    """Reads files of one commit's tree (what `committed_workflow_text` needs)."""

    def __init__(self, tree: pygit2.Tree) -> None:
        self.tree = tree

    def read(self, path: str) -> bytes | None:
        try:
            return bytes(self.tree[path].read_raw())
        except KeyError:
            return None


def _workflow(commit: pygit2.Commit, task: Task) -> Workflow:
    text = committed_workflow_text(_TreeView(commit.tree), task)
    if text is None:
        raise OrangeError(f"workflow {task.workflow!r} is not committed in the ref")
    return parse_committed(text, task.workflow)
