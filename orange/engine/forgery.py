"""Forgery is noticed (DESIGN §8): every commit that reached the tasks ref is replayed
once on this host by the server's checker.

Orange's own writes included: rather than trust a reflog message or a trailer to tell
its writes from others' (a plain ``git commit --no-verify`` in a tasks checkout,
``git update-ref``, a fetch), every commit new since the last verified tip is replayed
(`orange.engine.replay.Checker`; the checker accepts all Orange writes).  The verified
tip is recorded in ``<git-common-dir>/orange/verified``: the one record that a commit
was handled, which tests wait on.

An illegal change is never carried out (the caller runs no hooks for it); Orange writes
one commit restoring each forged file's engine-owned fields (status, counters,
workflow, baselines, bindings) and every field the field policy refuses
(`orange.engine.policy`) to their last legal values, keeping the body and the plain
fields, and sets ``attention`` naming the reason and the forged commit.  A forged
file that had no legal state (a task created illegally, a file that does not belong in
the ref) is removed; git keeps it in history, and the restore's commit and warning
(`Verified.warning`) name every file it restored or removed.  A bare move that would
start a task (its hooks acquire a workspace) and reached the ref without their effects
is restored to the task before it (`Checker.stranded`: no host would ever run them),
unless a tasks checkout on this host is carrying it out.  The restore is itself legal:
the checker recognises a commit that puts a tainted file back (`replay` "repairs"), so
the history with the forgery and its restore replays clean here and on a server.

Where verification starts: ``orange project add`` records the tip the project had then
(``-`` for none: everything that arrives later is replayed).  A project registered by
an Orange from before this check has no record at all: its first verification takes
the current tip as verified without replaying it, as the binding records adopt an
older installation's running tasks — a history written by an older Orange is not
judged by today's rules, and nothing the user has is rewritten on upgrade.

A definition this host does not trust is not a forgery (a teammate's own workflow):
it is reported to the caller and left to the host's trust mark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pygit2

from orange.engine import localqueue
from orange.engine.definitions import committed_workflow_text, parse_committed
from orange.engine.fields import IDENTITY_FIELDS
from orange.engine.policy import field_problem
from orange.engine.replay import Checker, Trusted, Violation
from orange.engine.steps import GUARDED, guarded
from orange.errors import OrangeError
from orange.store import layout, rewind
from orange.store.events import Change
from orange.store.files import replace_file
from orange.store.lock import exclusive
from orange.store.since import commits_since
from orange.store.store import Snapshot, TaskStore, now_iso
from orange.store.task import Task

RECORD = "verified"
CHECKOUT_TIP = "orange-checkout-tip"  # marks a tasks checkout (`githooks.checkout.TIP_FILE`)
NOTHING = "-"  # recorded when verification starts before the ref exists
_ROUNDS = 4  # (a forced move put back,) verify, restore, verify the restore; one spare


@dataclass
class Verified:
    """What one verification found: forgeries restored, definitions not trusted here."""

    restored: list[Violation] = field(default_factory=list)
    untrusted: list[Violation] = field(default_factory=list)
    tip: str | None = None
    left: int = 0  # commits new on the ref not verified yet (a call with a ``limit``)
    removed: list[str] = field(default_factory=list)  # paths the restores removed
    rewound: str | None = None  # what a forced move of the ref was undone (one line)

    def warning(self) -> str | None:
        """One line for the person whose sync, merge or commit brought the forgery in:
        every file the restores wrote, by name, or the forced move of the ref that was
        put back (None: nothing was restored)."""
        said = warning(self.restored, self.removed)
        return self.rewound if said is None else said

    def lines(self) -> list[str]:
        """`warning`, then each forged step and why it is not legal."""
        said = self.warning()
        lines = [] if said is None else [said, *(f"forged: {v}" for v in self.restored)]
        return lines if self.rewound is None or said == self.rewound else [*lines, self.rewound]


def verify_new(
    store: TaskStore, *, trusted: Trusted, actor: str, limit: int | None = None
) -> Verified:
    """Replay the commits new since the verified tip; restore what is forged.

    ``limit``: replay at most that many (the oldest first) and record the last of them
    as verified, so a long catch-up is done in slices (the monitor handles dead agents
    between them); ``left`` says how many remain.  A slice that finds a forgery goes on
    to the tip: the restore is written there, and the replay must see it repair."""
    result = Verified()
    with exclusive(store.repo.orange_dir() / f"{RECORD}.lock"):
        if not (store.repo.orange_dir() / RECORD).exists():
            result.tip = start_record(store)  # an older installation: see above
            return result
        seen = recorded(store)
        hands = carried_out_here(store)
        for _ in range(_ROUNDS):
            ref = store.pygit.references.get(layout.TASKS_REF)
            if ref is None:
                return result
            tip = str(ref.target)
            if tip == seen:
                result.tip = tip
                return result
            known = _known(store, seen)
            if seen is not None and known and rewind.moved_off(store.pygit, tip, seen):
                result.rewound = _put_back(store, tip, seen) or result.rewound
                continue  # replayed from the tip put back (it may hold writes of ours)
            start = seen if known else None
            end, result.left = (tip, 0) if limit is None else _slice(store, tip, start, limit)
            checker = Checker(store.pygit, trusted).verify(end, start, hands)
            if checker.tainted and end != tip:
                end, result.left = tip, 0
                checker = Checker(store.pygit, trusted).verify(tip, start, hands)
            localqueue.forget(store, checker.deleted)  # an id is no name for good
            for violation in checker.found:
                if violation.untrusted and violation not in result.untrusted:
                    result.untrusted.append(violation)
            again = [v for v, _ in checker.tainted.values() if v in result.restored]
            if not checker.tainted or again:
                # ``again``: a restore that did not repair (never seen; a guard against
                # writing restores forever): recorded as handled, the attention stays.
                _record(store, end)
                result.tip = end
                return result
            # Replayed again from ``seen`` next round: the restore must repair each file.
            store.commit(_restorer(checker, actor))
            result.restored.extend(v for v, _ in checker.tainted.values())
            result.removed.extend(p for p, (_, legal) in checker.tainted.items() if legal is None)
    return result


def _put_back(store: TaskStore, tip: str, seen: str) -> str | None:
    """Undo a forced move of the tasks ref to ``tip``, a commit not descending from the
    verified ``seen`` (`orange.store.rewind`); the one line that says so."""
    done = rewind.put_back(store.repo, tip, seen)
    if done is None:
        return None  # the ref moved again meanwhile: the next round looks at it
    kept, good = done
    return (
        f"{layout.TASKS_REF} was moved to {tip[:10]}, which does not hold the verified "
        f"{seen[:10]} (a forced fetch or `git update-ref`?): put back at {good[:10]}; "
        f"what it was moved to is kept as {kept} (`orange sync` merges a remote's tasks)"
    )


def take_back(store: TaskStore, commit: str) -> bool:
    """`orange.store.integrate.rewind` of ``commit`` (this host's own write, never
    pushed: a start whose claim failed), with the verified record taken back with it
    when it names that commit (a monitor pass may have verified it meanwhile), so the
    take-back is not read as a forced move and put back (`verify_new`).  Under the
    record's lock, as `verify_new`, which takes the writers' lock inside it too."""
    from orange.store.integrate import rewind as take_back_tip

    with exclusive(store.repo.orange_dir() / f"{RECORD}.lock"):
        if not take_back_tip(store, commit):
            return False
        if recorded(store) == commit:
            _record(store, str(store.pygit[commit].peel(pygit2.Commit).parent_ids[0]))
        return True


def recorded(store: TaskStore) -> str | None:
    """The last tip this host verified (None: none yet; then the whole history is)."""
    try:
        text = (store.repo.orange_dir() / RECORD).read_text().strip()
    except OSError:
        return None
    return None if text in ("", NOTHING) else text


def start_record(store: TaskStore) -> str | None:
    """Start verifying from the tasks ref as it is now (`orange project add`): its
    current tip, or ``-`` when it has none, so every commit that arrives is replayed."""
    ref = store.pygit.references.get(layout.TASKS_REF)
    tip = None if ref is None else str(ref.target)
    _record(store, tip or NOTHING)
    return tip


def _record(store: TaskStore, tip: str) -> None:
    replace_file(store.repo.orange_dir() / RECORD, f"{tip}\n")


def _slice(store: TaskStore, tip: str, start: str | None, limit: int) -> tuple[str, int]:
    """The commit ending the first ``limit`` commits after ``start`` towards ``tip`` (in
    the replay's order: what it ends includes no later one), and how many come after."""
    ids = [commit.id for commit in commits_since(store.pygit, tip, start)]
    if len(ids) <= limit:
        return tip, 0
    return str(ids[limit - 1]), len(ids) - limit


def carried_out_here(store: TaskStore) -> frozenset[str]:
    """The commits at the ``HEAD`` of this repository's tasks checkouts: a person here
    committed them, and that checkout's ``post-commit`` is carrying out their moves'
    hooks (`Checker.stranded` leaves them be, even while the monitor races it)."""
    heads = set()
    for folder in (store.repo.common_dir / "worktrees").glob("*"):
        if not (folder / CHECKOUT_TIP).is_file():
            continue
        try:
            heads.add((folder / "HEAD").read_text().strip())
        except OSError:
            continue
    return frozenset(heads)


def _known(store: TaskStore, commit: str | None) -> bool:
    try:
        return commit is not None and store.pygit.get(commit) is not None
    except ValueError:
        return False


def _restorer(checker: Checker, actor: str) -> Callable[[Snapshot], Change]:
    return lambda snap: _restore(snap, checker, actor)


def _restore(snap: Snapshot, checker: Checker, actor: str) -> Change:
    writes: dict[str, bytes | None] = {}
    forged = sorted({v.commit for v, _ in checker.tainted.values()})
    for path, (violation, legal) in checker.tainted.items():
        writes[path] = restored(snap, path, legal, violation, checker.default_branches)
    violations = [v for v, _ in checker.tainted.values()]
    removed = sorted(path for path, data in writes.items() if data is None)
    first = violations[0]
    if len(violations) == 1 and not removed:
        subject = (
            f"task {first.task_id}: engine fields restored after forged commit "
            f"{first.commit[:10]} ({first.reason})"
        )
    else:  # every file by name: a restore never does more than its message says
        subject = warning(violations, removed) or ""
    trailers = [("Orange-Restores", ", ".join(forged))]
    if removed:
        trailers.append(("Orange-Removed", ", ".join(removed)))
    return Change(
        task_id=first.task_id,
        event="forgery.restored",
        subject=subject,
        writes=writes,
        trailers=tuple(trailers),
        actor=actor,
    )


def warning(restored: list[Violation], removed: list[str]) -> str | None:
    """``forged commit(s) …: restored task A, B; removed tasks/…/TASK.md, …``: what the
    restores of ``restored`` did to each file (``removed``: the paths they removed)."""
    if not restored:
        return None
    commits = ", ".join(sorted({v.commit[:10] for v in restored}))
    kept = sorted({v.task_id for v in restored if v.path not in removed})
    said = [f"restored task {', '.join(kept)}"] if kept else []
    if removed:
        said.append(f"removed {', '.join(sorted(set(removed)))} (git keeps them in history)")
    plural = "s" if "," in commits else ""
    return f"forged commit{plural} {commits}: {'; '.join(said)}"


def restored(
    snap: Snapshot,
    path: str,
    legal: bytes | None,
    violation: Violation,
    default_branches: frozenset[str] = frozenset(),
) -> bytes | None:
    """``path`` as it is now with its engine-owned fields back at ``legal``'s values
    (and any field the policy refuses, judged with ``default_branches``, the
    repository's default branch, at its last legal value)."""
    if legal is None or not path.startswith("tasks/"):
        return legal
    was = Task.parse(legal.decode("utf-8"), where=path, exact=True)
    now = snap.read(path)
    try:
        current = was if now is None else Task.parse(now.decode("utf-8"), where=path, exact=True)
    except (OrangeError, UnicodeDecodeError):
        current = was  # a forged file that does not parse: the last legal one, whole
    names = [*IDENTITY_FIELDS, *_guarded_of(snap, was)]
    reason = (
        f"forged change in commit {violation.commit[:10]}: {violation.reason}; Orange "
        "restored its status and engine fields (body kept): check it, then `orange task ack`"
    )
    fields = dict(current.fields)
    fields.update((name, was.fields.get(name)) for name in names)
    # Any other field the policy refuses (a branch git would misread, a field no one
    # writes) goes back to its last legal value, or away when it had none.
    for name in [n for n in fields if n not in names]:
        own = {"base": fields.get("base")} if name == "branch" else {}  # judged by its base
        before = {**own, name: was.fields[name]} if name in was.fields else own
        judged = {**own, name: fields[name]}
        if field_problem(before, judged, names, default_branches=default_branches) is not None:
            if name in was.fields:
                fields[name] = was.fields[name]
            else:
                del fields[name]
    fields.update(attention=reason, updated_at=now_iso())
    return Task(fields=fields, body=current.body).render().encode()


def _guarded_of(snap: Snapshot, task: Task) -> tuple[str, ...]:
    try:
        text = committed_workflow_text(snap, task)
        return GUARDED if text is None else guarded(parse_committed(text, task.workflow))
    except OrangeError:
        return GUARDED
