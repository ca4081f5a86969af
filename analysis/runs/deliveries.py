"""What memory a measured row delivered, from the run's own files, so a published row is paired like with like.

`core_retrieval` is two settings of IBM's: with `top_k: 0` it delivers the core guidelines only (IBM's
"support≥3"); with `top_k > 0` it adds retrieved ones (IBM's "core+retrieval"). Records do not carry strategy
options; each run's `config.yaml` (written by the harness) does, per job: `jobs.<job>.identity.strategy.options`.
"""

from __future__ import annotations

import re

import pandas as pd

from analysis.runs.identity import job_identities
from analysis.statistics.metrics import GROUP, with_assembly

_SHOWN_LABEL = re.compile(r" \[[^\]]*\]$")  # analysis.runs.load.provenance_labels: 'full [unknown provenance]'


def base_strategy(label: str) -> str:
    """'core_retrieval [unknown provenance]' -> 'core_retrieval': the strategy a provenance label was added to."""
    return _SHOWN_LABEL.sub("", str(label))


def job_options(run_dir: str) -> dict[str, dict]:
    """{job key: the strategy options it ran with} from `<run_dir>/config.yaml` ({} when there is none; read once
    per version of the file, analysis.runs.identity)."""
    return {key: (ident.get("strategy") or {}).get("options") or {} for key, ident in job_identities(run_dir).items()}


def core_retrieval_delivery(options: dict | None) -> str | None:
    """'core only (support≥3)' / 'core + retrieval (top_k=10)'; None when the options do not say."""
    if not options or options.get("top_k") is None or options.get("core_support") is None:
        return None
    if int(options["top_k"]) == 0:
        return f"core only (support≥{options['core_support']})"
    return f"core + retrieval (top_k={options['top_k']})"


def kind(delivery: str) -> str:
    """'core + retrieval (top_k=10)' -> 'core + retrieval': what a published `delivery` names."""
    return delivery.split(" (top_k=")[0]


def deliveries(records: pd.DataFrame | None) -> dict[tuple, set[str | None]]:
    """Per summary row (GROUP key): the deliveries of its `core_retrieval` jobs (None: not recorded)."""
    if records is None or records.empty or "run_dir" not in records or "job" not in records:
        return {}
    out: dict[tuple, set[str | None]] = {}
    records = with_assembly(records)
    jobs = records[records["strategy"].map(base_strategy) == "core_retrieval"]
    for key, group in jobs.groupby(GROUP, dropna=False, sort=False):
        out[key] = {core_retrieval_delivery(job_options(str(run)).get(str(job)))
                    for run, job in set(zip(group["run_dir"], group["job"]))}
    return out
