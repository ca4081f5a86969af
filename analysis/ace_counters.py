"""`python -m analysis.ace_counters WORLD [--epochs N] [--budget SHARE]`: do ACE's counters find bad memory?

On the SIMULATED world: an ACE playbook made from a corrupted artifact adapts over the tasks the world plants
relevance for (build the world with `--eval-split train`, then corrupt it: labels on train only), with ground
truth, as `make ace` does, and we count how many corrupted lessons are still delivered afterwards.

Each episode delivers the whole playbook (ACE's `ace`), the world draws its outcome from what was delivered
(harness/scripted/simulated_world.py: same p, same draw), and the agent cites the bullets it acted on: those the world
plants as relevant or harmful for the task. The Reflector tags every cited bullet helpful on a success and
harmful on a failure (the scripted Reflector's rule, harness/scripted/ace_roles.py, with the verdict shown);
the playbook's counters move through ACE's own `Playbook.count`. Nothing leaves the playbook in paper mode
(ADD-only Curator, no enforced budget): every corrupted lesson is still delivered, its counters beside it.
`--budget B` reports what ACE's own pruning (strategies/ace/pruning.py, `enforce_budget`: the highest
harmful - helpful first, as `mode: extended` applies once the Curator's additions push the playbook over its
budget) would keep at B of the playbook's size, decided by the counters learned so far: the share of corrupted
lessons still delivered, beside the share of clean ones (equal shares = the counters told them apart no better
than chance). The Curator adds nothing here (its additions would not be corrupted lessons).
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

from analysis import fmt
from memory_kit.memory_file import load_memory
from harness.scripted import simulated_world as world
from strategies.ace.playbook import Playbook
from strategies.ace.pruning import enforce_budget

PROFILE = "strong"


@dataclass(frozen=True)
class Snapshot:
    epoch: int
    corrupted_net_harmful: float  # share of the corrupted lessons whose harmful > helpful
    clean_net_harmful: float
    success: float  # share of this epoch's episodes that succeeded (nan at epoch 0)
    delivered: dict[float, tuple[float, float]]  # budget share -> (corrupted, clean) share still delivered


def _net_harmful(playbook: Playbook, texts: set[str]) -> float:
    bullets = [b for b in playbook.bullets if b.content in texts]
    return sum(b.harmful > b.helpful for b in bullets) / len(bullets) if bullets else float("nan")


def _delivered(playbook: Playbook, budget: float, corrupted: set[str], clean: set[str]) -> tuple[float, float]:
    """(corrupted, clean) share still delivered once ACE's pruning keeps the playbook to `budget` of its size."""
    limit = int(budget * world.count_tokens(playbook.render()))
    kept = {b.content for b in enforce_budget(playbook, limit, world.count_tokens)[0].bullets}
    return len(corrupted & kept) / max(1, len(corrupted)), len(clean & kept) / max(1, len(clean))


def adapt(path: str, epochs: int = 3, budgets: tuple[float, ...] = (), profile: str = PROFILE,
          seed: int = 0) -> list[Snapshot]:
    """Snapshots after each epoch (epoch 0 = before adaptation) of ACE adapting over the world's tasks, with the
    share of corrupted / clean lessons a budget's pruning would keep, decided by the counters learned so far."""
    w, prof = world.load_world(path), world.profile(profile)
    guidelines, meta = load_memory(path)
    ids = set((meta.get("corrupted") or {}).get("ids") or ())
    corrupted = {g.text for g in guidelines if g.id in ids}
    clean = {g.text for g in guidelines if g.id not in ids}
    playbook = Playbook.from_guidelines(guidelines)
    tasks = [str(t) for t in meta["simulated"]["tasks"]]

    def snapshot(epoch: int, success: float) -> Snapshot:
        return Snapshot(epoch, _net_harmful(playbook, corrupted), _net_harmful(playbook, clean), success,
                        {b: _delivered(playbook, b, corrupted, clean) for b in budgets})

    snapshots = [snapshot(0, float("nan"))]
    for epoch in range(1, epochs + 1):
        wins = 0
        for task in tasks:
            reading = world.read_lines(world.rendered_lines(playbook.render()), w)
            ok = world.succeeds(reading.p(prof, w, task), task, f"{seed}|{epoch}", reading.key)
            wins += ok
            acted = set(w.relevant_ids(task, reading.delivered)) | set(w.harmful_ids(task, reading.delivered))
            texts = {w.texts[g] for g in acted}
            playbook = playbook.count({b.id: "helpful" if ok else "harmful" for b in playbook.bullets
                                       if b.content in texts})
        snapshots.append(snapshot(epoch, wins / len(tasks)))
    return snapshots


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analysis.ace_counters", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("world", help="a corrupted simulated-world artifact whose tasks are the train split")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--budget", type=float, action="append", default=[],
                        help="also report pruning to this share of the playbook (repeatable), e.g. 0.5")
    parser.add_argument("--profile", default=PROFILE)
    args = parser.parse_args(argv)
    try:
        snaps = adapt(args.world, args.epochs, tuple(args.budget), args.profile)
    except (world.WorldError, ValueError, KeyError) as exc:
        fmt.refuse("ace_counters", exc)
        return 2
    print(fmt.wrap(f"{world.LABEL} world ({args.profile}): ACE adapting with ground truth over {args.world}; "
                   "paper mode delivers every lesson whatever its counters; `budget B` = corrupted / clean lessons "
                   "still delivered once pruning keeps B of the playbook"))
    head = "epoch  success  corrupted net-harmful  clean net-harmful" + "".join(
        f"  budget {b:.0%}: corrupted / clean" for b in args.budget)
    print(head)
    for s in snaps:
        print(f"{s.epoch:>5}  {'-' if s.success != s.success else f'{s.success:.0%}':>7}  "
              f"{s.corrupted_net_harmful:>21.0%}  {s.clean_net_harmful:>17.0%}"
              + "".join(f"  {f'{c:.0%} / {k:.0%}':>27}" for c, k in s.delivered.values()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
