"""``engine.core.running_task.current_task``: the caller's task, as ``asyncio.current_task`` says, also while another
thread's loop is idle or in the middle of stepping a task of its own."""

from __future__ import annotations

import asyncio
import threading

import pytest

from engine.core.running_task import current_task


async def test_inside_tasks_it_is_the_callers_task() -> None:
    async def who() -> asyncio.Task[object] | None:
        return current_task()

    tasks = [asyncio.create_task(who()) for _ in range(5)]
    assert await asyncio.gather(*tasks) == tasks
    assert current_task() is asyncio.current_task()


async def test_another_threads_loop_stepping_or_idle_does_not_confuse_it() -> None:
    stepping, release, idle = threading.Event(), threading.Event(), threading.Event()

    async def busy() -> None:
        stepping.set()
        release.wait(10)  # blocks inside a step: this loop's task stays in asyncio's table meanwhile
        await asyncio.sleep(0)
        idle.set()
        await asyncio.sleep(0.3)  # the loop runs on with nothing to step

    thread = threading.Thread(target=asyncio.run, args=(busy(),))
    thread.start()
    try:
        assert stepping.wait(10)
        assert current_task() is asyncio.current_task()  # two loops mid-step: asyncio is asked
        release.set()
        assert await asyncio.to_thread(idle.wait, 10)
        assert current_task() is asyncio.current_task()  # the other loop is idle: this loop's entry is the only one
    finally:
        release.set()
        await asyncio.to_thread(thread.join, 10)


def test_outside_any_loop_it_says_so_as_asyncio_does() -> None:
    with pytest.raises(RuntimeError):
        current_task()
