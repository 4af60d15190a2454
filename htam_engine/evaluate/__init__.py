"""Evaluation: static checks, build/load, correctness and integrity, timing — in killable workers.

    evaluate(problem, code, config=None, on_progress=None) -> EvalResult   (synchronous)
    WorkerPool(size, device): await pool.evaluate(...), await pool.close()  (asyncio)
    Evaluator(device): one reusable worker slot
"""

from htam_engine.evaluate.config import DEFAULT_TOLERANCES, EvalConfig
from htam_engine.evaluate.evaluator import Evaluator, evaluate
from htam_engine.evaluate.pool import WorkerPool
from htam_engine.evaluate.result import EvalResult, Status

__all__ = ["DEFAULT_TOLERANCES", "EvalConfig", "EvalResult", "Evaluator", "Status", "WorkerPool", "evaluate"]
