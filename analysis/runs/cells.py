"""A record's cell (benchmark, task set, split, model, request-assembly settings, strategy and its variant, memory
artifact: analysis.runs.identity) and the runs that hold the same episodes of one cell: refused by analysis.runs.load,
or pooled as extra trials (--pool-runs)."""

from __future__ import annotations

from analysis.runs.identity import UNKNOWN, short_id, task_set_id
from harness.assembly.options import DEFAULTS as ASSEMBLY_DEFAULTS  # the settings' one definition (stdlib only)

# Request-assembly settings of a record, read as their defaults for runs made before them (placement's default
# is the benchmark's own: None here, and a label shows it only when it varies).
ASSEMBLY_FIELDS = {"placement": None, **ASSEMBLY_DEFAULTS}

# + task_id, trial = one episode
EPISODE_CELL = ("benchmark", "split", "model", *ASSEMBLY_FIELDS, "strategy", "strategy_variant", "memory_sha",
                "task_set")


def cell_of(row: dict) -> tuple:
    return tuple(task_set_id(row.get(k)) if k == "task_set" else
                 row.get(k) if row.get(k) is not None else ASSEMBLY_FIELDS.get(k) for k in EPISODE_CELL)


def cell_label(cell: tuple) -> str:
    """benchmark/split/model/strategy, plus the assembly settings that are not the defaults."""
    named = dict(zip(EPISODE_CELL, cell))
    extra = [f"{k}={named[k]}" for k, default in ASSEMBLY_FIELDS.items() if named[k] not in (default, None)
             and k != "placement"]  # placement's default depends on the benchmark: shown only when it clashes
    extra += [f"mem {short_id(named['memory_sha'])}"] if named.get("memory_sha") else []
    variant = f" ({named['strategy_variant']})" if named.get("strategy_variant") else ""
    return "/".join(str(named[k]) for k in ("benchmark", "split", "model", "strategy")) + variant + \
        (f" [{', '.join(extra)}]" if extra else "")


def run_overlaps(rows: list[dict]) -> dict[tuple[str, str], list[tuple]]:
    """{(earlier run_dir, later run_dir): the episodes (cell + task, trial) both hold}."""
    owner: dict[tuple, str] = {}
    clashes: dict[tuple[str, str], list[tuple]] = {}
    for row in rows:
        key = (*cell_of(row), str(row["task_id"]), row.get("trial", 0))
        first = owner.setdefault(key, row["run_dir"])
        if first != row["run_dir"]:
            clashes.setdefault((first, row["run_dir"]), []).append(key)
    return clashes


def overlap_message(clashes: dict[tuple[str, str], list[tuple]]) -> str:
    parts = []
    for (a, b), keys in clashes.items():
        *cell, task, trial = keys[0]
        parts.append(f"{a} and {b} hold the same {len(keys)} episode(s) (e.g. {cell_label(tuple(cell))} "
                     f"task {task} trial {trial})")
    return ("; ".join(parts) + ": counting them together would add them as extra trials. Give one run per cell, or "
            "pass --pool-runs (make ... POOL=1) to pool them as distinct trials (trial seeds repeat)")


def unknown_artifacts(clashes: dict[tuple[str, str], list[tuple]]) -> str | None:
    """Why runs sharing a cell cannot be pooled when a run did not record which memory artifact it delivered
    from (two such runs may have used different contents of one path); None when every artifact is known."""
    at = EPISODE_CELL.index("memory_sha")
    for (a, b), keys in clashes.items():
        if keys[0][at] == UNKNOWN:
            return (f"--pool-runs: {a} and {b} did not record the memory artifact they delivered from (mem unknown: "
                    f"no config.yaml or manifest.json entry), so they may have used different contents of "
                    f"{cell_label(keys[0][:-2])}'s memory file: not pooled")
    return None


def pool_runs(rows: list[dict], clashes: dict[tuple[str, str], list[tuple]]) -> list[str]:
    """Renumber, in place, the trials of every cell that two runs share: each later run's trials follow the
    earlier runs' (`trial_in_run` keeps the original). Returns the lines that say so."""
    shared = {key[:-2] for keys in clashes.values() for key in keys}
    runs: dict[tuple, dict[str, int]] = {}  # cell -> run_dir -> its highest trial, in order of appearance
    seeds: dict[tuple, dict[str, set]] = {}  # cell -> run_dir -> the trial seeds its records carry
    for row in rows:
        cell = cell_of(row)
        if cell in shared:
            seen = runs.setdefault(cell, {})
            seen[row["run_dir"]] = max(seen.get(row["run_dir"], -1), int(row.get("trial", 0)))
            seeds.setdefault(cell, {}).setdefault(row["run_dir"], set()).add(row.get("seed"))
    lines = []
    for cell, tops in runs.items():
        offsets, start = {}, 0
        for run_dir, top in tops.items():
            offsets[run_dir], start = start, start + top + 1
        for row in rows:
            if cell_of(row) == cell:
                row["trial_in_run"] = row.get("trial", 0)
                row["trial"] = row["trial_in_run"] + offsets[row["run_dir"]]
        spans = ", ".join(f"{run} as trials {o}-{o + tops[run]}" for run, o in offsets.items())
        per_run = list(seeds[cell].values())
        repeat = any(a & b - {None} for i, a in enumerate(per_run) for b in per_run[:i]) or \
            all(s == {None} for s in per_run)  # records without a seed: the same benchmark.seed is likely
        lines.append(f"--pool-runs: {cell_label(cell)}: {spans}; " + (
            "trial seeds repeat across these runs, so the pooled trials are re-runs with the same seeds, not "
            "fresh ones" if repeat else "the runs' trial seeds differ"))
    return lines
