"""The operator transfers a live phone call from the console's keys: ``T`` opens the dialog with the configured
destinations, Ctrl+W picks warm or blind, Enter transfers; the ARI emulator's bridge ends with exactly the caller and
the target (dialled directly), and ``T`` on a call without a phone line says so instead of opening the dialog."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, OptionList

from console.app import AvaConsole
from console.screens.transfer_modal import TransferModal

ARI = Path(__file__).resolve().parents[1] / "fixtures" / "ari"
if str(ARI) not in sys.path:
    sys.path.insert(0, str(ARI))

from emulator import AriEmulator  # noqa: E402

pytestmark = pytest.mark.timeout(180)


def with_asterisk_and_extensions(config_path: Path, url: str) -> None:
    text = config_path.read_text(encoding="utf-8")
    text = text.replace(
        "tools:\n",
        "tools:\n  extensions:\n    support: {destination: PJSIP/6000, description: the support team, timeout_s: 20}\n"
        "    sales: {destination: PJSIP/6001, timeout_s: 20}\n",
        1,
    )
    config_path.write_text(
        text + f"asterisk:\n  enabled: true\n  ari_url: {url}\n  username: ava\n"
        "  password: ${TK_ARI_PASSWORD}\n  default_context: demo\n  rtp_port_start: 46300\n  rtp_port_end: 46399\n",
        encoding="utf-8",
    )


def bridge_of(emu: AriEmulator, channel: str) -> list[str]:
    ch = emu.world.channels[channel]
    return sorted(emu.world.bridges[ch.bridge].channels) if ch.bridge else []


@pytest.mark.parametrize("mode", ["blind", "warm"])
async def test_transfer_a_phone_call_by_key(
    config_path: Path, wait: Any, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    async with AriEmulator() as emu:
        emu.ring_s = 0.5 if mode == "blind" else 5.0  # warm: still ringing once the AI has asked to hold
        monkeypatch.setenv("TK_ARI_PASSWORD", emu.password)
        with_asterisk_and_extensions(config_path, emu.url)
        app = AvaConsole(config_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait(pilot, lambda: app.engine_running, within=30)
            await emu.wait_subscribers(within_s=20)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await wait(pilot, lambda: app.selected_call in app.state.calls, within=30)
            app.screen.query_one("#calls", DataTable).focus()
            await pilot.press("T")
            await wait(pilot, lambda: isinstance(app.screen, TransferModal), within=10)
            targets = app.screen.query_one("#transfer-targets", OptionList)
            assert [str(targets.get_option_at_index(i).prompt) for i in range(targets.option_count)] == [
                "support  PJSIP/6000  · the support team",
                "sales  PJSIP/6001",
            ]
            if mode == "warm":
                await pilot.press("ctrl+w")
            await pilot.press("enter")  # the highlighted one: support
            await wait(pilot, lambda: not isinstance(app.screen, TransferModal), within=10)

            def with_agent() -> bool:
                members = bridge_of(emu, caller.id)
                return len(members) == 2 and any(m != caller.id and m.startswith("ava-xfer-") for m in members)

            await wait(pilot, with_agent, within=30)
            started = [r for r in emu.world.created_names if r.startswith("PJSIP/6000")]
            assert started, "the target was not dialled directly"
            moh = [p for _, p, _ in emu.world.requests if p == f"/channels/{caller.id}/moh"]
            assert bool(moh) == (mode == "warm")  # only a warm transfer holds the caller with music
            await emu.caller_hangs_up(caller.id)
            await wait(pilot, lambda: not app.state.calls, within=20)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert not any(n.startswith("Local/") for n in emu.world.created_names)
        assert emu.violations == []


async def test_transfer_key_on_a_call_without_a_phone_line_says_so(config_path: Path, wait: Any) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: app.selected_call in app.state.calls, within=30)
        app.screen.query_one("#calls", DataTable).focus()
        await pilot.press("T")
        await pilot.pause()
        assert not isinstance(app.screen, TransferModal)
        assert any("select a live phone call first" in str(n.message) for n in app._notifications)
