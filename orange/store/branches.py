"""Branch names are input: they must pass git's ref-name rules (DESIGN §8)."""

from __future__ import annotations

import re

import pygit2

from orange.errors import InvalidInput

MAX_BRANCH = 200  # characters: a branch names a tmux session and a worktree's HEAD too

# git reads a bare name N as refs/N before refs/heads/N: a branch `heads/main` would be
# the user's `main` wherever a name is given to git bare, `orange/tasks` the tasks ref.
_NAMESPACES = frozenset({"heads", "tags", "remotes", "notes", "orange", "stash"})


def check_branch_name(branch: str) -> str:
    """``branch`` if it may be used as a branch: git's ref-name rules, nothing that reads
    as another argument or ref (a leading ``-``, ``HEAD`` and the other ``*HEAD``
    names, ``@``, ``refs/...``, a first part git reads as a namespace of refs), at most
    `MAX_BRANCH` characters.  The one check every path that reads a branch name from
    the ref or the user runs before git sees it.  Raises InvalidInput."""
    if len(branch) > MAX_BRANCH:
        raise InvalidInput(
            f"the branch name is {len(branch)} characters long; at most {MAX_BRANCH}",
            hint="choose a shorter branch name",
        )
    if (
        not branch
        or branch.startswith(("-", "+", "refs/"))
        or branch.split("/", 1)[0] in _NAMESPACES
        or re.fullmatch(r"[A-Z_]*HEAD", branch)
        or branch != branch.strip()
        or any(ch.isspace() or ord(ch) < 32 for ch in branch)
        or branch in ("HEAD", "@")
        or not pygit2.reference_is_valid_name(f"refs/heads/{branch}")
    ):
        raise InvalidInput(
            f"{branch!r} is not a valid branch name",
            hint="use letters, digits, '/', '-', '_' and '.' as git allows "
            "(no spaces, '..', ':', '~', '^', '?', '*', '[', or a leading '-' or '+'; "
            "not HEAD, '@', refs/..., or a name starting heads/, tags/, remotes/, notes/, "
            "orange/ or stash, which git would read as another ref)",
        )
    return branch
