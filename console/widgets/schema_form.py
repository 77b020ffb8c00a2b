"""The widgets of a form built from a JSON schema (``console.tool_form``): one labelled row per field, and the
typed texts read back. Shared by the tool inspector's "call this tool" form and a tool's question to the operator
(the elicitation dialog), so both show the same fields the same way.

Each row has its input as ``#{prefix}-{name}`` and a message line ``#{prefix}msg-{name}`` for what is wrong.
"""

from __future__ import annotations

from textual.containers import Horizontal, Vertical
from textual.dom import DOMNode
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static, TextArea

from console.tool_form import FieldSpec, initial_text


def field_row(spec: FieldSpec, prefix: str = "arg") -> Widget:
    """One field's row: its label (``*`` when required), input, description and message line."""
    wid = f"{prefix}-{spec.name}"
    text = initial_text(spec)
    widget: Widget
    if spec.enum and spec.kind in ("string", "integer", "number"):
        options = [(str(v), str(v)) for v in spec.enum]
        widget = Select(options, value=text if text in dict(options) else Select.BLANK, id=wid)
    elif spec.kind == "boolean":
        widget = Select([("true", "true"), ("false", "false")], value=text or Select.BLANK, id=wid)
    elif spec.kind == "json":
        widget = TextArea(text, id=wid, language="json", classes="json-arg")
    else:
        widget = Input(text, placeholder=spec.hint, id=wid)
    label = f"{spec.name}{' *' if spec.required else ''}"
    return Horizontal(
        Label(label, classes="alabel"),
        Vertical(
            widget,
            Static(spec.description, classes="muted adesc").set_styles(
                f"display: {'block' if spec.description else 'none'};"
            ),
            Static("", id=f"{prefix}msg-{spec.name}", classes="amsg"),
            classes="acell",
        ),
        classes="arg",
    )


def field_texts(node: DOMNode, specs: list[FieldSpec], prefix: str = "arg") -> dict[str, str]:
    """What is typed (or chosen) in each field of the form under ``node``."""
    out: dict[str, str] = {}
    for spec in specs:
        w = node.query_one(f"#{prefix}-{spec.name}")
        if isinstance(w, Select):
            out[spec.name] = "" if w.value is Select.BLANK else str(w.value)
        elif isinstance(w, TextArea):
            out[spec.name] = w.text
        elif isinstance(w, Input):
            out[spec.name] = w.value
    return out
