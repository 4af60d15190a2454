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


async def until(pilot, cond, timeout=10.0, step=0.01) -> None:
    end = time.perf_counter() + timeout
    while not cond():
        if time.perf_counter() > end:
            raise TimeoutError
        await asyncio.sleep(step)


class FrameClock:
    """Timestamps of the frames the app composes for the terminal (headless: composed, not sent)."""

    def __init__(self, app) -> None:
        self.times: list[float] = []
        inner = app._display

        def display(screen, renderable) -> None:
            if renderable is not None:
                self.times.append(time.perf_counter())
            inner(screen, renderable)

        app._display = display

    def first_after(self, t: float) -> float | None:
        return next((x for x in self.times if x >= t), None)


async def key_latency() -> dict:
    """Key press -> first frame written after the app's state changed, with the engine streaming
    tokens (~1,000 events/s, lines of model text) and per-trial timings into the app."""
    hold = asyncio.Event()
    engine = ScriptedEngine(steps=1, policy="auto", hold=hold)
    app = HtamApp(engine, settings=UiSettings(bell=False))
    latencies: list[float] = []
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app.view.step == 1)
        clock = FrameClock(app)

        async def load() -> None:  # the engine's streaming and timing traffic
            i = 0
            while True:
                engine._emit(ev.TokensStreamed(1, text=f"tok{i} " + ("\n" if i % 12 == 11 else "")))
                if i % 50 == 0:
                    engine._emit(ev.EvaluationProgress(1, stage="timing", timings=[0.1 + (i % 7) / 100] * (i % 30 + 1)))
                i += 1
                await asyncio.sleep(0.001)

        traffic = asyncio.create_task(load())
        await pilot.pause(0.3)
        pane = app.query_one("#source-pane")
        for n in range(PRESSES):
            if n % 2:
                before = app.view.engine_state
                t0 = time.perf_counter()
                app.simulate_key("p")
                await until(pilot, lambda: app.view.engine_state != before, step=0.001)
            else:
                mode = pane.mode
                t0 = time.perf_counter()
                app.simulate_key("k")
                await until(pilot, lambda: pane.mode != mode, step=0.001)
            changed = time.perf_counter()
            await until(pilot, lambda: clock.first_after(changed) is not None, step=0.001)
            latencies.append((clock.first_after(changed) - t0) * 1000)
            await pilot.pause(0.05)
        traffic.cancel()
        engine.stop()
        hold.set()
    return {"key_to_frame_ms_median": statistics.median(latencies), "key_to_frame_ms_p95": p95(latencies),
            "presses": len(latencies)}


async def key_latency_real_engine() -> dict:
    """The same measure on the real engine: the loopback model server streams a Triton candidate
    (2 samples per step, ~3 s of text each) and the worker pool evaluates them (TRITON_INTERPRET=1)
    while keys toggle the source view and move between panes."""
    import tempfile

    from htam_engine.evaluate.pool import WorkerPool
    from htam_engine.loop.engine import Engine
    from htam_engine.problems import load_problem
    from htam_engine.propose.config import load_config
    from htam_engine.propose.model import ModelProposer
    from htam_engine.session.model import SessionConfig
    from loopback_support import MODEL, PROBLEM_PATH, TRITON_CODE, fast_eval
    from tests.support.loopback_server import LoopbackServer, Reply

    prose = "Reasoning about the kernel: coalesced loads, one program per block.\n" * 60
    reply = Reply(prose + "```python\n" + TRITON_CODE + "```\n", chunk_chars=8, chunk_delay_s=0.01)
    tmp = Path(tempfile.mkdtemp())
    latencies: list[float] = []
    phases = {"streaming": 0, "evaluating": 0, "other": 0}
    by_key: dict[str, list[float]] = {}
    with LoopbackServer(default=reply, model=MODEL) as server:
        cfg = load_config({**server.config_overrides(), "retries": 0, "reflect": False},
                          env={"OPENAI_API_KEY": "sk-bench"}, user_file=tmp / "u.toml", project_file=tmp / "p.toml")
        engine = Engine(load_problem(str(PROBLEM_PATH)),
                        SessionConfig(backend="triton", device="cpu", policy="auto", steps=3, samples=2),
                        proposer=ModelProposer(cfg.model), pool=WorkerPool(2, "cpu"), session_path=tmp / "b.htam",
                        interactive=True, eval_config=fast_eval())
        app = HtamApp(engine, settings=UiSettings(bell=False))
        async with app.run_test(size=(80, 24)) as pilot:
            clock = FrameClock(app)
            await until(pilot, lambda: app.view.step >= 1, timeout=60)
            pane = app.query_one("#source-pane")
            keys = ["k", "2", "k", "1"]
            n = 0
            while app.view.engine_state != "finished" and n < 400:
                key = keys[n % len(keys)]
                phase = "streaming" if app.view.streaming else "evaluating" if app.view.stage in (
                    "static", "compile", "correctness", "timing") else "other"
                before = (pane.mode, app.focused)
                t0 = time.perf_counter()
                app.simulate_key(key)
                await until(pilot, lambda: (pane.mode, app.focused) != before, step=0.001)
                changed = time.perf_counter()
                await until(pilot, lambda: clock.first_after(changed) is not None, step=0.001)
                latencies.append((clock.first_after(changed) - t0) * 1000)
                by_key.setdefault("toggle source view (k)" if key == "k" else "focus a pane (1/2)", []).append(latencies[-1])
                phases[phase] += 1
                n += 1
                await asyncio.sleep(0.1)
            await until(pilot, lambda: app.view.engine_state == "finished", timeout=120)
    return {"real_engine_key_to_frame_ms_median": statistics.median(latencies),
            "real_engine_key_to_frame_ms_p95": p95(latencies), "real_engine_presses": len(latencies),
            "real_engine_presses_by_phase": phases,
            "real_engine_median_ms_by_key": {k: statistics.median(v) for k, v in by_key.items()}}


async def memory_browser() -> dict:
    """Bank of 10,000 strategies: press m -> first frame with the tree of directions; Enter on a
    direction -> first frame with its first chunk of strategies; each filter keystroke -> frame."""
    from textual.widgets import Tree

    from htam_tui.screens.memory import MemoryScreen

    t0 = time.perf_counter()
    htg = big_bank()
    built = time.perf_counter() - t0
    app = HtamApp(None, htg=htg, settings=UiSettings(bell=False))
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause(0.3)  # the app is up before the first key
        clock = FrameClock(app)

        async def timed(key: str, done) -> float:
            t0 = time.perf_counter()
            app.simulate_key(key)
            await until(pilot, done, step=0.001)
            changed = time.perf_counter()
            await until(pilot, lambda: clock.first_after(changed) is not None, step=0.001)
            return (clock.first_after(changed) - t0) * 1000

        def tree():
            return app.screen.query_one(Tree) if isinstance(app.screen, MemoryScreen) else None

        opened = await timed("m", lambda: tree() is not None and len(tree().root.children) == len(htg.directions()))
        await pilot.pause(0.1)
        app.simulate_key("down")
        await pilot.pause(0.1)
        expanded = await timed("enter", lambda: len(tree().root.children[1].children) > 0)
        app.simulate_key("slash")
        await pilot.pause(0.1)
        per_key = []
        for ch in "9000":  # narrows to one strategy ("strategy 9000 for ...")
            shown = app.screen.filter_text
            per_key.append(await timed(ch, lambda: app.screen.filter_text != shown))
        assert len(tree().root.children) == 1, f"filter {app.screen.filter_text!r}: {len(tree().root.children)}"
    return {"bank_strategies": len(htg.strategy_ids()), "bank_build_s": built, "memory_open_ms": opened,
            "expand_direction_ms": expanded, "filter_key_ms_median": statistics.median(per_key),
            "filter_key_ms_max": max(per_key)}


def main() -> None:
    figures = {"load_average_1min_before": os.getloadavg()[0], "cpu_cores": os.cpu_count(),
               **asyncio.run(key_latency()), **asyncio.run(key_latency_real_engine()), **asyncio.run(memory_browser())}
    print(json.dumps(figures, indent=2))
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "bench_tui.json").write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
