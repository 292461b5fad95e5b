"""The dashboard's dialogs: confirm, a text box, the create form, choosing a host, help."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, ClassVar, NamedTuple

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList, Select, Static
from textual.widgets.option_list import Option

from orange.dashboard.table import visible
from orange.runtime.harness import DEMO


class ConfirmScreen(ModalScreen[bool]):
    """Ask a yes/no question: ``y`` answers yes; ``n`` or Esc, no.  The question may
    quote task data: it is shown as it is (never read as markup, control characters
    made visible), as is a `TextPrompt`'s title."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "yes"),
        Binding("n", "answer(False)", "no"),
        Binding("escape", "answer(False)", "no"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(visible(self.question), id="question", markup=False)
            yield Label("y: yes   n/Esc: no")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class TextPrompt(ModalScreen[str | None]):
    """One line of text (Enter sends, Esc drops it)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "drop", "cancel")]

    def __init__(self, title: str, placeholder: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.placeholder = placeholder

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(visible(self.title_text), id="title", markup=False)
            yield Input(placeholder=self.placeholder, id="text")
            yield Label("Enter: send   Esc: cancel")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_drop(self) -> None:
        self.dismiss(None)


class NewTask(NamedTuple):
    branch: str
    summary: str
    harness: str
    status: str
    context: str


class CreateScreen(ModalScreen[NewTask | None]):
    """The create form: branch, summary, harness, initial status, context.  Enter in
    the last field (or ctrl+s) creates; Esc drops the form."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "drop", "cancel"),
        Binding("ctrl+s", "create", "create"),
    ]

    def __init__(self, harnesses: list[str], statuses: list[str]) -> None:
        super().__init__()
        self.harnesses = harnesses
        self.statuses = statuses

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="create"):
            yield Label("New task")
            yield Input(placeholder="branch (empty: orange-tasks/<id>)", id="branch")
            yield Input(placeholder="summary (what to do)", id="summary")
            # The demo stand-in is offered, never chosen for the person: left blank,
            # Orange picks as `orange task create` does (and says so when none is found).
            real = [name for name in self.harnesses if name != DEMO]
            yield Select(
                [(name, name) for name in self.harnesses],
                prompt="harness (blank: Orange picks)",
                value=real[0] if real else Select.NULL,
                id="harness",
            )
            yield Select(
                [(name, name) for name in self.statuses],
                prompt="initial status",
                value=self.statuses[0] if self.statuses else Select.NULL,
                id="status",
            )
            yield Input(placeholder="context (optional)", id="context")
            yield Label("Enter in context or ctrl+s: create (spawns unless the status waits)")

    def _value(self, selector: str) -> str:
        widget: Any = self.query_one(selector)
        value = widget.value
        return value if isinstance(value, str) else ""

    def action_create(self) -> None:
        self.dismiss(
            NewTask(
                branch=self._value("#branch").strip(),
                summary=self._value("#summary").strip(),
                harness=self._value("#harness"),
                status=self._value("#status"),
                context=self._value("#context"),
            )
        )

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id == "context":
            self.action_create()
        else:
            self.focus_next()

    def action_drop(self) -> None:
        self.dismiss(None)


class HostScreen(ModalScreen[str | None]):
    """Choose one of the registered hosts, each shown with what its last check and the
    ref say of it (Enter chooses, Esc drops it); the chosen host's name.  ``c`` checks
    every host again over SSH (``check``: a host's name -> its line), each in a thread,
    its line replaced when it answers."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "drop", "cancel"),
        Binding("c", "check", "check"),
    ]

    def __init__(
        self, title: str, hosts: list[tuple[str, str]], check: Callable[[str], str]
    ) -> None:
        super().__init__()
        self.title_text = title
        self.hosts = hosts  # (name, its status line)
        self.check = check
        self.width = max((len(name) for name, _said in hosts), default=0)

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label(visible(self.title_text), id="title", markup=False)
            yield OptionList(*(Option(self._line(n, s), id=n) for n, s in self.hosts), id="hosts")
            yield Label("Enter: choose   c: check again over SSH   Esc: cancel")

    def _line(self, name: str, said: str) -> Text:
        return Text(f"{name:<{self.width}}  {visible(said)}")

    def action_check(self) -> None:
        for name, _said in self.hosts:
            self._put(name, "checking over SSH ...")
            self.run_worker(partial(self._check, name), thread=True)

    def _check(self, name: str) -> None:
        said = self.check(name)
        self.app.call_from_thread(self._put, name, said)

    def _put(self, name: str, said: str) -> None:
        self.query_one("#hosts", OptionList).replace_option_prompt(name, self._line(name, said))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_drop(self) -> None:
        self.dismiss(None)


class HelpScreen(ModalScreen[None]):
    """Every key, with what it does (Esc or ? closes)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "close"),
        Binding("question_mark", "close", "close"),
    ]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(self.text, id="help")

    def action_close(self) -> None:
        self.dismiss(None)
