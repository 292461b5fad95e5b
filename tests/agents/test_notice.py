"""A notice Orange types into a real codex worker is submitted even when the first
Enter does not submit it (issue 25: under load, the worker's "Review round 1 failed"
once sat in codex's input box and the task waited with nobody told).

codex keeps the text in its input box when an Enter does not reach it as a submit
(codex reads an Enter that comes within ~120 ms of a burst of typed text as a newline:
seen with codex-cli 0.171 in tmux).  Here the first Enter Orange sends is lost on its
way (`LosingFirstEnter`), so what Orange reads back is codex's own screen with the
notice still in its box: Orange must see that, press Enter again, and the model is
asked.  Red with a single Enter (the model is never asked).
"""

from __future__ import annotations

from orange.runtime.tmux import Tmux
from tests.agents.conftest import screens, settle
from tests.agents.modelserver import ModelServer
from tests.e2e.conftest import World, wait_for

WAIT = 240.0  # a deadline, not a pause: a real program on a loaded machine
NOTICE = (
    "Review round 1 failed. Read ## Review in TASK.md and fix every issue it raises, "
    "then update ## Handoff and run: orange task update --status agent-review"
)


class LosingFirstEnter(Tmux):
    """Orange's tmux adapter, but the first Enter it presses never reaches the pane."""

    lost = 0

    def _run(self, *args: str) -> list[str]:
        if args[-1:] == ("Enter",) and not self.lost:
            self.lost += 1
            return []
        return super()._run(*args)


def test_a_notice_left_in_codex_input_box_is_submitted(agents: World, model: ModelServer) -> None:
    settle(agents.repo)
    model.script.questions.add("asks")  # the worker answers its prompt and waits
    task_id = agents.create("asks", "A task with a question", "--harness", "codex")
    session = agents.task(task_id).str_field("tmux_session")
    wait_for(lambda: "Done." in agents.tmux("capture-pane", "-p", "-t", f"{session}:worker"),
             WAIT, "the worker to end its first turn")  # fmt: skip
    tmux = LosingFirstEnter()
    tmux.send_text(session, "worker", NOTICE)
    assert tmux.lost == 1
    try:
        wait_for(
            lambda: model.asked("Review round 1 failed"), WAIT, "the notice to reach the model"
        )
    except AssertionError as error:
        raise AssertionError(f"{error}\n{screens(agents)}") from None
