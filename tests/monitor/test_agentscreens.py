"""The monitor's rule for reading an agent's pane (`orange.monitor.agentscreens`), against a
real tmux pane: a pane read within the second of its last output is read again, since a
TUI may still be redrawing in that second (tmux stamps output in whole seconds)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import NamedTuple

import pytest

from orange.monitor import agentscreens
from orange.runtime import waiting
from orange.runtime.harness import waiting_screen
from orange.runtime.tmux import PaneInfo, Tmux
from orange.store.task import Task
from tests.helpers import retry_until

TRUST = "Quick safety check: Is this a project you created or one you trust?"


def look_at(
    project: str,
    task: Task,
    window: str,
    pane: PaneInfo,
    tmux: Tmux,
    setter: agentscreens.Setter,
    now: float | None = None,
) -> tuple[str | None, waiting.Look | None]:
    """One agent's pane read as the monitor's pass reads them all (`look_at_all`)."""
    return agentscreens.look_at_all(
        project, [agentscreens.Agent(task, window, pane)], tmux, setter, now
    )[0]


class Said(agentscreens.Setter):
    """The attention the monitor sets and clears, kept here (no task store needed)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def set(self, task_id: str, text: str) -> None:
        self.calls.append(("set", text))

    def clear(self, task_id: str) -> None:
        self.calls.append(("clear", task_id))


def _pane(tmux: Tmux, tmp_path: Path, text: str, session: str = "s") -> PaneInfo:
    code = f"import sys, time\nprint({text!r}, flush=True)\ntime.sleep(600)\n"
    tmux.start(session, "worker", [sys.executable, "-c", code], cwd=tmp_path)

    def shown() -> PaneInfo | None:
        pane = tmux.pane(session, "worker")
        return pane if pane and text[:20] in tmux.visible(pane.pane_id) else None

    return retry_until(shown)


TASK = Task(
    fields={"id": "abc12345", "project": "p", "harness": "claude", "status": "planning"}, body=""
)


def test_a_screen_read_in_its_last_second_is_read_again(tmux: Tmux, tmp_path: Path) -> None:
    pane = _pane(tmux, tmp_path, TRUST)
    assert pane.activity is not None
    said = Said()
    _, look = look_at("p", TASK, "worker", pane, tmux, said, now=pane.activity + 3)
    assert look is not None and look.screen == "folder trust question"
    assert [kind for kind, _ in said.calls] == ["set"]

    # It prints again (a key echoed) in a later second: a waiting pane that moved is
    # read at once, and a read in the second of its stamp is kept as unsettled.
    retry_until(lambda: time.time() >= pane.activity + 1.2)  # type: ignore[operator]
    tmux.send_text("s", "worker", "x")

    def moved() -> PaneInfo | None:
        now = tmux.pane("s", "worker")
        return now if now is not None and now.activity != pane.activity else None

    later = retry_until(moved)
    assert later.activity is not None
    _, look = look_at("p", TASK, "worker", later, tmux, said, now=later.activity)
    assert look is not None and look.screen == "folder trust question"
    assert agentscreens.due(waiting.read("p", TASK.id), later, "worker", later.activity + 1)

    settled = later.activity + agentscreens.SETTLED
    _, look = look_at("p", TASK, "worker", later, tmux, said, now=settled)
    assert look is not None and look.activity == later.activity
    assert not agentscreens.due(waiting.read("p", TASK.id), later, "worker", settled + 60)
    assert [kind for kind, _ in said.calls] == ["set"]  # told once, not on every read


def test_a_quiet_pane_is_read_once_and_a_busy_one_not_at_all(tmux: Tmux, tmp_path: Path) -> None:
    pane = _pane(tmux, tmp_path, "working on it")
    assert pane.activity is not None
    assert not agentscreens.due(None, pane, "worker", pane.activity + agentscreens.QUIET - 1)
    said = Said()
    _, look = look_at("p", TASK, "worker", pane, tmux, said, now=pane.activity + 10)
    assert look is not None and look.screen == ""
    assert not agentscreens.due(waiting.read("p", TASK.id), pane, "worker", pane.activity + 99)
    assert said.calls == []


def test_the_due_panes_of_a_pass_each_answer_for_their_own_task(tmux: Tmux, tmp_path: Path) -> None:
    """A pass reads its due panes together (`Tmux.visible_all`): each screen still goes
    to the task whose agent shows it."""
    asking = _pane(tmux, tmp_path, TRUST, session="s1")
    busy = _pane(tmux, tmp_path, "working on it", session="s2")
    other = TASK._replace(fields={**TASK.fields, "id": "def67890"})
    assert asking.activity is not None and busy.activity is not None
    said = Said()
    agents = [agentscreens.Agent(other, "worker", busy), agentscreens.Agent(TASK, "worker", asking)]
    now = max(asking.activity, busy.activity) + 10
    looked = agentscreens.look_at_all("p", agents, tmux, said, now=now)
    assert [look.screen if look else None for _, look in looked] == ["", "folder trust question"]
    assert [said for said, _ in looked] == [None, f"task {TASK.id}: {said.calls[0][1]}"]
    assert said.calls == [("set", said.calls[0][1])]
    # Nothing printed since: the next pass leaves both as they are, and says nothing.
    again = agentscreens.look_at_all("p", agents, tmux, said, now=now + 60)
    assert again == [(None, look) for _, look in looked]
    assert len(said.calls) == 1


def test_a_wait_the_agents_hook_named_stays_until_its_task_moves(
    tmux: Tmux, tmp_path: Path
) -> None:
    # Marked by Claude Code's Notification hook (`orange.monitor.notified`), with no
    # transcript to tell an answer by (tests/e2e/test_notified.py has one).
    pane = _pane(tmux, tmp_path, "Which database should I use?")
    assert pane.activity is not None
    said_by_hook = "agent (worker) waits on Claude Code's question to you: attach and answer"
    mark = waiting.Look(
        TASK.id, "worker", pane.pane_id, pane.activity, "question to you", said_by_hook,
        since=time.time(), status="planning",
    )  # fmt: skip
    waiting.write("p", mark)
    task = TASK._replace(fields={**TASK.fields, "attention": said_by_hook})
    said = Said()
    # The pane shows more (the rest of the prompt, a bell): still waiting.
    retry_until(lambda: time.time() >= pane.activity + 1.2)  # type: ignore[operator]
    tmux.send_text("s", "worker", "1. sqlite")
    retry_until(lambda: "1. sqlite" in tmux.visible(pane.pane_id))
    later = retry_until(lambda: tmux.pane("s", "worker"))
    _, look = look_at("p", task, "worker", later, tmux, said, now=time.time() + 9)
    assert look is not None and look.screen == "question to you"
    assert said.calls == []
    # Its task moved (a person answered in its pane and the agent went on): it goes.
    moved = task._replace(fields={**task.fields, "status": "working"})
    _, look = look_at("p", moved, "worker", later, tmux, said, now=time.time() + 9)
    assert look is not None and look.screen == ""


class Seen(NamedTuple):
    harness: str
    pane: str  # as the program showed it in an 80- or 120-column tmux pane
    screen: str | None
    dead: bool = False


# Captured from the real programs in tmux with a fresh HOME: Claude Code 2.1.197,
# codex-cli 0.171.0, opencode 1.18.33 and pi 0.73.1 (npm), wrapped as their panes
# wrapped them.
SEEN = {
    "claude-trust": Seen(
        "claude",
        " Quick safety check: Is this a project you created or one you trust? (Like your\n"
        " own code, a well-known open source project, or work from your team).\n"
        " ❯ 1. Yes, I trust this folder\n   2. No, exit\n",
        "folder trust question",
    ),
    "claude-api-key": Seen(
        "claude",
        "  Detected a custom API key in your environment\n"
        "  ANTHROPIC_API_KEY: sk-ant-...6789abcdefghijklmnop\n"
        "  Do you want to use this API key?\n    1. Yes\n  ❯ 2. No (recommended)\n",
        "API key approval",
    ),
    "claude-bypass": Seen(
        "claude",
        "  WARNING: Claude Code running in Bypass Permissions mode\n"
        "  ❯ 1. No, exit\n    2. Yes, I accept\n",
        "bypass-permissions warning",
    ),
    "claude-root": Seen(
        "claude",
        "--dangerously-skip-permissions cannot be used with root/sudo privileges for security "
        "reasons\n\nPane is dead (status 1, Fri Nov 27 14:08:39 2026)\n",
        "root refusal",
        dead=True,
    ),
    "claude-offline": Seen(
        "claude",
        " Unable to connect to Anthropic services\n"
        " Failed to connect to api.anthropic.com: ENOTFOUND\n",
        "connection check",
        dead=True,
    ),
    "claude-working": Seen(
        "claude",
        "❯ hello\n✻ Unable to connect to API (ConnectionRefused) · Retrying in 6s\n"
        "  ⏵⏵ bypass permissions on (shift+tab to cycle) · esc to interrupt\n",
        None,
    ),
    "codex-sign-in": Seen(
        "codex",
        "  Welcome to Codex, OpenAI's command-line coding agent\n"
        "  Choose how you want to use Codex.\n> 1. Sign in with ChatGPT\n",
        "sign-in choice",
    ),
    # opencode 1.18.33 and pi 0.73.1 (npm), 160 columns, right-hand panels cut.
    "opencode-permission": Seen(
        "opencode",
        "  ┃  △ Permission required\n  ┃    # Shell command\n  ┃\n"
        '  ┃  $ echo "env=$FOO" >> out.txt\n  ┃\n'
        "  ┃   Allow once   Allow always   Reject               ctrl+f fullscreen  ⇆ select\n",
        "permission prompt",
    ),
    "opencode-offline": Seen(
        "opencode",
        "  ┃  hello there\n  ┃\n"
        "  ┃  Cannot connect to API: Was there a typo in the url or port?\n"
        "     ▣  Build · Big Pickle\n",
        "connection error",
    ),
    "pi-no-key": Seen(
        "pi",
        " Warning: No models available. Use /login to log into a provider via OAuth or API"
        " key. See:\n Error: No API key found for the selected model.\n"
        " Use /login to log into a provider via OAuth or API key. See:\n",
        "missing API key",
    ),
    "pi-offline": Seen(
        "pi",
        " Error: Connection error.\n\n Error: Retry failed after 3 attempts: Connection error.\n"
        "────────────────────────────────────────\n~/orange/workspaces/proj--1 (first)\n",
        "connection error",
    ),
    "claude-text-in-codex": Seen(
        "codex", "Do you want to use this API key?\n", None
    ),  # each harness has its own screens
}


@pytest.mark.parametrize("seen", SEEN.values(), ids=SEEN.keys())
def test_each_real_screen_is_known_by_name(seen: Seen) -> None:
    found = waiting_screen(seen.harness, seen.pane, dead=seen.dead)
    assert (found.name if found else None) == seen.screen
    if seen.screen is not None:  # a live screen is not an exit, nor the other way round
        assert waiting_screen(seen.harness, seen.pane, dead=not seen.dead) is None
