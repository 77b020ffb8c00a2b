"""The console masks secrets with the engine's ``Redactor``: a known secret is hidden in every form the engine
hides it in (inside JSON text too), and a value under a secret-sounding key stays hidden as before."""

from __future__ import annotations

import json
from typing import Any, cast

from textual.app import App

from console.config_flow import save_document
from console.screens.invocations import InvocationDetail
from console.screens.modals import DiffScreen
from console.state import Invocation

SECRET = 's3cr"et-value-42'  # a quote: inside JSON text it is written s3cr\"et-value-42


class _Host(App[None]):
    def __init__(self, screen: InvocationDetail) -> None:
        super().__init__()
        self.detail = screen

    def on_mount(self) -> None:
        self.push_screen(self.detail)


async def test_invocation_detail_hides_a_secret_inside_json_text(wait: Any) -> None:
    inv = Invocation(
        seq=1,
        ts=0.0,
        call_id="c1",
        tool_call_id="t1",
        exposed_name="mcp_x_send",
        server="x",
        tool="send",
        arguments={"body": json.dumps({"note": SECRET}), "api_key": "never-known-9876", "to": "a@b.c"},
        message=f"upstream said {json.dumps({'echo': SECRET})}",
    )
    app = _Host(InvocationDetail(inv, {SECRET}))
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: isinstance(app.screen, InvocationDetail))
        args = str(app.screen.query_one("#detail-args").render())
        result = str(app.screen.query_one("#detail-result").render())
    assert "et-value-42" not in args and "et-value-42" not in result
    assert "never-known-9876" not in args  # a secret-sounding key, known or not
    assert "a@b.c" in args and "upstream said" in result and "••••••" in result


class _Doc:
    def __init__(self, diff: str) -> None:
        self._diff = diff

    def diff(self) -> str:
        return self._diff


class _App:
    def __init__(self) -> None:
        self.screens: list[object] = []

    def push_screen(self, screen: object, callback: object = None) -> None:
        self.screens.append(screen)


def test_a_save_diff_hides_a_secret_inside_json_text() -> None:
    diff = f"+  HEADERS: '{json.dumps({'Authorization': SECRET})}'\n+  plain: {SECRET}\n"
    app = _App()
    save_document(cast(Any, app), cast(Any, _Doc(diff)), "save", hide=[SECRET])
    (screen,) = app.screens
    assert isinstance(screen, DiffScreen)
    assert "et-value-42" not in screen.diff and "HEADERS" in screen.diff
