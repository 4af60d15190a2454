"""Responsiveness of the app, headless at 80x24 (run: python3 tests/bench/bench_tui.py).

1. Key press -> screen: while the engine streams tokens (~2,000 events/s) and reports
   per-trial evaluation timings, toggle the source view (k) and pause/resume (p) and time
   each press until the screen shows the change. Prints median and p95 in ms.
2. Memory browser on a bank of 10,000 strategies: time from pressing m until the tree of
   directions is on screen, and to expand the largest direction.
Writes the figures as JSON to $OUT/bench_tui.json when OUT is set.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "htam_tui")]

from engine_double import ScriptedEngine  # noqa: E402
from screen_text import screen_text  # noqa: E402

from htam_engine.loop import events as ev  # noqa: E402
from htam_engine.memory import HTG  # noqa: E402
from htam_tui.app import HtamApp, UiSettings  # noqa: E402

PRESSES = 40


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def big_bank(n: int = 10_000) -> HTG:
    htg = HTG.seed()
    dirs = htg.directions()
    for i in range(n - len(htg.strategy_ids())):
        d = dirs[i % len(dirs)]
        htg.add_strategy(d, f"strategy {i} for {d}", f"description of strategy {i}", id=f"{d}/bench-{i}")
    return htg


async def until(pilot, cond, timeout=10.0) -> None:
    end = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > end:
            raise TimeoutError
        await pilot.pause(0.01)


async def key_latency() -> dict:
    hold = asyncio.Event()
    engine = ScriptedEngine(steps=1, policy="auto", hold=hold)
    app = HtamApp(engine, settings=UiSettings(bell=False))
    latencies: list[float] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.view.step == 1)

        async def load() -> None:  # the engine's streaming and timing traffic
            i = 0
            while True:
                engine._emit(ev.TokensStreamed(1, text=f"tok{i} " + ("\n" if i % 12 == 11 else "")))
                if i % 50 == 0:
                    engine._emit(ev.EvaluationProgress(1, stage="timing", timings=[0.1 + (i % 7) / 100] * (i % 30 + 1)))
                i += 1
                await asyncio.sleep(0.0005)

        traffic = asyncio.create_task(load())
        await pilot.pause(0.3)
        pane = app.query_one("#source-pane")
        for n in range(PRESSES):
            if n % 2:
                before = app.view.engine_state
                t0 = time.perf_counter()
                await pilot.press("p")
                await until(pilot, lambda: f"[{'paused' if before != 'paused' else 'running'}]" in screen_text(app))
            else:
                mode = pane.mode
                t0 = time.perf_counter()
                await pilot.press("k")
                await until(pilot, lambda: pane.mode != mode)  # the streaming view ignores the mode
                await until(pilot, lambda: "tok" in screen_text(app))
            latencies.append((time.perf_counter() - t0) * 1000)
            await pilot.pause(0.05)
        traffic.cancel()
        engine.stop()
        hold.set()
    return {"key_to_screen_ms_median": statistics.median(latencies), "key_to_screen_ms_p95": p95(latencies),
            "presses": len(latencies)}


async def memory_browser() -> dict:
    t0 = time.perf_counter()
    htg = big_bank()
    built = time.perf_counter() - t0
    app = HtamApp(None, htg=htg, settings=UiSettings(bell=False))
    async with app.run_test(size=(80, 24)) as pilot:
        t0 = time.perf_counter()
        await pilot.press("m")
        await until(pilot, lambda: "memory_access (" in screen_text(app))
        opened = time.perf_counter() - t0
        await pilot.press("down")
        t0 = time.perf_counter()
        await pilot.press("enter")
        await until(pilot, lambda: "├── strategy" in screen_text(app))
        expanded = time.perf_counter() - t0
        t0 = time.perf_counter()
        await pilot.press("slash", *"strategy 9000")
        await until(pilot, lambda: "(1)" in screen_text(app))
        filtered = time.perf_counter() - t0
    return {"bank_strategies": len(htg.strategy_ids()), "bank_build_s": built, "memory_open_ms": opened * 1000,
            "expand_direction_ms": expanded * 1000, "filter_13_keys_ms": filtered * 1000}


def main() -> None:
    figures = {**asyncio.run(key_latency()), **asyncio.run(memory_browser())}
    print(json.dumps(figures, indent=2))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "bench_tui.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
