"""The store's own git processes: below the runtime's one git helper
(`orange.runtime.git`), which the store may not import, and under its rule.

Only three things run git from here, each because git does it in C at a cost the
store's Python cannot reach: merging packs in the background (`orange.store.packing`),
the path-limited walk of a task's history (`orange.store.history`) and the
commit-graph that speeds that walk up (`orange.store.commitgraph`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

# What git needs to find the repository's configuration and the user's identity; every
# other ``GIT_*`` variable (``GIT_DIR``, ``GIT_OBJECT_DIRECTORY``, ``GIT_INDEX_FILE``, a
# hook's ``GIT_QUARANTINE_PATH`` ...) belongs to whatever git process called Orange.
_KEEP_ENV = frozenset({"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"})


def git_env() -> dict[str, str]:
    """This process's environment without the ``GIT_*`` variables of a calling git."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_ENV}


def start_detached(
    lock: Path, script: str, args: Sequence[str], *, env: Mapping[str, str] | None = None
) -> bool:
    """Run ``sh -c script`` with ``args`` (``$1``...) in the background, detached, unless
    the process that holds ``lock`` still runs; whether it started.  The lock file's
    descriptor is handed down, so the lock is held until the script and its children
    exit: waiting for the lock waits for them."""
    import fcntl
    import subprocess  # (here: a summary update's start-up loads no subprocess)

    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        # ``sh`` starts the script in the background and exits at once: its processes
        # are nobody's children here (nothing to reap in a long-lived monitor or
        # dashboard).
        subprocess.run(
            ("sh", "-c", f"{{ {script}\n}} </dev/null >/dev/null 2>&1 &", "sh", *args),
            env=git_env() if env is None else dict(env),
            pass_fds=(fd,),
            start_new_session=True,
            check=False,
            timeout=10,
        )
        return True
    except subprocess.SubprocessError:  # (its OSError is the caller's to catch)
        return False
    finally:
        os.close(fd)  # the background processes hold their own copy of the descriptor
