"""The console's checkbox: an unticked box is empty.

Why it exists: Textual's ``Checkbox`` draws its ``X`` in both states, only dimmer when unticked, so at a glance (and in
a terminal with few colours, where the dim ``X`` is as bright as a ticked one) "store in keyring" and "plain text"
looked ticked when they were not. Every checkbox in the console is a ``TickBox``.
"""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox


class TickBox(Checkbox):
    """A ``Checkbox`` that draws its mark only when ticked."""

    def render(self) -> Content:
        self.BUTTON_INNER = "X" if self.value else " "
        return super().render()
