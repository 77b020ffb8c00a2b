"""The app's replay keys and worker: open a recording (Ctrl+O), switch speed (Ctrl+R), feed the screens.

Why a part of its own (the app builds and holds it, given the console as ``ReplayHost``): the app module is
wiring; this is the one place that starts a ``Replay`` (``console.replay``) and feeds its events to the screens,
with or without an engine in the console. They come as ``ReplayBatch``, not the live pump's ``EventBatch``: a replay
is history, so its batches go to the console state and the screens only, never to the approval queue, the question
dialogs, the softphone panel or (beside a live engine) the header's counts.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from textual.message import Message

from console.ports import Notifier, Workers
from console.replay import Replay, speed_label
from console.timings_state import VIEW_ONLY

if TYPE_CHECKING:
    from collections.abc import Sequence

    from console.screen_feed import ScreenFeed
    from console.state import ConsoleState
    from console.timings_state import TimingsState
    from console.voice_status import VoiceStatus
    from console.widgets.header import Glance
    from engine import Engine
    from engine.config import Settings
    from engine.events import Event


class ReplayBatch(Message):
    """Recorded events, replayed: shown as the live ones were, acted on never."""

    def __init__(self, events: Sequence[Event]) -> None:
        super().__init__()
        self.events = list(events)


class ReplayHost(Notifier, Workers, Protocol):
    """What the replay part reads and feeds: the console's state, its screens and its header."""

    engine: Engine | None
    config_path: Path
    sub_title: str
    state: ConsoleState
    timings: TimingsState
    glance: Glance
    voice: VoiceStatus
    feed: ScreenFeed

    @property
    def settings(self) -> Settings | None: ...

    def cancel_workers(self, group: str) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def push_screen(self, screen: Any, callback: Any = None) -> Any: ...

    def show_engine_status(self) -> None: ...


class ReplayControls:
    """Replays of recordings: the one running (or last run), its speed, and where they come from."""

    def __init__(self, host: ReplayHost, path: str | Path | None, speed: float) -> None:
        self.host = host
        #: The replay running or last run (None: none yet).
        self.replay: Replay | None = None
        #: ``--replay FILE``: the console replays this file and starts no engine.
        self.replay_path = Path(path) if path is not None else None
        self.replay_speed = speed

    @property
    def replay_only(self) -> bool:
        """Whether this console only replays (``--replay``): it has no engine."""
        return self.replay_path is not None

    def start_replay(self, path: str | Path, speed: float | None = None) -> None:
        """Replay a recording through the screens (another replay running is stopped first)."""
        self.host.cancel_workers("replay")
        self.host.run_worker(
            self._replay(Path(path), self.replay_speed if speed is None else speed),
            group="replay",
            name="replay",
            exit_on_error=False,
        )

    async def _replay(self, path: Path, speed: float) -> None:
        app = self.host
        from engine import RecordingError

        try:
            replay = await asyncio.to_thread(Replay.load, path, speed, live=not self.replay_only)
        except (RecordingError, OSError) as e:
            app.notify(str(e), title="replay", severity="error", timeout=15)
            return
        if not replay.events:
            app.notify(f"{path.name}: no events this console knows", title="replay", severity="warning")
            return
        self.replay = replay
        app.notify(f"{path.name} at {speed_label(speed)} (Ctrl+R: speed)", title="replay")
        self._show_replay_status()
        await replay.run(lambda events: app.post_message(ReplayBatch(events)))
        self._show_replay_status()
        app.notify(f"{path.name}: replay finished", title="replay")

    def take(self, message: ReplayBatch) -> None:
        """Replayed events into the console state and the screens; none into what the operator acts on."""
        app = self.host
        app.feed.batches += 1
        voice = [e for e in message.events if e.type.startswith("softphone.")]
        if voice and self.replay_only:  # beside a live engine the softphone panel is the live phone's
            app.voice.apply(voice)
            app.feed.tell("show_voice")
        events = [e for e in message.events if not e.type.startswith("softphone.")]
        app.timings.apply(events)
        changes = app.state.apply(e for e in events if e.type not in VIEW_ONLY)
        if self.replay_only:  # the header's error count as the recording's operator saw it; no alarm: it is past
            app.glance.apply(events)
        app.show_engine_status()
        app.feed.dispatch(changes)

    def _show_replay_status(self) -> None:
        app = self.host
        r = self.replay
        if r is None:
            return
        state = "finished" if r.done else speed_label(r.speed)
        if self.replay_only:
            app.sub_title = f"replay {state} · {r.path}"

    def next_speed(self) -> None:
        """Next speed (1× → 4× → instant) for the replay running, or for the next one."""
        r = self.replay
        if r is not None and not r.done:
            speed = r.next_speed()
        else:
            from console.replay import SPEEDS

            speed = SPEEDS[(SPEEDS.index(self.replay_speed) + 1) % len(SPEEDS)] if self.replay_speed in SPEEDS else 1.0
        self.replay_speed = speed
        self.host.notify(f"replay speed {speed_label(speed)}", title="replay")
        self._show_replay_status()

    def open(self) -> None:
        """Pick a recording (newest first) and replay it."""
        from console.screens.recordings import RecordingsScreen

        app = self.host

        def chosen(path: Path | None) -> None:
            if path is not None:
                self.start_replay(path)

        app.push_screen(RecordingsScreen(self.recordings_folder()), chosen)

    def recordings_folder(self) -> Path:
        """Where the open dialog looks: the engine's ``recording.dir``, the replayed file's folder, or the default."""
        from engine import default_recordings_dir

        app = self.host
        engine = app.engine
        if engine is not None:
            return Path(engine.recordings_dir)
        if self.replay_path is not None:
            return self.replay_path.parent
        settings = app.settings
        if settings is not None and settings.recording.dir:
            return (Path(app.config_path).parent / Path(settings.recording.dir).expanduser()).resolve()
        return Path(default_recordings_dir())


def replay_main(path: str, speed_text: str) -> int:
    """``ava-console --replay FILE``: the recording is checked first, so a wrong path says so before any screen."""
    from console.replay import parse_speed
    from engine import RecordingError, read_recording

    try:
        speed = parse_speed(speed_text)
        read_recording(path)
    except (ValueError, RecordingError) as e:
        print(f"ava-console: {e}", file=sys.stderr)
        return 2
    from console.app import AvaConsole

    AvaConsole(Path(path).parent, replay=path, replay_speed=speed).run()
    return 0
