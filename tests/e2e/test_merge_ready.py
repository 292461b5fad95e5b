"""``orange task merge --ready`` (issue 29): every reviewed task whose dependencies are
merged, in dependency order and else oldest first, each checked by the project's check
command on the merged result; the train stops at the first task that would conflict or
fails its check, naming it, with nothing of it merged or pushed."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.e2e.conftest import World, add_hub


def branch_with(repo: Path, branch: str, files: dict[str, str]) -> None:
    git(repo, "branch", branch, "main")
    git(repo, "checkout", "-q", branch)
    for name, text in files.items():
        (repo / name).write_text(text)
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", f"work of {branch}")
    git(repo, "checkout", "-q", "main")


def in_review(world: World, branch: str, files: dict[str, str]) -> str:
    branch_with(world.repo, branch, files)
    return world.create(branch, f"Task on {branch}", "--status", "reviewing")


def test_dependent_tasks_merge_in_order_and_the_train_stops_at_a_conflict(
    world: World,
) -> None:
    # Created oldest first: c, b, a, d; c waits for b, b for a.
    c = in_review(world, "c-work", {"c.txt": "c\n"})
    b = in_review(world, "b-work", {"b.txt": "b\n", "README.md": "# project by b\n"})
    a = in_review(world, "a-work", {"a.txt": "a\n"})
    d = in_review(world, "d-work", {"README.md": "# project by d\n"})
    world.ok("task", "update", c, "--after", b)
    world.ok("task", "update", b, "--after", a)
    world.ok("project", "update", "--check", "test -f a.txt && test ! -e FAIL")

    train = world.orange("task", "merge", "--ready")
    assert train.code == 1
    merged = [line.split()[1].rstrip(":") for line in train.out.splitlines() if "merged (" in line]
    assert merged == [a, b, c]
    line = train.err.strip()
    assert "\n" not in line
    assert line.startswith(
        f"orange: merged 3 tasks, then stopped: task {d} would conflict with main on README.md"
    )
    assert f"`orange task rebase {d}` has its agent resolve it" in line
    assert [world.status(t) for t in (a, b, c, d)] == ["done", "done", "done", "reviewing"]
    subjects = git(world.repo, "log", "--format=%s", "main")
    assert "work of d-work" not in subjects
    order = git(world.repo, "log", "--first-parent", "--format=%s", "main").splitlines()
    assert order[:3] == ["Merge branch 'c-work'", "Merge branch 'b-work'", "work of a-work"]


def test_a_failing_check_stops_the_train_with_nothing_of_it_pushed(
    world: World, tmp_path: Path
) -> None:
    hub = add_hub(world, tmp_path)
    good = in_review(world, "good", {"good.txt": "fine\n"})
    bad = in_review(world, "bad", {"FAIL": "this breaks the check\n"})
    blocked = world.create("blocked", "Waits for a pending task", "--status", "reviewing")
    pending = world.create("later", "Not ready", "--no-spawn")
    world.ok("task", "update", blocked, "--after", pending)
    world.ok("project", "update", "--check", "test ! -e FAIL")

    train = world.orange("task", "merge", "--ready")
    assert train.code == 1
    assert f"task {good}: merged (good)" in train.out
    assert f"task {blocked} waits for {pending}" in train.out
    first = train.err.strip().splitlines()[0]
    assert first.startswith(
        f"orange: merged 1 task, then stopped: task {bad}: the check failed on bad merged "
        "into main: check command 'test ! -e FAIL' exited with status 1"
    )
    assert world.status(bad) == "reviewing" and world.status(blocked) == "reviewing"
    main = git(world.repo, "rev-parse", "main")
    assert git(hub, "rev-parse", "main") == main  # the good merge pushed, nothing after
    assert git(world.repo, "merge-base", "--is-ancestor", "bad", "main", check=False) == ""
    assert "bad" not in git(world.repo, "log", "--format=%s", "main")

    nothing = world.orange("task", "merge", "--ready", "--strategy", "ff")
    assert nothing.code == 1 and "takes no task id, --strategy or --force" in nothing.err
