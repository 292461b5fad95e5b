"""A forced move of ``refs/orange/tasks``, undone: the ref never leaves what was verified.

Orange only ever moves the tasks ref forward (its commits, a sync's merge).  A user's
``+`` refspec into the ref or a ``git update-ref`` to another commit can move it to one
that does not descend from the last tip this host verified (a rewind to an older commit,
or another history altogether): replaying "what is new" would then see nothing, and the
commits the ref left would be reachable from the reflog only, until it expires.

`put_back` keeps what the ref was moved to under ``refs/orange/rewound/<its id>`` and
moves the ref back to its last good tip: the newest value its reflog records that is
the verified commit or descends from it (Orange's own writes after the last
verification included), else the verified commit itself.  Both under the writers'
lock, by compare-and-swap: a writer racing it retries on the tip it puts back.
"""

from __future__ import annotations

import pygit2

from orange.store import layout
from orange.store.lock import exclusive
from orange.store.repo import GitRepo

REWOUND = "refs/orange/rewound"


def moved_off(repo: pygit2.Repository, tip: str, verified: str) -> bool:
    """Whether ``tip`` is neither ``verified`` nor a commit descending from it."""
    if tip == verified:
        return False
    try:
        # A child of it (Orange's next write, a sync's merge) is answered from the
        # commit: the merge-base search walks both sides' histories back to their base.
        if pygit2.Oid(hex=verified) in repo[tip].peel(pygit2.Commit).parent_ids:
            return False
        return not repo.descendant_of(tip, verified)
    except (pygit2.GitError, ValueError, KeyError):
        return False  # an object this clone lacks: nothing to judge it by


def put_back(git: GitRepo, tip: str, verified: str) -> tuple[str, str] | None:
    """Undo the move of the tasks ref to ``tip`` (which does not descend from
    ``verified``): (the ref the moved-to commit is kept as, the tip put back), or None
    when the ref no longer points at ``tip``."""
    repo = git.pygit
    with exclusive(git.orange_dir() / "tasks.lock"):
        ref = repo.references.get(layout.TASKS_REF)
        if ref is None or str(ref.target) != tip:
            return None
        good = _last_good(ref, verified, repo)
        kept = f"{REWOUND}/{tip}"
        repo.references.create(kept, pygit2.Oid(hex=tip), force=True)
        why = f"orange: put back at {good[:10]} after a move to {tip[:10]}, kept as {kept}"
        try:
            ref.set_target(pygit2.Oid(hex=good), why)
        except (pygit2.GitError, ValueError, OSError):
            return None
        return kept, good


def _last_good(ref: pygit2.Reference, verified: str, repo: pygit2.Repository) -> str:
    """The newest value of the ref its reflog records that is ``verified`` or descends
    from it; ``verified`` when the reflog has none."""
    try:
        entries = list(ref.log())
    except (pygit2.GitError, KeyError):
        return verified
    for entry in entries:  # newest first
        value = str(entry.oid_new)
        try:
            if value == verified or repo.descendant_of(value, verified):
                return value
        except (pygit2.GitError, ValueError, KeyError):
            continue  # a value whose commit this clone no longer has
    return verified
