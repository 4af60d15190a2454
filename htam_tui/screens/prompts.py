"""Small modal prompts: a line of text, a choice from a list."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option


class TextPrompt(ModalScreen[str | None]):
    """Ask for one line; Enter returns it, Escape returns None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, question: str, value: str = "", placeholder: str = "", integer: bool = False) -> None:
        super().__init__()
        self.question = question
        self.value = value
        self.placeholder = placeholder
        self.integer = integer

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt"):
            yield Label(self.question)
            yield Input(self.value, placeholder=self.placeholder, type="integer" if self.integer else "text", id="answer")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChoicePrompt(ModalScreen[str | None]):
    """Pick one of several names with the arrow keys and Enter."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="choice.cancel")]

    def __init__(self, question: str, choices: list[str], current: str | None = None) -> None:
        super().__init__()
        self.question = question
        self.choices = choices
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt"):
            yield Label(self.question)
            yield OptionList(*[Option(c, id=c) for c in self.choices], id="choices")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        if self.current in self.choices:
            options.highlighted = self.choices.index(self.current)
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)
