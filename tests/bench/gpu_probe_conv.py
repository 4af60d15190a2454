"""Where torch.compile wins on a convolution with a tail: the convolution's layout, or the tail?

For each named KernelBench problem (official sizes) it times, by the judge's trial protocol
(timing.run_trial: L2 flush, CUDA events, median of --trials):
  eager                 the problem's Model
  torch.compile         torch.compile(Model) in its default mode
  conv NCHW             the model's first convolution alone, as eager runs it
  conv channels-last    the same convolution on a channels-last input and weight
  + input to NHWC       the input's conversion to channels-last, alone (PyTorch's copy, then
                        the Triton transpose channels-last candidates call)
  conv ..., no bias     each layout without the bias, which the candidates' tails add
  CL outside 1e-4       the share of the channels-last result outside the judge's 1e-4 of the NCHW one
  conv ... benchmark    each layout again with cuDNN's own algorithm search on
and writes the code Inductor generated for each problem to $OUT/inductor_<problem>.py, which says
what layout it chose and what it fused. On a CUDA machine:

    HTAM_KERNELBENCH=/path/to/KernelBench python3 tests/bench/gpu_probe_conv.py 2/1 2/73 1/17
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from kb_table import problem_file  # noqa: E402


def timed(fn, args, trials: int) -> float:
    import torch

    from htam_engine.evaluate.timing import L2Flusher, run_trial

    flusher = L2Flusher("cuda")
    with torch.no_grad():
        for _ in range(3):
            run_trial(fn, args, "cuda", 0.0, (), flusher)
        return statistics.median(run_trial(fn, args, "cuda", 0.0, (), flusher)[1] for _ in range(trials))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("problems", nargs="+", help="level/number, e.g. 2/1")
    ap.add_argument("--kb", default=os.environ.get("HTAM_KERNELBENCH"))
    ap.add_argument("--trials", type=int, default=30)
    args = ap.parse_args()
    import torch
    from torch._inductor.utils import run_and_get_code

    from htam_engine.evaluate.seeding import seed_all
    from htam_engine.problems import load_problem
    from htam_engine.problems.loader import load_for_judge
    from htam_engine.propose.offline.runtime_layout import _channels_last

    out = Path(os.environ.get("OUT", "."))
    for pick in args.problems:
        path = problem_file(args.kb, pick)
        loaded = load_for_judge(load_problem(str(path), device="cuda"), "cuda", check_unseen=False).main
        seed_all(42)
        model = loaded.Model(*loaded.get_init_inputs()).cuda()
        seed_all(0)
        inputs = loaded.get_inputs()
        row = {"eager": timed(model, inputs, args.trials)}
        compiled = torch.compile(model)
        with torch.no_grad():
            _, code = run_and_get_code(compiled, *inputs)
        (out / f"inductor_{pick.replace('/', '_')}.py").write_text("\n\n# ----\n".join(code))
        row["torch.compile"] = timed(compiled, inputs, args.trials)
        conv = next((m for m in model.modules() if isinstance(m, torch.nn.modules.conv._ConvNd)), None)
        if conv is not None:
            x = inputs[0]
            fmt = torch.channels_last if x.dim() == 4 else torch.channels_last_3d
            row["conv NCHW"] = timed(conv, [x], args.trials)
            conv_cl = copy.deepcopy(conv).to(memory_format=fmt)
            x_cl = x.contiguous(memory_format=fmt)
            row["conv channels-last"] = timed(conv_cl, [x_cl], args.trials)
            row["+ input to NHWC"] = timed(lambda t: t.contiguous(memory_format=fmt), [x], args.trials)
            row["+ input to NHWC, htam's kernel"] = timed(_channels_last, [x], args.trials)
            bias_free, bias_free_cl = copy.deepcopy(conv), copy.deepcopy(conv_cl)
            bias_free.bias = bias_free_cl.bias = None
            row["conv NCHW, no bias"] = timed(bias_free, [x], args.trials)
            row["conv CL, no bias"] = timed(bias_free_cl, [x_cl], args.trials)
            with torch.no_grad():
                y = conv_cl(x_cl)
                y_ref = conv(x)
            row["out is channels-last"] = float(y.is_contiguous(memory_format=fmt))
            # how far the channels-last result is from the NCHW one, by the judge's 1e-4 rule
            row["CL outside 1e-4 (%)"] = 100 * (~torch.isclose(y, y_ref, atol=1e-4, rtol=1e-4)).float().mean().item()
            # cuDNN's own search (torch.backends.cudnn.benchmark) in each layout
            torch.backends.cudnn.benchmark = True
            row["conv NCHW benchmark"] = timed(conv, [x], args.trials)
            row["conv CL benchmark"] = timed(conv_cl, [x_cl], args.trials)
            torch.backends.cudnn.benchmark = False
        print(f"{path.stem}: " + ", ".join(f"{k} {v:.3f}" for k, v in row.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
