"""The clarification interface: an answers file, the terminal, and confirmation."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.console import Console

from orange.errors import InvalidInput
from orange.run.ask import AnswersExhausted, FileAsker, TerminalAsker, is_affirmative


def test_answers_come_one_a_line_and_running_out_says_how_to_resume(tmp_path: Path) -> None:
    answers = tmp_path / "answers.txt"
    answers.write_text("Postgres, please\n\n  yes  \n")
    shown = io.StringIO()
    asker = FileAsker(answers, run="r1", out=shown)
    asker.show("**Which database?**")
    assert [asker.ask("answer:") for _ in range(3)] == ["Postgres, please", "", "  yes  "]
    assert asker.consumed == 3
    with pytest.raises(AnswersExhausted) as caught:
        asker.ask("answer:")
    assert str(caught.value) == (
        "the answers file ran out after 3 answers; add answers and run `orange run resume r1`"
    )
    assert asker.consumed == 3
    assert shown.getvalue() == (
        "**Which database?**\nanswer: Postgres, please\nanswer: \nanswer:   yes  \n"
    )


def test_a_resumed_asker_skips_used_answers_and_sees_new_ones(tmp_path: Path) -> None:
    answers = tmp_path / "answers.txt"
    answers.write_text("one\ntwo\n")
    asker = FileAsker(answers, start=2, out=io.StringIO())
    with pytest.raises(AnswersExhausted, match="ran out after 2 answers"):
        asker.ask("?")
    with answers.open("a") as more:
        more.write("three\n")
    assert asker.ask("?") == "three"
    assert asker.consumed == 3


def test_an_unreadable_answers_file_is_invalid_input(tmp_path: Path) -> None:
    asker = FileAsker(tmp_path / "missing.txt", out=io.StringIO())
    with pytest.raises(InvalidInput, match=r"cannot read the answers file .*missing.txt: No such"):
        asker.ask("?")


def test_the_terminal_shows_markdown_and_reads_a_line(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = io.StringIO()
    asker = TerminalAsker(Console(file=screen, width=60), run="r2")
    monkeypatch.setattr(sys, "stdin", io.StringIO("  Use [red]Postgres[/red]\n"))
    asker.show("# Questions\n\n- Which *database*?")
    assert asker.ask("Your answer [y/n]") == "Use [red]Postgres[/red]"
    out = screen.getvalue()
    assert "Questions" in out and "• Which database?" in out and "#" not in out
    assert "Your answer [y/n]" in out  # the question is text, not rich markup


def test_the_terminal_closing_is_a_one_line_stop(monkeypatch: pytest.MonkeyPatch) -> None:
    asker = TerminalAsker(Console(file=io.StringIO()), run="r3")
    monkeypatch.setattr(sys, "stdin", io.StringIO(""))
    with pytest.raises(AnswersExhausted, match=r"input ended; run `orange run resume r3`"):
        asker.ask("?")


@pytest.mark.parametrize("text", ["y", "Y", "yes", "YES", " Yes \n", "yEs"])
def test_yes_in_any_case_is_affirmative(text: str) -> None:
    assert is_affirmative(text)


@pytest.mark.parametrize("text", ["", "n", "no", "yes please", "ye", "yess", "ok", "y y", "\ty."])
def test_anything_else_is_not(text: str) -> None:
    assert not is_affirmative(text)
