"""``orange task list --tree``: each task under the tasks it waits for (``after:``), in
the order they can be merged; a task that waits for two is drawn once, marked under the
other."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Cli


def test_the_tree_puts_each_task_under_the_tasks_it_waits_for(cli: Cli, repo: Path) -> None:
    cli.ok("project", "add", cwd=repo)

    def create(branch: str, *after: str) -> str:
        args = ["task", "create", branch, f"Task {branch}", "--no-spawn", "--json"]
        made = cli.ok(*args, *(["--after", ",".join(after)] if after else []), cwd=repo)
        return str(made.json()["id"])

    base = create("base")
    other = create("other")
    left = create("left", base)
    both = create("both", left, other)
    lines = cli.ok("task", "list", "--tree", cwd=repo).out.splitlines()
    assert [line.split()[:2] for line in lines] == [
        [base, "pending"],
        ["└─", left],
        ["└─", both],
        [other, "pending"],
        ["└─", "^"],
    ]
    assert lines[2].startswith("  └─ ")
    assert f"(waiting for {left}, {other}, then parked)" in lines[2]
    assert lines[4].endswith(f"^ {both}")

    refused = cli("task", "list", "--tree", "--json", cwd=repo)
    assert refused.code == 1 and "--tree draws the order for people" in refused.err
