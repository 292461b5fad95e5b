"""The store's own git processes: below the runtime's one git helper
(`orange.runtime.git`), which the store may not import, and under its rule.

Only two things run git from here, each because git does it in C at a cost the
store's Python cannot reach: merging packs in the background (`orange.store.packing`)
and the path-limited walk of a task's history (`orange.store.history`).
"""

from __future__ import annotations

import os

# What git needs to find the repository's configuration and the user's identity; every
# other ``GIT_*`` variable (``GIT_DIR``, ``GIT_OBJECT_DIRECTORY``, ``GIT_INDEX_FILE``, a
# hook's ``GIT_QUARANTINE_PATH`` ...) belongs to whatever git process called Orange.
_KEEP_ENV = frozenset({"GIT_CONFIG_NOSYSTEM", "GIT_CONFIG_GLOBAL"})


def git_env() -> dict[str, str]:
    """This process's environment without the ``GIT_*`` variables of a calling git."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k in _KEEP_ENV}
