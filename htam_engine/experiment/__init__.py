"""The memory-value experiment: the paper's ablation, run on real timings without a model.

    spec = ExperimentSpec(test=[...], bank=[...])              # plan.py: arms, seeds, starts
    pool = TablePool(EvalTable(path, table_settings(cfg)), WorkerPool(16, "cuda"))   # table.py
    outcome = await Experiment(spec, out, pool=pool, proposer=..., eval_config=cfg).run(problems, 480)
    print(render_markdown(outcome))                            # report.py, from stats.py

`htam compare DIR` prints the same tables from an experiment folder.
"""

from htam_engine.experiment.plan import Arm, ExperimentSpec, RunKey, RunRecord, Start, StepRow
from htam_engine.experiment.run import Experiment, Outcome, load_outcome
from htam_engine.experiment.table import EvalTable, TableKey, TableMode, TablePool, table_settings

__all__ = ["Arm", "EvalTable", "Experiment", "ExperimentSpec", "Outcome", "RunKey", "RunRecord", "Start", "StepRow",
           "TableKey", "TableMode", "TablePool", "load_outcome", "table_settings"]
