"""Offline ACE adaptation: epochs over the train split, the best playbook on a held-out slice kept.

    python -m harness.memory.ace_adapt model=oracle benchmark=tau2_retail --epochs 1 --val 5 \
        --reflector-model openai/gpt-4.1 --out playbooks/retail.jsonl          (or: make ace ...)

The train split's tasks are cut in two: the last `--val` tasks are held out, the rest (or the first
`--train` of them) are trained on. Each epoch is one ordinary run of the `ace_online` strategy over the
training tasks (sequential: the playbook changes after every episode), starting from the previous epoch's
playbook. As in the reference, ground truth from the train split is used by default (the Reflector also
sees reward, evaluator report and the gold solution; `--no-ground-truth` turns that off) and a failed
episode goes through up to `--reflection-rounds` (3) rounds of reflect -> re-run with the reflection in
context, stopping at the first success; the re-runs are recorded in the epoch's retries.jsonl. Then
the frozen `ace` strategy runs that playbook on the held-out tasks. The playbook with the best
held-out success rate (mean reward breaks ties; the earlier epoch wins a full tie) is written to `--out`
with the concatenated update history beside it, labelled `ground_truth` and `rounds` in its _meta. Every
episode lands in ordinary run directories under runs/<run>/, so the usual tables and plots work on the
adaptation itself. An epoch whose every update was lost (Reflector or Curator failing after retries) is an
error (exit 1, the first failure printed): an empty playbook is not a result.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from hydra import compose, initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from memory_kit.memory_file import MemoryFileError
from foundation.terminal import wrap
from harness.config import CONFIG_DIR
from harness.checks import ConfigError, prepare
from harness.config import to_settings
from harness.run import register_plugins
from harness.settings import JobSettings
from harness.errors import INFRA
from harness.row import RESULTS, latest_per_episode, read_rows
from harness.scripted import ace_roles
from harness.serving.faults import ProviderUnusable
from harness.store import RunStore, now_iso
from strategies.ace.playbook import load_playbook
from memory_kit.memory_file import learned_from
from strategies.ace.adapt import DEFAULT_REFLECTION_ROUNDS
from strategies.ace.strategy import HISTORY, LATEST


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m harness.memory.ace_adapt", description=__doc__.split("\n\n")[0])
    p.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. model=oracle benchmark=tau2_retail")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--train", type=int, default=None,
                   help="how many train-split tasks to adapt on (default: all of the train split minus --val)")
    p.add_argument("--val", type=int, default=5, help="train-split tasks held out to choose the best epoch (0: none)")
    p.add_argument("--run", default=None, help="run name; episodes go to <runs-dir>/<run>/epochN_{train,val}")
    p.add_argument("--runs-dir", default="runs")
    p.add_argument("--init", default=None, help="starting playbook (ACE playbook or guideline file); default empty")
    p.add_argument("--out", default=None, help="chosen playbook path (default <runs-dir>/<run>/playbook.jsonl)")
    p.add_argument("--reflector-model", default=None,
                   help="LiteLLM model for the Reflector (default: the run's model); SCRIPTED: a keyless template "
                        "stand-in for trying the machinery, not a learner")
    p.add_argument("--curator-model", default=None,
                   help="LiteLLM model for the Curator "
                        "(default: the run's model, or SCRIPTED with a SCRIPTED Reflector)")
    p.add_argument("--playbook-token-budget", type=int, default=None,
                   help="the playbook's size cap in tokens, stated to the Curator (default 80,000, as the reference)")
    p.add_argument("--token-budget", type=int, default=None, help=argparse.SUPPRESS)  # the old name: refused
    p.add_argument("--mode", choices=("paper", "extended"), default=None,
                   help="paper (default): as the ACE reference code; extended: UPDATE/REMOVE, dedup, enforced budget")
    p.add_argument("--dedup-threshold", default=None,
                   help="turn embedding de-duplication on at this cosine threshold ('none': off, the default)")
    p.add_argument("--reflection-rounds", type=int, default=None,
                   help="reflect -> re-run rounds for a failed episode (default 3, the reference's max_num_rounds)")
    p.add_argument("--ground-truth", action=argparse.BooleanOptionalAction, default=True,
                   help="the Reflector sees reward, evaluator report and the train task's gold solution, and failed "
                        "episodes are re-run (default, as the reference); --no-ground-truth: label-free ACE")
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="any other ace_online option (see configs/strategy/ace_online.yaml)")
    args = p.parse_args(argv)
    if args.token_budget is not None:
        p.error("--token-budget is now --playbook-token-budget")
    if args.epochs < 1 or (args.train is not None and args.train < 1) or args.val < 0:
        p.error("--epochs and --train must be >= 1, --val >= 0")
    if args.reflection_rounds is not None and args.reflection_rounds < 0:
        p.error("--reflection-rounds must be >= 0")
    return args


def role_model(name: str | None) -> str | None:
    """SCRIPTED -> the keyless scripted roles (registered in this process; the roles run here)."""
    if name != ace_roles.CHOICE:
        return name
    ace_roles.install()
    return ace_roles.MODEL


def online_options(args: argparse.Namespace) -> list[str]:
    dedup = args.dedup_threshold
    reflector = role_model(args.reflector_model)
    curator = role_model(args.curator_model or (ace_roles.CHOICE if reflector == ace_roles.MODEL else None))
    off = dedup is not None and dedup.lower() in ("none", "null", "off")
    opts = {"reflector_model": reflector, "curator_model": curator,
            "playbook_token_budget": args.playbook_token_budget, "mode": args.mode,
            "reflection_rounds": args.reflection_rounds,
            "dedup": None if dedup is None else ("false" if off else "true"),
            "dedup_threshold": None if dedup is None or off else dedup,
            "allow_ground_truth": "true" if args.ground_truth else "false"}
    out = [f"strategy.options.{k}={v}" for k, v in opts.items() if v is not None]
    for item in args.option:
        if "=" not in item:
            raise ConfigError(f"--option {item!r}: expected KEY=VALUE")
        out.append(f"strategy.options.{item}")
    return out


def compose_job(overrides: list[str]) -> JobSettings:
    """Compose and check one job exactly as `harness.run` does (bad config -> ConfigError)."""
    register_plugins()
    GlobalHydra.instance().clear()
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        try:
            cfg = to_settings(compose(config_name="config", overrides=overrides))
        except Exception as exc:  # Hydra / OmegaConf composition and type errors
            from harness.config_errors import describe

            raise ConfigError(describe(exc)) from None
        prepare(cfg)
    GlobalHydra.instance().clear()
    return cfg


def _ids(task_ids: list[str]) -> str:
    return "[" + ",".join(f"'{t}'" for t in task_ids) + "]"


def split_tasks(base: list[str], n_train: int | None, n_val: int) -> tuple[list[str], list[str], str]:
    """-> (training task ids, held-out ids, benchmark name). n_train None: every train task not held out."""
    from harness import benchmarks

    cfg = compose_job([*base, "benchmark.split=train", "benchmark.limit=null", "benchmark.task_ids=null"])
    ids = [str(t.id) for t in benchmarks.create(cfg.benchmark).tasks()]
    if len(ids) <= n_val:
        raise ConfigError(f"the train split has {len(ids)} tasks; cannot hold out {n_val}")
    held_out = ids[len(ids) - n_val:] if n_val else []
    rest = len(ids) - n_val
    return ids[: rest if n_train is None else min(n_train, rest)], held_out, str(cfg.benchmark.name)


def score(run_dir: Path, job: str) -> dict[str, Any]:
    """The job's episodes as they count (the latest attempt of each), read through the one reader of rows."""
    latest, _ = latest_per_episode(row for _, row in read_rows(run_dir / RESULTS) if row.get("job") == job)
    rows = list(latest.values())
    counted = [r for r in rows if r.get("error") != INFRA]  # infra errors are excluded, as tau2 does
    lost = sum(bool(r.get("update_lost")) for r in rows)
    if not counted:
        return {"tasks": len(rows), "infra_errors": len(rows), "success_rate": None, "mean_reward": None,
                "updates_lost": lost}
    return {"tasks": len(rows), "infra_errors": len(rows) - len(counted), "updates_lost": lost,
            "success_rate": sum(bool(r["success"]) for r in counted) / len(counted),
            "mean_reward": sum(float(r["reward"]) for r in counted) / len(counted)}


def retry_summary(run_dir: Path) -> dict[str, Any]:
    """Re-runs of failed training episodes (reflection rounds): how many, how many succeeded, their tokens."""
    rows = RunStore(run_dir).read_retries()
    return {"episodes": len(rows), "succeeded": sum(bool(r.get("success")) for r in rows),
            "tasks_recovered": len({r.task_id for r in rows if r.get("success")}),
            "prompt_tokens": sum(int(r.get("prompt_tokens") or 0) for r in rows),
            "completion_tokens": sum(int(r.get("completion_tokens") or 0) for r in rows)}


def _artifacts(run_dir: Path) -> Path:
    found = sorted(run_dir.glob(f"memory/*/{LATEST}"))
    if len(found) != 1:
        raise RuntimeError(f"expected one learned playbook under {run_dir}/memory, found {len(found)}")
    return found[0].parent


def refuse_scripted_roles(base: list[str], args: argparse.Namespace) -> None:
    """A scripted agent (the oracle, the simulated world) only replays gold actions: as the Reflector or Curator
    every call would fail and the run would end with an empty playbook. Say so before anything is written."""
    from harness.scripted import oracle, simulated_world

    scripted = (oracle.PROVIDER + "/", simulated_world.PROVIDER + "/")
    run_model = str(compose_job([*base, "benchmark.split=train"]).model.name)
    for role, chosen in (("Reflector", args.reflector_model), ("Curator", args.curator_model or args.reflector_model)):
        model = run_model if chosen is None else chosen
        if model.startswith(scripted):
            raise ConfigError(f"{model} cannot play ACE's {role} (a scripted agent replays gold actions and writes no "
                              f"lessons): REFLECTOR=SCRIPTED for keyless template roles, "
                              f"or REFLECTOR=<a LiteLLM model>")


def adapt(args: argparse.Namespace) -> dict[str, Any]:
    from harness.runner import job_key

    run = args.run or now_iso().replace(":", "").replace("-", "")[:15]
    root = Path(args.runs_dir) / run
    base = [o for o in args.overrides if not o.split("=", 1)[0].lstrip("+").startswith(("strategy", "memory"))]
    for o in base:  # ground truth comes from the train split only, as in the reference
        key, _, value = o.partition("=")
        if key.lstrip("+") == "benchmark.split" and value != "train":
            raise ConfigError(f"{o}: ACE adaptation learns from the train split only (ground truth is never "
                              "taken from another split)")
    train_ids, val_ids, _ = split_tasks(base, args.train, args.val)
    refuse_scripted_roles(base, args)
    common = [*base, "benchmark.split=train", "benchmark.limit=null", f"runs_dir={root}"]
    options = online_options(args)
    current = args.init
    epochs: list[dict[str, Any]] = []
    for epoch in range(1, args.epochs + 1):
        cfg = compose_job([*common, "strategy=ace_online", *options, f"benchmark.task_ids={_ids(train_ids)}",
                           f"run_name=epoch{epoch}_train", "concurrency=1", f"memory={current or 'null'}",
                           "allow_in_sample=true"])  # epoch 2+ trains again on the tasks epoch 1 learned from
        summary = run_to_end(cfg)
        learned = _artifacts(Path(summary["run_dir"]))
        current = str(learned / LATEST)
        row: dict[str, Any] = {"epoch": epoch, "playbook": current, "history": str(learned / HISTORY),
                               "train": score(Path(summary["run_dir"]), job_key(cfg)),
                               "retries": retry_summary(Path(summary["run_dir"]))}
        check_learning(learned / HISTORY, epoch)
        if val_ids:
            vcfg = compose_job([*common, "strategy=ace", f"benchmark.task_ids={_ids(val_ids)}",
                                f"run_name=epoch{epoch}_val", f"memory={current}"])
            vsummary = run_to_end(vcfg)
            row["val"] = score(Path(vsummary["run_dir"]), job_key(vcfg))
        playbook, _ = load_playbook(current)
        row["bullets"] = len(playbook)
        epochs.append(row)
        print(wrap(f"ace_adapt: epoch {epoch}: {row['bullets']} bullets; updates lost {row['train']['updates_lost']}; "
                   f"train {row['train']}; val {row.get('val', '-')}"), file=sys.stderr)
    best = max(epochs, key=lambda r: _rank(r) + (-r["epoch"],))
    out = Path(args.out) if args.out else root / "playbook.jsonl"
    playbook, meta = load_playbook(best["playbook"])
    report = {"model_overrides": base, "train_task_ids": train_ids, "val_task_ids": val_ids,
              "chosen_epoch": best["epoch"], "epochs": epochs, "run_dir": str(root), "finished_at": now_iso()}
    scripted = ace_roles.MODEL in (meta.get("reflector_model"), meta.get("curator_model"))
    note = ("SCRIPTED roles: template bullets, NOT learned lessons (harness/scripted/ace_roles.py)" if scripted
            else "learned by offline ACE adaptation (harness/memory/ace_adapt.py)")
    labels = {"ground_truth": bool(args.ground_truth), "split": "train",
              "rounds": args.reflection_rounds if args.reflection_rounds is not None else DEFAULT_REFLECTION_ROUNDS}
    playbook.save(out, {**{k: v for k, v in meta.items() if k not in ("kind", "next_id")}, "adaptation": report,
                        **labels, "note": note, "learned_from": with_selection(meta.get("learned_from"), val_ids)})
    history = out.with_name(out.stem + ".history.jsonl")
    with history.open("w", encoding="utf-8") as fh:
        for row in epochs:
            for line in Path(row["history"]).read_text(encoding="utf-8").splitlines():
                if line.strip():
                    fh.write(json.dumps({"epoch": row["epoch"], **json.loads(line)}, ensure_ascii=False) + "\n")
    return {**report, "out": str(out), "history": str(history)}


def run_to_end(cfg: JobSettings) -> dict[str, Any]:
    """One epoch's job; the adaptation stops where the job stopped (its summary's `stopped`): Ctrl-C, or a provider
    that cannot serve it, whose reason main() prints (exit 2). An epoch that stopped early never chooses."""
    from harness.runner import run_job

    summary = run_job(cfg)
    stop = summary.get("stopped")
    if stop is not None and stop["reason"] == "interrupted":
        raise KeyboardInterrupt
    if stop is not None:
        raise ProviderUnusable(f"{summary['job']} stopped ({stop['reason']}): {stop['detail']}")
    return summary


class LearningFailed(RuntimeError):
    """Every update of an epoch was lost: the playbook learned nothing, which must not pass as a result."""


def check_learning(history: Path, epoch: int) -> None:
    rows = [json.loads(line) for line in history.read_text(encoding="utf-8").splitlines() if line.strip()]
    updates = [r for r in rows if r.get("event") == "update"]
    if updates and all(r.get("lost") for r in updates):
        first = next((e for r in updates for e in r.get("errors") or []), "no error recorded")
        raise LearningFailed(f"epoch {epoch}: all {len(updates)} update(s) lost (Reflector or Curator failed "
                             f"after retries); first failure: {first}")


def with_selection(source: dict[str, Any] | None, val_ids: list[str]) -> dict[str, Any] | None:
    """The chosen playbook's learned_from plus the held-out tasks: they chose the epoch, so they count too."""
    if not source:
        return source
    keys = ("benchmark", "split", "model", "ground_truth", "task_set")
    kept: dict[str, Any] = {k: source.get(k) for k in keys}
    return {**source, **learned_from(**kept,
                                     task_ids=[*source.get("task_ids", ()), *val_ids]), "selected_on": val_ids}


def _rank(row: dict[str, Any]) -> tuple[float, float]:
    val = row.get("val")
    if not val or val["success_rate"] is None:
        return (float("-inf"), float("-inf")) if val else (0.0, float(row["epoch"]))  # no held-out set: last epoch
    return (val["success_rate"], val["mean_reward"])


def main(argv: list[str] | None = None) -> int:
    args = parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        result = adapt(args)
    except (ConfigError, MemoryFileError, ValueError, ProviderUnusable) as exc:  # + bad key / model
        print(f"ace_adapt: error: {exc}", file=sys.stderr)
        return 2
    except LearningFailed as exc:
        print(f"ace_adapt: error: {exc}", file=sys.stderr)
        return 1
    lost = sum(row["train"]["updates_lost"] for row in result["epochs"])
    gt = "ground truth from train" if args.ground_truth else "no ground truth"
    print(wrap(f"ace_adapt: chose epoch {result['chosen_epoch']} -> {result['out']} ({gt}; updates lost {lost}; "
               f"history {result['history']})"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
