"""The replay checker: is every commit of a tasks history something Orange writes?

It trusts nothing a commit says about itself (trailers can lie in a pushed history):
for every commit it diffs the tree against the first parent and holds each changed
file to the rules of `orange.engine.steps` (every engine-owned field, every commit),
judged against the definition committed in the ref, which must be one the caller
trusts (``trusted(text)``: the server's set, or this host's).  Besides task files:

- a task's identity (id, project, workflow, workflow_rev) never changes, its path and
  id agree, it starts in an initial status, and only a task in a terminal state of its
  workflow is deleted;
- ``meta/workflows/<name>.yml`` (``<name>@<rev>.yml``) is only ever added, with a
  trusted definition of that name (and revision); ``meta/schema`` only rises to the
  version this Orange writes; ``runs/<id>/RUN.md`` (an `orange run`'s record: data
  that decides nothing, `orange.store.runfile`) parses and is never deleted; nothing
  else belongs in the ref.

The walk keeps, per file, its last legal content.  A file changed illegally is
*tainted*: later commits of it are not judged one by one, and a commit that puts its
guarded fields back to the last legal ones (what `orange.engine.forgery` writes on the
host that notices the forgery) *repairs* it.  So the server accepts a pushed history
holding a forged commit followed by its repair — the forged state never reaches the
tip, and refusing it would leave that host unable to push ever again, since the ref is
never rewritten — and rejects one whose tip still holds a forgery (`open`).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pygit2

from orange.engine.definitions import TreeView, committed_workflow_text, parse_committed
from orange.engine.fields import BASELINE_FIELD, DEAD_FIELD, IDENTITY_FIELDS
from orange.engine.ledger import Usage, ledger_problem, usage_of_trailers
from orange.engine.merging import plan_merge
from orange.engine.policy import RUN_POLICY, field_problem
from orange.engine.steps import GUARDED, check_created, check_step, guarded, move_hooks
from orange.engine.workflow import HookSpec, Workflow
from orange.errors import OrangeError
from orange.store import events, layout, runfile
from orange.store.objects import common_dir
from orange.store.since import commits_since
from orange.store.syncmerge import Walked, changed_entries, opened
from orange.store.task import Task
from orange.store.treediff import Entry, Listings, changed_files, entry_at

if TYPE_CHECKING:
    import pygit2

Trusted = Callable[[str], bool]
# How far back `Checker.pending` looks for the bare move whose hooks are applied.
LOOKBACK = 200
_MERGE_FOLDERS = 40_000  # small trees a merge's check keeps (at 5,000 per side it peaks at 20 MiB)


@dataclass(frozen=True)
class Violation:
    commit: str
    task_id: str  # the task's id, or the path of a file that is no task's
    reason: str
    path: str = ""
    untrusted: bool = False  # legal, but under a definition the caller does not trust

    def __str__(self) -> str:
        return f"commit {self.commit[:10]}: task {self.task_id}: {self.reason}"


@dataclass
class Checker:
    """Walks commits in order, keeping per file its last legal content."""

    repo: pygit2.Repository
    trusted: Trusted
    found: list[Violation] = field(default_factory=list)
    tainted: dict[str, tuple[Violation, bytes | None]] = field(default_factory=dict)
    repaired: list[Violation] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)  # ids of tasks legally deleted
    _trust: dict[str, bool] = field(default_factory=dict)
    # (name, rev, id of its primary blob, of its variant) -> (definition, trusted here)
    _workflows: dict[tuple[str, str, str | None, str | None], tuple[Workflow, bool]] = field(
        default_factory=dict
    )
    # Task files a legal bare move started in this walk (`stranded` looks at them again).
    _starts: set[str] = field(default_factory=set)
    # The trees of the commits walked last (a commit's parent was walked just before),
    # and which tasks each commit changed: a merge commit's check plans the merge of
    # its parents, and need not walk again the side walked just before it.
    _walked: Walked = field(init=False)

    def __post_init__(self) -> None:
        self._walked = Walked(Listings(self.repo))

    @functools.cached_property
    def default_branches(self) -> frozenset[str]:
        """The repository's default branch, no task's branch (`orange.engine.policy.
        own_branch_problem`): read once a walk, when a task is new or renamed."""
        return default_branches(self.repo)

    @property
    def open(self) -> list[Violation]:
        """What the walked history still holds at its end: every untrusted definition
        and every forgery no later commit repaired."""
        found = self.found
        return [
            v
            for v in found
            if v.untrusted or not v.path or self.tainted.get(v.path, (None,))[0] is v
        ]

    def run(self, new: str, old: str | None = None) -> Checker:
        """Check the commits reachable from ``new`` but not from ``old`` (all if None)."""
        for commit in commits_since(self.repo, new, old or None):
            self.check_commit(commit)
        return self

    def verify(
        self, new: str, old: str | None = None, carried_out: frozenset[str] = frozenset()
    ) -> Checker:
        """`run`, then `stranded` at ``new``: what a history that reached the ref holds."""
        self.run(new, old).stranded(new, carried_out)
        return self

    def check_commit(self, commit: pygit2.Commit) -> None:
        if len(commit.parents) > 1:
            self._check_merge(commit)
            return
        parent = commit.parents[0] if commit.parents else None
        before = parent.tree if parent else None
        record = _usage_record(commit)
        folders: list[bytes] = []
        listings = self._walked.listings
        for path, old, new in changed_files(self.repo, before, commit.tree, listings, folders):
            if path in self.tainted:
                self._try_repair(path, new)
                continue
            claimed = record[1] if record and path in _ledger_paths(record[0]) else None
            reason, untrusted = self.check_change(
                commit.tree, parent, path, old, new, claimed=claimed
            )
            if new is None and not reason and path.endswith("/TASK.md"):
                self.deleted.add(path.split("/")[2])
            if reason:
                task_id = path.split("/")[2] if path.count("/") >= 3 else path
                violation = Violation(str(commit.id), task_id, reason, path, untrusted)
                if untrusted and any(v.path == path and v.untrusted for v in self.found):
                    continue  # reported once per file
                self.found.append(violation)
                if not untrusted:
                    self.tainted[path] = (violation, old)
        self._walked.add(commit, folders)

    def check_change(
        self,
        tree: pygit2.Tree,
        parent: pygit2.Commit | None,
        path: str,
        old: bytes | None,
        new: bytes | None,
        *,
        claimed: Usage | None = None,
    ) -> tuple[str | None, bool]:
        """(why ``old -> new`` at ``path`` is not legal, whether only trust is missing).
        ``claimed``: the usage record of the commit for this task (its trailers)."""
        try:
            if path.startswith("tasks/"):
                return self._check_task(tree, parent, path, old, new, claimed)
            if path == layout.SCHEMA_PATH:
                return _check_schema(old, new), False
            if path.startswith(f"{layout.WORKFLOWS_DIR}/"):
                return self._check_definition(path, old, new)
            if path.startswith(f"{runfile.RUNS_DIR}/"):
                if new is None:
                    return f"{path}: a run's record is never deleted", False
                problem = runfile.check_path(path, new) or _run_fields(path, old, new, claimed)
                return problem, False
            return f"{path}: only tasks/, runs/ and meta/ belong in {layout.TASKS_REF}", False
        except OrangeError as exc:
            return exc.message, False
        except UnicodeDecodeError:
            return f"{path}: not UTF-8 text", False

    def _check_task(
        self,
        tree: pygit2.Tree,
        parent: pygit2.Commit | None,
        path: str,
        old: bytes | None,
        new: bytes | None,
        claimed: Usage | None = None,
    ) -> tuple[str | None, bool]:
        if not path.endswith("/TASK.md") or path.count("/") != 3:
            return f"{path}: only TASK.md files belong under tasks/", False
        if new is None:
            assert old is not None and parent is not None
            before = Task.parse(old.decode("utf-8"), where=path, exact=True)
            workflow = self.workflow(parent.tree, before)[0]
            if workflow.is_terminal(before.status):
                return None, False
            ended = " or ".join(sorted(workflow.terminal_states))
            return f"deleted while {before.status}; only a {ended} task can be deleted", False
        # Exact: a text field written as a list or a number is judged as written.
        after = Task.parse(new.decode("utf-8"), where=path, exact=True)
        if layout.task_path(after.id) != path:
            return f"{path}: id {after.id!r} does not match its path", False
        if old is None:
            workflow, trusted = self.workflow(tree, after)
            reason = check_created(workflow, after, default_branches=self.default_branches)
        else:
            before = Task.parse(old.decode("utf-8"), where=path, exact=True)
            changed = [
                f for f in sorted(IDENTITY_FIELDS) if before.fields.get(f) != after.fields.get(f)
            ]
            if changed:
                return f"{', '.join(changed)} cannot change", False
            workflow, trusted = self.workflow(tree, after)
            reason = check_step(
                workflow,
                before,
                after,
                lambda: self.pending(parent, path),
                claimed,
                default_branches=self.default_branches,
            )
            if reason is None and _bare_start(workflow, before, after):
                self._starts.add(path)
            elif reason is not None and self._undoes_start(parent, path, new):
                reason = None  # a stranded start put back (`stranded`), by Orange or by hand
        if reason is None and not trusted:
            return (
                f"workflow {after.workflow!r}: its committed definition is not trusted here",
                True,
            )
        return reason, False

    def _check_definition(
        self, path: str, old: bytes | None, new: bytes | None
    ) -> tuple[str | None, bool]:
        if old is not None or new is None:
            return f"{path}: a committed definition never changes", False
        name = path.removeprefix(f"{layout.WORKFLOWS_DIR}/").removesuffix(".yml")
        base, _, rev = name.partition("@")
        if rev and hashlib.sha1(new).hexdigest()[:10] != rev:
            return f"{path}: its text is not revision {rev}", False
        text = new.decode("utf-8")
        if parse_committed(text, base).name != base:
            return f"{path}: the definition is not named {base!r}", False
        if not self.is_trusted(text):
            return f"{path}: the definition is not trusted here", True
        return None, False

    def workflow(self, tree: pygit2.Tree, task: Task) -> tuple[Workflow, bool]:
        """The task's committed definition, and whether the caller trusts it: read,
        hashed and looked up once per walk for the blobs it can come from (a commit
        seldom changes them; reading them for every commit was a fifth of a replay)."""
        name, rev = task.workflow, task.str_field("workflow_rev")
        key = (
            name,
            rev,
            _blob_id(tree, layout.workflow_path(name)),
            _blob_id(tree, layout.workflow_path(f"{name}@{rev}")) if rev else None,
        )
        found = self._workflows.get(key)
        if found is None:
            text = committed_workflow_text(TreeView(tree), task)
            if text is None:
                raise OrangeError(f"workflow {task.workflow!r} is not committed in the ref")
            found = self._workflows[key] = (parse_committed(text, name), self.is_trusted(text))
        return found

    def is_trusted(self, text: str) -> bool:
        if text not in self._trust:
            self._trust[text] = self.trusted(text)
        return self._trust[text]

    def pending(
        self, start: pygit2.Commit | None, path: str
    ) -> tuple[Task, tuple[HookSpec, ...]] | None:
        """The hooks still to apply to the task at ``path`` as of ``start``: those of the
        bare move (a plain-git commit) that brought it to its status, with the task
        before that move, when no hook field changed since (`Engine.run_actions` applies
        them once, ``hooks.applied``).  None otherwise."""
        found = self._pending_move(start, path)
        return None if found is None else found[1:]

    def _pending_move(
        self, start: pygit2.Commit | None, path: str
    ) -> tuple[pygit2.Commit, Task, tuple[HookSpec, ...]] | None:
        """`pending`, with the commit of that bare move."""
        now = _task_at(start, path) if start is not None else None
        current = start
        for _ in range(LOOKBACK):
            if now is None or current is None or not current.parents:
                return None
            previous = current.parents[0]
            if _blob_id(current.tree, path) != _blob_id(previous.tree, path):
                after, before = _task_at(current, path), _task_at(previous, path)
                if after is None or before is None:
                    return None
                if after.status != before.status:
                    workflow = self.workflow(current.tree, before)[0]
                    skip = ("status", "crash_count", BASELINE_FIELD, DEAD_FIELD)
                    names = [n for n in guarded(workflow) if n not in skip]
                    if any(now.fields.get(n) != before.fields.get(n) for n in names):
                        return None  # the move was made by the engine, or hooks ran since
                    hooks = move_hooks(workflow, before, after.status)
                    return None if hooks is None else (current, before, hooks)
            current = previous
        return None

    def stranded(self, end: str, carried_out: frozenset[str] = frozenset()) -> list[Violation]:
        """The bare moves of this walk that start a task (their hooks acquire a
        workspace) and, at ``end``, still wait for those hooks: no one will run them.

        The host that commits a bare move runs its hooks at once (the tasks checkout's
        ``post-commit``, `orange.engine.external`), and a synced project pushes the move
        with them (the claim); a task with no workspace is bound to no host, so a
        start that arrives without them (a push, a fetch) would leave the task stuck in
        a working status with no workspace and no agent.  Each is tainted with the task
        before the move as its last legal state, so the caller restores it (or, on the
        server, refuses it).  ``carried_out``: the commits of moves a tasks checkout on
        this host is carrying out (its ``HEAD``), whose hooks are on their way."""
        tip = self.repo[end].peel(pygit2.Commit)
        found: list[Violation] = []
        for path in sorted(self._starts - self.tainted.keys()):
            now = _task_at(tip, path)
            move = self._pending_move(tip, path)
            if now is None or now.str_field("workspace") or move is None:
                continue
            commit, before, hooks = move
            if str(commit.id) in carried_out or not _acquires(hooks):
                continue
            reason = (
                f"{before.status} -> {now.status} was committed with plain git and its "
                "hooks never ran (no workspace acquired, no agent started); the host that "
                "moves a task runs them before it pushes"
            )
            violation = Violation(str(commit.id), now.id, reason, path)
            found.append(violation)
            self.found.append(violation)
            self.tainted[path] = (violation, before.render().encode())
        return found

    def _undoes_start(self, parent: pygit2.Commit | None, path: str, new: bytes) -> bool:
        """Whether ``new`` puts a task a bare start left stranded at ``parent`` back to
        its state before that move (what `stranded`'s restore writes)."""
        move = self._pending_move(parent, path)
        now = _task_at(parent, path) if parent is not None else None
        if move is None or now is None or now.str_field("workspace"):
            return False
        legal = move[1].render().encode()
        return _acquires(move[2]) and _restores(path, legal, new, self.default_branches)

    def _check_merge(self, commit: pygit2.Commit) -> None:
        """A merge commit (sharing) holds exactly the sync merge of its two parents."""
        parents = commit.parents
        if len(parents) > 2:
            reason = "a merge of more than two histories is never Orange's"
            self.found.append(Violation(str(commit.id), layout.TASKS_REF, reason, ""))
            return
        # The plan's two diffs and this one read the same trees: kept for the three.
        listings = Listings(self.repo, small=_MERGE_FOLDERS)
        walked = Walked(listings, self._walked.tasks)
        made = plan_merge(self.repo, parents[0], parents[1], walked)
        folders: list[bytes] = []
        actual = changed_entries(listings, parents[0].tree, commit.tree, folders)
        self._walked.add(commit, folders)
        # A task folder the plan takes whole from their side is their tree, by id; any
        # other folder the merge changed, or one it did not take as planned, is compared
        # file by file (what the plan writes there against what the merge holds).
        taken = {
            folder
            for folder, tree in made.folders.items()
            if folder in actual and _hex(actual[folder][1]) == (tree and str(tree))
        }
        rest = {path: entries for path, entries in actual.items() if path not in taken}
        found = {path: _hex(after) for path, (_, after) in opened(listings, rest, rest.keys())}
        expected = {path: _blob_of(content) for path, content in made.writes.items()}
        planned = {
            folder: (entry_at(listings, parents[0].tree_id.raw, folder), tree)
            for folder, tree in made.folders.items()
            if folder not in taken
        }
        for folder, (mine, tree) in planned.items():
            theirs = None if tree is None else (b"40000", b"", tree.raw)
            for path, (_, after) in opened(listings, {folder: (mine, theirs)}, {folder}):
                expected[path] = _hex(after)
        for path in sorted(found.keys() | expected.keys()):
            if found.get(path, _ABSENT) == expected.get(path, _ABSENT) or path in self.tainted:
                continue
            task_id = path.split("/")[2] if path.count("/") >= 3 else path
            reason = f"merge commit differs from Orange's merge of its parents at {path}"
            violation = Violation(str(commit.id), task_id, reason, path)
            self.found.append(violation)
            self.tainted[path] = (violation, _read(parents[0].tree, path))

    def _try_repair(self, path: str, new: bytes | None) -> None:
        violation, legal = self.tainted[path]
        if _restores(path, legal, new, self.default_branches):
            del self.tainted[path]
            self.repaired.append(violation)


def default_branches(repo: pygit2.Repository) -> frozenset[str]:
    """The repository's default branch as the side replaying a history knows it: a bare
    repository's ``HEAD`` (the server's), a clone's ``origin/HEAD`` and the default
    branch of the registered project whose repository this is (a clone's ``HEAD`` is
    only what it has checked out now)."""
    found: set[str] = set()
    refs = [("HEAD", "refs/heads/")] if repo.is_bare else []
    refs.append(("refs/remotes/origin/HEAD", "refs/remotes/origin/"))
    for name, prefix in refs:
        try:
            target = repo.references.get(name)
        except (pygit2.GitError, ValueError):
            continue
        pointed = target.target if target is not None else None
        if isinstance(pointed, str) and pointed.startswith(prefix):
            found.add(pointed.removeprefix(prefix))
    from orange import projects  # the registry: read once a walk, if a branch is judged

    registered = projects.default_branch_at(common_dir(Path(repo.path)))
    if registered:
        found.add(registered)
    return frozenset(found)


def check_history(
    repo: pygit2.Repository, new: str, old: str | None = None, *, trusted: Trusted
) -> list[Violation]:
    """What the commits reachable from ``new`` but not from ``old`` leave illegal or
    untrusted at ``new`` (`Checker.open`), first illegal step first."""
    return Checker(repo, trusted).verify(new, old).open


def _usage_record(commit: pygit2.Commit) -> tuple[str, Usage] | None:
    """(task id, usage record) a commit's trailers carry, if any (`orange.engine.ledger`):
    only the task the commit names (``Orange-Task``) may have its ledger changed by it."""
    message = commit.message
    if "Orange-Tokens-In" not in message:
        return None
    trailers = events.parse_trailers(message[:65536])
    usage = usage_of_trailers(trailers)
    task_id = trailers.get("Orange-Task", "")
    return None if usage is None or not layout.valid_task_id(task_id) else (task_id, usage)


def _ledger_paths(record_id: str) -> tuple[str, str]:
    """The files whose ledger a usage record naming ``record_id`` may change: that
    task's TASK.md, or that run's RUN.md (its architect's usage)."""
    run = runfile.run_path(record_id) if runfile.valid_run_id(record_id) else ""
    return layout.task_path(record_id), run


def _run_fields(path: str, old: bytes | None, new: bytes, claimed: Usage | None) -> str | None:
    """Why a run record's change breaks `RUN_POLICY` (its text already parses), or its
    ledger is not what the commit's usage record (``claimed``) makes it."""
    run_id = path.split("/")[1]
    try:
        before = None if old is None else runfile.load(old, run_id).fields
    except OrangeError:
        before = None  # a record that was broken: judged as new
    after = runfile.load(new, run_id).fields
    problem = field_problem(before, after, (), RUN_POLICY)
    return problem or ledger_problem(before or {}, after, claimed)


def _restores(
    path: str, legal: bytes | None, new: bytes | None, default_branches: frozenset[str]
) -> bool:
    """Whether ``new`` puts back what the engine owns of ``legal`` (the body may
    differ; a task whose last legal state is ended may also be deleted)."""
    if legal is None or new is None or not path.startswith("tasks/"):
        return legal == new
    try:
        was = Task.parse(legal.decode("utf-8"), where=path, exact=True)
        now = Task.parse(new.decode("utf-8"), where=path, exact=True)
    except (OrangeError, UnicodeDecodeError):
        return False
    # The fields `steps.GUARDED` names (a workflow's own hook fields are put back by the
    # repair too, but recognising one needs no definition, which may be unreadable), and
    # no field changed since the legal state that the field policy refuses: a later
    # commit that leaves a forged branch or an unknown field in place repairs nothing.
    names = (*IDENTITY_FIELDS, *GUARDED)
    if any(was.fields.get(n) != now.fields.get(n) for n in names):
        return False
    return field_problem(was.fields, now.fields, names, default_branches=default_branches) is None


def _hex(entry: Entry | None) -> str | None:
    return None if entry is None else entry[2].hex()


def _blob_of(content: bytes | pygit2.Oid | None) -> str | None:
    """The blob id a merge's write gives its path (None: deleted)."""
    if content is None or isinstance(content, pygit2.Oid):
        return None if content is None else str(content)
    return str(pygit2.hash(content))


def _check_schema(old: bytes | None, new: bytes | None) -> str | None:
    wanted = f"{layout.SCHEMA_VERSION}\n".encode()
    if new != wanted or (old is not None and _version(old) >= layout.SCHEMA_VERSION):
        version = layout.SCHEMA_VERSION
        return f"{layout.SCHEMA_PATH}: only Orange's migration to schema {version} changes it"
    return None


def _version(data: bytes) -> int:
    try:
        return int(data.decode().strip())
    except ValueError:
        return 10**6


_ABSENT = object()


def _read(tree: pygit2.Tree, path: str) -> bytes | None:
    try:
        return bytes(tree[path].read_raw())
    except KeyError:
        return None


def _blob_id(tree: pygit2.Tree, path: str) -> str | None:
    try:
        return str(tree[path].id)
    except KeyError:
        return None


def _task_at(commit: pygit2.Commit, path: str) -> Task | None:
    try:
        return Task.parse(commit.tree[path].read_raw().decode("utf-8"), where=path)
    except (KeyError, OrangeError, UnicodeDecodeError):
        return None


def _acquires(hooks: tuple[HookSpec, ...]) -> bool:
    return any(spec.action == "acquire_workspace" for spec in hooks)


def _bare_start(workflow: Workflow, before: Task, after: Task) -> bool:
    """Whether the legal step ``before -> after`` is a move whose hooks would acquire a
    workspace, committed without one (a bare move: its hooks still to run)."""
    if before.status == after.status or after.str_field("workspace"):
        return False
    hooks = move_hooks(workflow, before, after.status)
    return hooks is not None and _acquires(hooks)
