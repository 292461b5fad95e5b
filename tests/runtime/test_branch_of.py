"""A task's branch is checked again before git sees it (`workspace.branch_of`): the ref
is shared data, and a name git would read as an option or a refspec never reaches it."""

from __future__ import annotations

import pytest

from orange.errors import HookFailed
from orange.runtime import workspace
from orange.store.task import Task


def task_on(branch: str) -> Task:
    return Task(fields={"id": "abcd1234", "branch": branch}, body="")


@pytest.mark.parametrize("branch", ["--delete", "+main", ":main", "@", "HEAD", "a..b", "x" * 201])
def test_a_bad_branch_fails_the_hook_before_git(branch: str) -> None:
    with pytest.raises(HookFailed, match="task abcd1234 has a bad branch"):
        workspace.branch_of(task_on(branch))


def test_a_good_branch_is_given_back() -> None:
    assert workspace.branch_of(task_on("feature/login")) == "feature/login"
