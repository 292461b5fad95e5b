"""What Orange's git hooks do: the Python side of the shims in ``git-hooks/``.

`shims` (installing them, chained after a user's own hooks), `impl` (pre-commit,
post-commit, reference-transaction), `checkout` (a checkout of the tasks ref to edit
with plain git), `server` (the ``update`` hook of a shared bare repository).
"""
