"""The ledger when Orange ends an agent (issue 30): what the agent's program wrote to
the last call is recorded, once, and an agent that ends itself with its move asks the
model nothing more.  The agent is a stand-in that behaves on the hang-up of its window
as Claude Code 2.1.197 was seen to (`fakes/hangup_agent.py`)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

from orange.engine.replay import check_history
from orange.engine.trust import trusting
from orange.home import orange_home
from orange.store import layout
from orange.store.store import TaskStore
from tests.conftest import git
from tests.e2e.conftest import World, wait_for

FAKE = Path(__file__).parent / "fakes" / "hangup_agent.py"


def _calls() -> dict[int, list[str]]:
    """The model calls each agent process made, by its pid."""
    return {
        int(path.name.removeprefix("calls-")): path.read_text().split()
        for path in Path.home().glob("calls-*")
    }


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"


def test_an_ended_agent_is_recorded_to_its_last_call_and_asks_no_more(world: World) -> None:
    world.harnesses["hangup"] = {
        "command": [sys.executable, str(FAKE), "worker", "{prompt}"],
        "review_command": [sys.executable, str(FAKE), "reviewer", "{prompt}"],
        "usage": "claude",
    }
    (orange_home() / "config.yml").write_text(yaml.safe_dump({"harnesses": world.harnesses}))
    task_id = world.create("feature-a", "Add feature A", "--harness", "hangup")
    world.wait_status(task_id, "reviewing")

    # The reviewer's verdict ended its own window.  It was gone before its command
    # returned, so it never asked the model again (one call the ledger could not see).
    reviewer = next(pid for pid, tags in _calls().items() if "review" in tags)
    wait_for(lambda: _gone(reviewer), 20, "the reviewer gone")
    assert not (Path.home() / f"asked-again-{reviewer}").exists()

    # A person merges: the worker's session is ended, and the call it makes on its way
    # out, after the merge read the usage, is recorded once it is gone.  Its reply after
    # its hand-over was recorded by a later move, once.
    world.ok("task", "merge", task_id, "--local")
    made = sorted(tag for tags in _calls().values() for tag in tags)
    assert made == ["after-its-hand-over", "on-its-way-out", "plan", "review", "work"]
    tokens = world.task(task_id).fields["tokens"]
    assert tokens == {"in": 10 * 5, "out": 1000 * 5, "cache": 5 * 5}  # each call, once

    # Each record's trailers hold its own calls: the last one, the way-out call alone.
    log = git(world.repo, "log", "--format=%s|%(trailers:key=Orange-Tokens-Out,valueonly)",
              layout.TASKS_REF)  # fmt: skip
    records = [line for line in log.splitlines() if line.partition("|")[2].strip()]
    assert records[0] == f"task {task_id}: usage recorded|1000"
    store = TaskStore.open(world.repo)
    tip = str(store.pygit.references[layout.TASKS_REF].target)
    assert check_history(store.pygit, tip, trusted=trusting(frozenset())) == []
