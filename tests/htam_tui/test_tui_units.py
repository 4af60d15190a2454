"""The app's plain parts: event folding, renderers, settings, and live streaming into the source pane."""

from __future__ import annotations

import re
import time

import pytest
from engine_double import CODE_V1, _selection, compile_error, ok_result
from pilot import SMALL, wait_for, wait_text
from screen_text import screen_text
from textual.widgets import TextArea

from htam_engine.errors import InputError
from htam_engine.loop import events as ev
from htam_engine.loop.approval import DecisionRequest
from htam_engine.session.model import Decision
from htam_tui import render
from htam_tui.app import HtamApp, UiSettings
from htam_tui.bridge import EngineEvents
from htam_tui.screens.approval import result_line
from htam_tui.view import ViewState


async def test_view_folds_a_step():
    v = ViewState()
    request = DecisionRequest(1, 0, CODE_V1, direction="fusion")
    v.apply_all([
        ev.SessionStarted(0, problem_id="p", steps_planned=4),
        ev.StepStarted(1),
        ev.DirectionSelected(1, selection=_selection(1)),
        ev.CandidateProposed(1, code=CODE_V1),
        ev.ApprovalRequested(1, request=request, pending=(request,)),
    ])
    assert (v.problem, v.steps_planned, v.step, v.decision) == ("p", 4, 1, request)
    request.approve()
    dirty = v.apply_all([ev.DecisionMade(1, decision=Decision("approve", "person")),
                         ev.EvaluationFinished(1, result=ok_result(2.0)),
                         ev.StepFinished(1, step_speedup=2.0, best_speedup=2.0, improved=True, best_code=CODE_V1)])
    assert {"status", "timings"} <= dirty
    assert v.decision is None and v.best_speedup == 2.0 and v.best_code == CODE_V1
    assert v.step_speedups == [2.0] and v.compile_baseline == pytest.approx(1.25)
    v.apply_all([ev.StepStarted(2), ev.EvaluationFinished(2, result=compile_error()),
                 ev.StepFinished(2, best_speedup=2.0, best_code=CODE_V1)])
    assert v.step_speedups == [2.0, None] and v.best_speedup == 2.0
    assert v.errors[0].line == 7 and v.errors[0].file == "main.cpp"


def test_chart_marks_baselines_and_failures():
    chart = render.speedup_chart([1.5, None, 2.0], eager=1.0, compiled=1.25, width=10, height=4).plain
    assert "eager 1.00x" in chart and "compile 1.25x" in chart and "✗" in chart
    rows = render.speedup_chart([1.5], eager=1.0, compiled=1.02, width=10, height=3).plain.splitlines()
    eager, = (i for i, r in enumerate(rows) if "eager" in r)
    compiled, = (i for i, r in enumerate(rows) if "compile" in r)
    assert eager != compiled and compiled < eager  # two baselines close together keep a row each


def test_kernel_sources_and_diff():
    (line, src), = render.kernel_sources(CODE_V1)
    assert line == 5 and "#include <torch/extension.h>" in src
    assert render.kernel_sources("import triton\n") == []
    assert "+    y = 2" in render.unified_diff("y = 1\n", "    y = 2\n")
    assert render.unified_diff(None, "x").startswith("(no previous best")


def test_diagnostics_map_to_source_lines():
    two = 'cpp = """\ntorch::Tensor f(torch::Tensor x);\n"""\ncu = """\n#include <cuda.h>\n__global__ void k() {\n  x;\n}\n"""\n'
    # kernel view: the C++ part (3 lines: "", the declaration, "") then the CUDA part
    assert render.locate(two, "cuda.cu", 3 + 4) == ("kernel", 3 + 4)
    assert render.locate(two, "main.cpp", 3) == ("kernel", 2)
    assert render.locate(two, "candidate.py", 4) == ("module", 4)
    triton = "import triton\n\n\n@triton.jit\ndef k(x):\n    y = x\n"
    assert render.locate(triton, "triton", 2) == ("module", 6)


def test_timing_lines_name_the_first_call_within_the_checks():
    """A finished evaluation's stage seconds; the candidate's first call (a Triton kernel's compile
    on a GPU) is named inside the checks once it shows as a tenth of a second."""
    r = ok_result(2.0)
    r.stages.compile_s, r.stages.check_s, r.stages.first_call_s, r.stages.time_s = 0.4, 5.2, 3.1, 1.5
    text = render.timing_lines("", None, [], r, now=0.0).plain
    assert "compile 0.4s check 5.2s (first call 3.1s) time 1.5s" in text, text
    r.stages.first_call_s = 0.001  # the CPU's few milliseconds are not worth a word
    assert "first call" not in render.timing_lines("", None, [], r, now=0.0).plain


def test_result_line_shows_a_measured_result():
    assert "1.60x vs eager" in result_line(ok_result(1.6)).plain
    assert "compile_error" in result_line(compile_error()).plain
    assert "not evaluated yet" in result_line(None).plain


def test_ui_settings_from_config():
    s = UiSettings.from_config({"refresh_hz": 2, "bell": False, "theme": "ansi-dark"})
    assert (s.refresh_hz, s.bell, s.theme) == (2.0, False, "ansi-dark")
    with pytest.raises(InputError, match="could not convert"):
        UiSettings.from_config({"refresh_hz": "fast"})
    with pytest.raises(InputError, match="bell"):
        UiSettings.from_config({"bell": "loud"})


async def test_source_grows_live_while_the_model_streams():
    app = HtamApp(None, settings=UiSettings(bell=False, theme="ansi-dark"))
    async with app.run_test(size=SMALL) as pilot:
        assert app.theme == "ansi-dark"
        app.post_message(EngineEvents([ev.StepStarted(1), ev.TokensStreamed(1, text="Here is\n")]))
        await wait_text(pilot, "model writing")
        area = app.query_one("#source", TextArea)
        app.post_message(EngineEvents([ev.TokensStreamed(1, text="the kernel")]))
        await wait_for(pilot, lambda: area.text == "Here is\nthe kernel")
        app.post_message(EngineEvents([ev.CandidateProposed(1, code=CODE_V1)]))
        await wait_for(pilot, lambda: area.text == CODE_V1 and area.language == "python")
        app.post_message(EngineEvents([ev.EvaluationProgress(1, stage="time", stage_started=time.time() - 42,
                                                             timings=[1.0, 1.2, 0.9])]))
        # 42 s when drawn at once; a loaded machine may draw it a few seconds later
        def shown() -> int:
            m = re.search(r"time (\d+) s", screen_text(pilot.app))
            return int(m.group(1)) if m else -1

        await wait_for(pilot, lambda: 42 <= shown() <= 49)
        first = shown()
        await wait_for(pilot, lambda: shown() > first, timeout=3)  # the elapsed time moves on between events
        await wait_text(pilot, "3 trials")  # and the stage's elapsed seconds


async def test_status_line_keeps_every_fact_at_80_columns():
    v = ViewState(problem="builtin:affine_gelu_scale", backend="cpp", device="cpu", policy="ask",
                  steps_planned=6, step=1, tokens=12345, cost_usd=0.12)
    v.pending = (DecisionRequest(1, 0, CODE_V1),)
    wide = render.status_line(v, 200).plain
    assert "DECISION PENDING (1)" in wide and "builtin:affine_gelu_scale" in wide
    narrow = render.status_line(v, 80).plain
    assert len(narrow) <= 80
    for fact in ("PENDING 1", "[starting]", "step 1/6", "best -", "ask", "tok 12k $0.12", "cpp/cpu",
                 "affine_gelu_scale"):
        assert fact in narrow  # the whole problem name too


def test_the_best_is_the_engines_not_the_last_candidate_shown():
    """Two samples: the source pane followed sample 1, but sample 0 became the best; the diff
    view compares against what the engine says the best is."""
    other = CODE_V1.replace("scalar loop", "sample 1")
    v = ViewState()
    v.apply_all([ev.StepStarted(1), ev.CandidateProposed(1, sample=1, code=other),
                 ev.StepFinished(1, step_speedup=2.0, best_speedup=2.0, improved=True, best_code=CODE_V1)])
    assert v.code == other and v.best_code == CODE_V1
