"""Branch names are input: they must pass git's ref-name rules (DESIGN §8)."""

from __future__ import annotations

import pygit2

from orange.errors import InvalidInput


def check_branch_name(branch: str) -> str:

    if (
        not branch
        or branch.startswith(("-", "refs/"))
        or branch != branch.strip()
        or any(ch.isspace() or ord(ch) < 32 for ch in branch)
        or branch in ("HEAD", "@")
        or not pygit2.reference_is_valid_name(f"refs/heads/{branch}")
    ):
        raise InvalidInput(
            f"{branch!r} is not a valid branch name",
            hint="use letters, digits, '/', '-', '_' and '.' as git allows "
            "(no spaces, '..', ':', '~', '^', '?', '*', '[', or a leading '-'; "
            "not HEAD, '@' or refs/...)",
        )
    return branch
