"""Upgrading an installation from before local binding records (DESIGN §8).

Orange before records trusted the ref's runtime fields, so tasks running when it is
upgraded have no record, and the monitor would leave their agents alone.  Once per
project (the record store does not exist yet), a binding is adopted where this host
sees the task's worktree in the project's pool AND its live tmux session — what this
host's own Orange must have made.  A worktree or session claimed by two tasks is
adopted for neither.  Then the store's marker is written, and adoption never runs
again for that project: from then on a binding exists only where this host made one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from orange.runtime import bindings

if TYPE_CHECKING:
    from orange.projects import Project
    from orange.store.store import Snapshot


def ensure_adopted(project: Project, snap: Snapshot | None = None) -> int | None:
    """Adopt the running tasks of an older installation, once.  Returns how many were
    adopted, None when the store already existed (one stat: cheap on every call).
    A home that cannot be written or a tmux that cannot be asked leaves it for the
    next call, never an error."""
    if bindings.started(project.name):
        return None
    # The listing and tmux: loaded the one time a project's records start.
    from orange.runtime.adopting import adopt

    return adopt(project, snap)
