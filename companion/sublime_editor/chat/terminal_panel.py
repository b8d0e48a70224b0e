"""A client terminal's output in a Sublime output panel, on demand (issue #41): a card embedding a
terminal has the link "show in panel", and the palette has Gemini Companion: Show Terminal Output.
The panel holds the terminal's output as the chat received it (at most its last OUTPUT_KEPT
characters), without terminal escapes, and follows it while the command runs: what is new is
appended, or, once the start of the output was cut, the whole replaced. Main thread only: the
edits are TextCommands, nothing is read from disk or waited for."""

from __future__ import annotations

from dataclasses import dataclass

import sublime

from ...acp.shown_output import plain

PANEL = "gemini_companion.terminal"
SHOWING = "gemini_companion.terminal_card"  # the panel view's setting: whose output it holds
KEPT_TERMINALS = 8  # the cards whose terminal output a chat keeps for the panel (terminals.MAX_LIVE)


@dataclass
class Shown:
    """The card whose terminal output the window's panel holds, and that text as shown."""

    card: str
    text: str


class TerminalOutputs:
    """A chat's terminal cards (title and output so far, by card key) and the panel showing one."""

    def __init__(self, chat_id: str) -> None:
        self.chat_id = chat_id
        self.outputs: dict[str, tuple[str, str]] = {}  # card key -> (title, output), oldest first
        self.shown: Shown | None = None

    def update(self, window: sublime.Window, card: str, title: str, output: str) -> None:
        """A terminal card's output changed: kept, and the panel follows it if it shows that card."""
        self.outputs.pop(card, None)
        self.outputs[card] = (title, output)
        while len(self.outputs) > KEPT_TERMINALS:
            del self.outputs[next(iter(self.outputs))]
        if self.shown is not None and self.shown.card == card:
            self._follow(window, output)

    def show(self, window: sublime.Window, card: str) -> None:
        """The card's terminal output in the window's output panel, shown."""
        if card not in self.outputs:
            sublime.status_message("Gemini Companion: that terminal's output is no longer kept")
            return
        panel = window.create_output_panel(PANEL)
        panel_settings = panel.settings()
        for key, value in {"word_wrap": True, "line_numbers": False, "gutter": False, "scroll_past_end": False}.items():
            panel_settings.set(key, value)
        panel.set_scratch(True)
        panel.set_read_only(True)
        panel_settings.set(SHOWING, f"{self.chat_id} {card}")
        self.shown = Shown(card, "")
        self._follow(window, self.outputs[card][1], panel)
        window.run_command("show_panel", {"panel": f"output.{PANEL}"})

    def _follow(self, window: sublime.Window, output: str, panel: sublime.View | None = None) -> None:
        shown = self.shown
        panel = panel or window.find_output_panel(PANEL)
        if shown is None or panel is None or panel.settings().get(SHOWING) != f"{self.chat_id} {shown.card}":
            self.shown = None  # the panel was destroyed, or shows another chat's terminal now
            return
        text = plain(output)
        if text.startswith(shown.text) and panel.size() == len(shown.text):
            if len(text) > len(shown.text):
                panel.run_command("gemini_companion_terminal_panel_write", {"characters": text[len(shown.text) :]})
        else:  # the output's start was cut (it keeps its end only), or the panel changed: the whole
            panel.run_command("gemini_companion_terminal_panel_write", {"characters": text, "replace": True})
        shown.text = text
