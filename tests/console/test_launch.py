"""Issue 16 A7: a second console can start. The console's HTTP API is off unless asked (so a port another console
or engine holds cannot stop it), ``--http-port 0`` takes any free port, and under ``--web`` a second tab's console
says plainly that the console is open in another tab instead of starting a second engine."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from console.app import AvaConsole, build_parser
from console.launch import WEB_LOCK_ENV, make_console
from console.widgets.header import api_url

START_S = 90  # a loaded test box starts the engine slowly


def console_for(config_path: Path, *argv: str) -> AvaConsole:
    args = build_parser().parse_args(["--config", str(config_path), *argv])
    app = make_console(args, config_path)
    assert isinstance(app, AvaConsole)  # typed as an App there: console.launch does not import console.app
    return app


def _port_held(config_path: Path) -> socket.socket:
    """Listen on a free port and point the config's engine.http.port at it: the port "another console" holds."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    text = config_path.read_text()
    assert "http: {enabled: false}" in text
    config_path.write_text(text.replace("http: {enabled: false}", f"http: {{enabled: true, port: {port}}}"))
    return s


async def test_two_consoles_start_side_by_side_with_the_http_port_taken(config_path: Path, wait) -> None:
    held = _port_held(config_path)
    try:
        first, second = console_for(config_path), console_for(config_path)
        async with first.run_test(size=(100, 30)) as p1, second.run_test(size=(100, 30)) as p2:
            await wait(p1, lambda: first.engine_running or first.engine_error is not None, START_S)
            await wait(p2, lambda: second.engine_running or second.engine_error is not None, START_S)
            assert (first.engine_error, second.engine_error) == (None, None)
            assert first.engine_running and second.engine_running
    finally:
        held.close()


async def test_http_port_zero_serves_the_api_on_a_free_port(config_path: Path, wait) -> None:
    held = _port_held(config_path)
    try:
        app = console_for(config_path, "--http-port", "0")
        async with app.run_test(size=(100, 30)) as pilot:
            await wait(pilot, lambda: app.engine_running or app.engine_error is not None, START_S)
            assert app.engine_error is None and app.engine is not None
            url = api_url(app.engine)  # what the header shows
            assert url is not None and url != f"http://127.0.0.1:{held.getsockname()[1]}"
            assert f"API {url}" in app.sub_title
    finally:
        held.close()


def test_http_port_out_of_range_is_refused(config_path: Path) -> None:
    with pytest.raises(ValueError, match="--http-port 70000"):
        console_for(config_path, "--http-port", "70000")


async def test_a_second_web_tab_says_the_console_is_open(
    config_path: Path, tmp_path: Path, wait, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(WEB_LOCK_ENV, str(tmp_path / "web.lock"))  # what serve_web sets for its tabs' consoles
    first, second = console_for(config_path), console_for(config_path)
    async with first.run_test(size=(100, 30)) as p1, second.run_test(size=(100, 30)) as p2:
        await wait(p1, lambda: first.engine_running or first.engine_error is not None, START_S)
        await wait(p2, lambda: second.engine_error is not None, START_S)
        assert first.engine_running and first.engine_error is None
        assert second.engine is None and "already open in another browser tab" in str(second.engine_error)
