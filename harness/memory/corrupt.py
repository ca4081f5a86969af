"""`python -m harness.memory.corrupt MEMORY --kind K --rate R --out OUT` (`make corrupt`): bad memory on purpose.

Makes a corrupted copy of any memory artifact (guidelines, or an ACE playbook) for robustness experiments
(docs/robustness.md). A share `rate` of its lessons is affected, chosen by `seed` (the same seed picks nested
sets: the lessons corrupted at 10 % are among those at 30 %):

* `contradict`: the lesson rewritten to advise the opposite or a wrong tool / argument (`--rewriter rule`, the
  default, needs no model; `--rewriter <LiteLLM model>` for real runs, cached and priced);
* `stale`: a lesson from another artifact (`--source`: another domain, or another task-set version);
* `irrelevant`: a lesson about unrelated tasks (a fixed pool);
* `duplicate`: a near-copy of an existing lesson (tests de-duplication and budgets).

`--mode replace` (default) puts the bad lesson in the chosen lesson's place (same id, same support, so it looks
as trusted as the one it replaced); `--mode add` keeps every lesson and adds the bad ones. `--pick low_support`
/ `high_support` corrupts the least / most supported lessons first. The artifact keeps its `_meta` (its
`learned_from` too) and adds `corrupted: {kind, rate, seed, mode, pick, ids, ...}`. On the SIMULATED world's
artifact it also plants what the corruption does (`_meta.simulated`): a corrupted lesson helps no task, and a
contradicting one misleads (`harms`) the tasks the original helped. `--rate 0,0.1,0.3,0.5 --out DIR` writes one
artifact per rate, `DIR/<kind>_<percent>.jsonl`, as `+experiment=robustness` reads them.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from harness.memory.corrupt_text import LLMRewriter, near_copy, rule_contradict, unrelated
from strategies import Guideline
from memory_kit.memory_file import load_memory, save_memory
from strategies.ace.playbook import KIND, Playbook, artifact_kind, load_playbook

KINDS = ("contradict", "stale", "irrelevant", "duplicate")
MODES = ("replace", "add")
PICKS = ("random", "low_support", "high_support")


class CorruptionError(ValueError):
    pass


@dataclass(frozen=True)
class Spec:
    kind: str
    rate: float  # share of the lessons affected, 0..1
    seed: int = 0
    mode: str = "replace"
    pick: str = "random"

    def __post_init__(self) -> None:
        for name, value, valid in (("kind", self.kind, KINDS), ("mode", self.mode, MODES), ("pick", self.pick, PICKS)):
            if value not in valid:
                raise CorruptionError(f"{name} {value!r} is not one of {', '.join(valid)}")
        if not 0.0 <= self.rate <= 1.0:
            raise CorruptionError(f"rate {self.rate} is not a share between 0 and 1")


def chosen(ids: list[str], supports: list[int], spec: Spec) -> list[str]:
    """The ids to corrupt: round(rate x lessons) of them, a seeded order (by support first with low/high_support)."""
    order = list(range(len(ids)))
    random.Random(f"corrupt|{spec.seed}").shuffle(order)  # one order per seed: rates pick nested sets
    if spec.pick != "random":
        order.sort(key=lambda i: supports[i] * (1 if spec.pick == "low_support" else -1))  # stable: ties stay seeded
    return [ids[i] for i in order[: round(spec.rate * len(ids))]]


def bad_texts(spec: Spec, targets: list[str], texts: dict[str, str], rewrite: Callable[[str], str],
              stale: list[Any]) -> list[tuple[str, Any]]:
    """(text, the stale lesson it came from or None) for each target id, every text new to the artifact."""
    taken = set(texts.values())
    out: list[tuple[str, Any]] = []
    if spec.kind == "stale":
        pool = [g for g in stale if g.text not in taken]
        random.Random(f"stale|{spec.seed}").shuffle(pool)
        if len(pool) < len(targets):
            raise CorruptionError(f"--source has {len(pool)} lessons not already in the artifact; "
                                  f"{len(targets)} are needed")
        return [(g.text, g) for g in pool[: len(targets)]]
    others = sorted(set(texts) - set(targets)) or sorted(texts)
    pick = random.Random(f"duplicate|{spec.seed}")
    fresh = iter(unrelated(len(targets) + len(taken), spec.seed))
    for n, gid in enumerate(targets):
        if spec.kind == "contradict":
            text = rewrite(texts[gid])
        elif spec.kind == "irrelevant":
            text = next(t for t in fresh if t not in taken)
        else:  # duplicate: a near-copy of this lesson (add), or of another one in its place (replace)
            text = near_copy(texts[gid] if spec.mode == "add" else texts[pick.choice(others)], n)
        while text in taken:  # a rewrite that collides with a lesson: still one line, still distinct
            text = f"{text} ({len(taken)})"
        taken.add(text)
        out.append((text, None))
    return out


def _guidelines(guidelines: list[Guideline], spec: Spec, targets: list[str], new: list[tuple[str, Any]]
                ) -> tuple[list[Guideline], dict[str, str]]:
    """The corrupted guideline list and {corrupted id: the id it came from}."""
    by_id = {g.id: g for g in guidelines}
    made: dict[str, Guideline] = {}
    origin: dict[str, str] = {}
    for gid, (text, old) in zip(targets, new):
        base = by_id[gid]
        if spec.kind == "stale":  # the stale lesson as its own artifact had it
            bad = Guideline(id=gid, text=text, category=old.category, support=old.support,
                            source_task_ids=old.source_task_ids, trigger=old.trigger,
                            source_task_text=old.source_task_text or text)
        elif spec.kind == "irrelevant":
            bad = Guideline(id=gid, text=text, category=base.category, source_task_text=text)
        else:  # contradict keeps what made the lesson look trusted; a near-copy keeps its twin's retrieval key
            bad = replace(base, text=text)
        if spec.mode == "add":
            n, new_id = 1, f"{gid}-{spec.kind[:3]}"
            while new_id in by_id or new_id in made:
                n, new_id = n + 1, f"{gid}-{spec.kind[:3]}{n}"
            bad = replace(bad, id=new_id)
        made[bad.id] = bad
        origin[bad.id] = gid
    if spec.mode == "add":
        return [*guidelines, *made.values()], origin
    return [made.get(g.id, g) for g in guidelines], origin


def _playbook(playbook: Playbook, spec: Spec, targets: list[str], new: list[tuple[str, Any]]
              ) -> tuple[Playbook, dict[str, str]]:
    origin: dict[str, str] = {}
    for bid, (text, _) in zip(targets, new):
        bullet = playbook.get(bid)
        assert bullet is not None  # targets are ids of this playbook
        if spec.mode == "add":  # a new bullet in the same section, counters zero
            playbook, added = playbook.add(bullet.section, text)
            origin[added.id] = bid
        else:  # the same id and counters: it looks as proven as the bullet it replaced
            playbook = playbook.put(replace(bullet, content=text))
            origin[bid] = bid
    return playbook, origin


def plant(simulated: dict[str, Any], spec: Spec, origin: dict[str, str]) -> dict[str, Any]:
    """The simulated world's `_meta.simulated` after the corruption: a corrupted lesson helps nothing; a
    contradicting one misleads (harms) the tasks its original helped."""
    helps = {g: list(t) for g, t in simulated.get("helps", {}).items()}
    harms = {g: list(t) for g, t in (simulated.get("harms") or {}).items()}
    for bad, source in origin.items():
        was = helps.get(source, [])
        helps[bad] = []
        if spec.kind == "contradict" and was:
            harms[bad] = sorted(set(harms.get(bad, [])) | set(was))
    return {**simulated, "helps": helps, "harms": harms}


def _chain(learned: object, other: object) -> object:
    """`learned_from` with the stale source's own appended at the end of its `started_from` chain, so the
    in-sample check (harness/provenance.py) sees the tasks the stale lessons came from too."""
    if not isinstance(other, dict):
        return learned
    if not isinstance(learned, dict):
        return other
    return {**learned, "started_from": _chain(learned.get("started_from"), other)}


def corrupt(path: str | Path, out: str | Path, spec: Spec, source: str | Path | None = None,
            rewrite: Callable[[str], str] = rule_contradict) -> dict[str, Any]:
    """Write the corrupted copy of `path` to `out`; returns its `_meta.corrupted`."""
    if Path(out).resolve() == Path(path).resolve():
        raise CorruptionError(f"--out {out} is the input artifact: write the corrupted copy elsewhere")
    stale: list[Guideline] = []
    stale_meta: dict[str, Any] = {}
    if spec.kind == "stale":
        if not source:
            raise CorruptionError("kind stale needs --source: an artifact from another domain or task-set version")
        stale, stale_meta = load_memory(source)
    is_playbook = artifact_kind(path) == KIND
    if is_playbook:
        playbook, meta = load_playbook(path)
        texts = {b.id: b.content for b in playbook.bullets}
        supports = [b.helpful + 1 for b in playbook.bullets]  # a playbook's support: how often a bullet helped
    else:
        guidelines, meta = load_memory(path)
        texts = {g.id: g.text for g in guidelines}
        supports = [g.support for g in guidelines]
    targets = chosen(list(texts), supports, spec)
    new = bad_texts(spec, targets, texts, rewrite, stale)
    if is_playbook:
        playbook, origin = _playbook(playbook, spec, targets, new)
    else:
        guidelines, origin = _guidelines(guidelines, spec, targets, new)
    facts = {"kind": spec.kind, "rate": spec.rate, "seed": spec.seed, "mode": spec.mode, "pick": spec.pick,
             "ids": sorted(origin), "from": origin, "lessons": len(texts),
             "rewriter": rewrite.facts() if isinstance(rewrite, LLMRewriter) else "rule"}
    if spec.kind == "stale":
        facts["source"] = str(source)
        meta = {**meta, "learned_from": _chain(meta.get("learned_from"), stale_meta.get("learned_from"))}
    if meta.get("corrupted"):
        facts["previous"] = meta["corrupted"]
    meta = {**meta, "corrupted": facts}
    if isinstance(meta.get("simulated"), dict):
        meta["simulated"] = plant(meta["simulated"], spec, origin)
    if is_playbook:
        playbook.save(out, {k: v for k, v in meta.items() if k not in ("kind", "next_id")})
    else:
        save_memory(out, guidelines, meta)
    return facts


def parse_rates(raw: str) -> list[float]:
    """'0.2', '20%' or a comma list of either -> shares in [0, 1]."""
    rates = []
    for item in (r.strip() for r in raw.split(",") if r.strip()):
        try:
            value = float(item[:-1]) / 100 if item.endswith("%") else float(item)
        except ValueError:
            raise CorruptionError(f"rate {item!r} is not a number "
                                  "(a share like 0.2 or a percentage like 20%)") from None
        if not 0.0 <= value <= 1.0:
            raise CorruptionError(f"rate {item!r} is not a share between 0 and 1 (or a percentage like 20%)")
        rates.append(value)
    if not rates:
        raise CorruptionError("--rate needs a value, e.g. 0.2 or 0,0.1,0.3,0.5")
    return rates


def series_path(out_dir: str | Path, kind: str, rate: float) -> Path:
    """Where one rate of a series goes (configs/experiment/robustness.yaml reads the same names)."""
    return Path(out_dir) / f"{kind}_{round(rate * 100)}.jsonl"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m harness.memory.corrupt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("memory", help="the memory artifact to corrupt (guidelines or an ACE playbook)")
    parser.add_argument("--kind", required=True, choices=KINDS)
    parser.add_argument("--rate", required=True, help="share of lessons: 0.2, 20%%, or a list 0,0.1,0.3,0.5")
    parser.add_argument("--out", required=True, help="the corrupted artifact (a folder when --rate is a list)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mode", choices=MODES, default="replace")
    parser.add_argument("--pick", choices=PICKS, default="random")
    parser.add_argument("--source", help="kind stale: the artifact the stale lessons come from")
    parser.add_argument("--rewriter", default="rule", help="kind contradict: rule (no model) or a LiteLLM model")
    parser.add_argument("--cache-dir", default=".cache/corrupt", help="the LLM rewriter's answers")
    args = parser.parse_args(argv)
    try:
        rates = parse_rates(args.rate)
        outs = [series_path(args.out, args.kind, r) for r in rates] if len(rates) > 1 else [Path(args.out)]
        for rate, out in zip(rates, outs):  # a rewriter per artifact, so each records its own calls (cache shared)
            rewrite = rule_contradict if args.rewriter == "rule" else LLMRewriter(args.rewriter, Path(args.cache_dir))
            facts = corrupt(args.memory, out, Spec(args.kind, rate, args.seed, args.mode, args.pick), args.source,
                            rewrite)
            cost = facts["rewriter"].get("cost_usd") if isinstance(facts["rewriter"], dict) else None
            print(f"memdeliv: corrupted {len(facts['ids'])} of {facts['lessons']} lessons ({args.kind}, "
                  f"{args.mode}, seed {args.seed}) -> {out}" + (f"; rewriter cost ${cost:.4f}" if cost else ""))
    except (ValueError, OSError) as exc:  # CorruptionError, MemoryFileError, RewriteError
        print(f"memdeliv: corrupt: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
