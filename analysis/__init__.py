"""memdeliv analysis: reads run directories only, never the runner.

The top level holds the commands (`python -m analysis.table`, `tables`, `recommend`, `report`, `plan`, `power`,
`noise_floor`, `audit`, `ace_counters`, `export_tau2`, the `viewer`), what only they use (`decision.py`,
`task_effects.py`) and the number formatting every part shares (`fmt.py`). Below them, four parts:
`statistics/` (numbers over record frames), `runs/` (run directories into frames, what a cell is), `planning/`
and `views/` (what the commands show). This module is the public face for notebooks; the plots live in
`analysis.views.plots`, which loads matplotlib.
"""

from analysis.runs.load import jobs_frame, load_memory_history, load_records, steps_frame
from analysis.statistics.metrics import paired_comparisons, pass_hat_ks, summarize
from analysis.statistics.stats import bootstrap_ci, mcnemar_exact, paired
from analysis.views.compare import model_table

__all__ = ["load_records", "jobs_frame", "steps_frame", "load_memory_history", "summarize", "pass_hat_ks",
           "paired_comparisons", "model_table", "bootstrap_ci", "mcnemar_exact", "paired"]
