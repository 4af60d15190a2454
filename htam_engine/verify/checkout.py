"""Where KernelBench's source is: --kernelbench PATH, else the `kernelbench` setting
(HTAM_KERNELBENCH or `[paths] kernelbench` in a config file)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from htam_engine import settings
from htam_engine.errors import UsageError

CHECKOUT_ENV = settings.BY_KEY["kernelbench"].env
# The module whose eval_kernel_against_ref `htam verify` calls, relative to the checkout.
EVAL_MODULE = Path("src") / "kernelbench" / "eval.py"


@dataclass(frozen=True, slots=True)
class KernelBenchCheckout:
    root: Path

    @property
    def src(self) -> Path:
        """The folder to put on sys.path so `import kernelbench.eval` finds the checkout's."""
        return self.root / EVAL_MODULE.parent.parent


def find_checkout(path: str | os.PathLike | None = None) -> KernelBenchCheckout:
    """The checkout named by `path`, else by HTAM_KERNELBENCH; UsageError (exit 2) saying how
    to name one when neither holds src/kernelbench/eval.py."""
    named = path if path is not None else settings.value("kernelbench")
    how = (f"pass --kernelbench PATH or set {CHECKOUT_ENV} to a clone of "
           "https://github.com/ScalingIntelligence/KernelBench")
    if not named:
        raise UsageError(f"no KernelBench checkout to verify against: {how}")
    root = Path(named).expanduser()
    if root.name == "KernelBench" and not (root / EVAL_MODULE).is_file():
        root = root.parent  # the problems folder inside a checkout
    if not (root / EVAL_MODULE).is_file():
        source = "--kernelbench" if path is not None else CHECKOUT_ENV
        raise UsageError(f"{source}={named}: not a KernelBench checkout (no {EVAL_MODULE}); {how}")
    return KernelBenchCheckout(root.resolve())
