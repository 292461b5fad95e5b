"""The ``update`` hook of a shared bare repository: pushed task history must keep to
its workflows (DESIGN §6, §8).

A team shares tasks through a bare repository; on the machine serving it, with Orange
installed, run ``orange hooks install --server /srv/git/project.git`` (or copy
``git-hooks/update`` to ``hooks/update`` of the bare repository and make it executable:
it runs ``orange hook-impl update REF OLD NEW``).  A push of ``refs/orange/tasks`` is
then replayed with `orange.engine.replay.check_history` and rejected, ref unchanged,
naming each task and reason, if any commit is not a legal step; the ref is never deleted
or rewritten.  No other ref under ``refs/orange/`` is accepted: it is no ref Orange
shares, so a clone's plain ``git fetch`` (its refspec is a pattern) never brings one.

The server validates against what the *server* trusts, never against what was pushed:
every definition Orange ships or has shipped, plus the ``*.yml`` files of the directory
given at install time (``--trusted-workflows DIR``, kept in the bare repository's
config as ``orange.trustedWorkflows`` and read afresh by every push, so adding a file
there is enough).  A task committed under any other definition is rejected.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from orange.engine.replay import Trusted, check_history
from orange.engine.trust import directory_hashes, trusting
from orange.githooks.shims import SERVER_TRUST_KEY
from orange.store import layout
from orange.store.repo import GitRepo, open_repo

ZERO = "0" * 40
ORANGE_REFS = "refs/orange/"


def update(cwd: Path, args: Sequence[str]) -> int:
    """``update REF OLD NEW``: reject pushed tasks history that breaks its workflows."""
    if len(args) != 3:
        print("orange: the update hook takes REF OLD NEW", file=sys.stderr)
        return 2
    ref, old, new = args
    if ref != layout.TASKS_REF:
        if ref.startswith(ORANGE_REFS):  # nothing of Orange's but the tasks is shared
            print(
                f"orange: {ref}: only {layout.TASKS_REF} is shared under {ORANGE_REFS}",
                file=sys.stderr,
            )
            return 1
        return 0
    if new == ZERO:
        print(f"orange: {layout.TASKS_REF} cannot be deleted", file=sys.stderr)
        return 1

    repo = open_repo(cwd)
    if old != ZERO and not repo.pygit.descendant_of(new, old):
        print(
            f"orange: {layout.TASKS_REF} is never rewritten: fetch, merge and push again",
            file=sys.stderr,
        )
        return 1
    violations = check_history(
        repo.pygit, new, None if old == ZERO else old, trusted=server_trust(repo)
    )
    for violation in violations:
        print(
            f"task {violation.task_id}: {violation.reason} (commit {violation.commit[:10]})",
            file=sys.stderr,
        )
    if violations:
        print(f"orange: push of {layout.TASKS_REF} rejected", file=sys.stderr)
    return 1 if violations else 0


def server_trust(repo: GitRepo) -> Trusted:
    """Shipped definitions plus the files of the configured ``orange.trustedWorkflows``."""
    try:
        directory = str(repo.pygit.config[SERVER_TRUST_KEY])
    except KeyError:
        return trusting(frozenset())
    return trusting(directory_hashes(Path(directory)))
