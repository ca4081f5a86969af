"""The SIMULATED world's arithmetic: what a prompt delivered, and the success probability that follows.

Shared by the simulated agent (harness/scripted/simulated.py), which applies it to the prompt it receives,
and by everything that needs the *expected* result (tests, analysis.power): both call the same functions,
so the planted effect is known exactly. Pure Python; no tau2, no runner. Only the token counter imports
LiteLLM, lazily. It sits with the scripted models it drives, and imports no harness code, so analysis imports it
as a plain definition (tests/test_import_graph.py's SHARED_DEFINITIONS) without loading the harness.

    p = base + lift x (relevant guidelines delivered) - harm x (harmful guidelines delivered)
        + instruction x (the memory instruction read) - rot x max(0, memory tokens - threshold) / 1000,
        clipped to [0, 1]

* A guideline is *delivered* when a memory bullet line of a system or user message carries its exact text
  (memory may sit after the policy, in the first user message or at the end of the conversation; tool results
  and the agent's own turns are not read): `- [id] text` (strategies.base.render_guidelines) or
  `[id] helpful=X harmful=Y :: text` (ACE). A bullet cut short by a budget or truncation is not delivered (but
  its tokens still count).
* *Relevant* guidelines per task are planted in the artifact's `_meta.simulated.helps` ({guideline id: task ids}),
  written by harness/memory/simulated.py; relevance is keyed by text, so ACE's renamed ids still count.
* *Harmful* guidelines per task are planted in `_meta.simulated.harms` ({guideline id: task ids}; absent = none),
  written by the corruption operator (harness/memory/corrupt.py) for the lessons it corrupts. Without harms the
  world is exactly the one above (the harm term is 0 and nothing the agent writes changes).
* *Memory tokens* = the gpt-4o token count of every memory bullet line in the system and user messages.
* *Content* is what a bullet's text is: a bullet whose text is no guideline of the artifact (the `placebo`
  control arm's neutral lines, strategies/placebo/) delivers nothing and costs its tokens, so placebo pays the
  length term of the block it matches and none of the lift (docs/controls.md).
* *The memory instruction* is read when a system or user line ends with the instruction `full`'s frame carries
  (strategies.base.INSTRUCTION; `protocol_only` delivers that frame alone). Its planted effect is
  `Profile.instruction`, 0 in both profiles: being told memory follows, with none to read, neither helps nor
  hurts, so `protocol_only - none` is 0 and `full - none` is what it always was.
* With a memory tool `recall_guidelines` offered (on_demand), the agent calls it on its first step with chance
  `pull` (fixed per task and trial seed), its query the user's first message; the bullet lines of the answer are
  read as delivered (and their tokens counted) like the prompt's, so it gains a relevant guideline only when the
  retriever returned it. The reading is then made at the step after the answer.
* One reading per episode: the simulated agent applies this to the prompt of the episode's FIRST agent step and
  keeps that p and draw for the whole episode (harness/scripted/simulated.py).
* The draw: u = sha256(task id | trial seed | what was read) in [0, 1); the episode succeeds iff u < p. The same
  prompt reading on the same task and trial seed always gives the same outcome; two strategies that deliver
  differently draw independently, as two different prompts to a real model would (no common random numbers,
  which would make paired tests look far stronger than they are on real models).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from strategies.base import INSTRUCTION

PROVIDER = "memdeliv-simulated"
LABEL = "SIMULATED"
TOKENIZER = "gpt-4o"
_BULLET = re.compile(r"^\s*(?:[-*]\s+)?\[([A-Za-z0-9][\w.:\-]*)\]\s+(.*\S)\s*$")
_ACE_BODY = re.compile(r"^helpful=-?\d+\s+harmful=-?\d+\s+::\s+(.*)$")


@dataclass(frozen=True)
class Profile:
    """The planted model: how much a relevant guideline helps, how much a harmful one misleads and how fast a
    long memory block hurts."""

    name: str
    base: float
    lift: float  # per relevant guideline delivered
    rot: float  # success lost per 1,000 memory tokens beyond the threshold
    threshold: int  # memory tokens the model absorbs for free
    harm: float = 0.0  # per harmful guideline delivered (planted in _meta.simulated.harms)
    instruction: float = 0.0  # when the memory instruction is read (INSTRUCTION_EFFECT in both profiles)
    pull: float = 0.0  # chance it calls PULL_TOOL on its first step when offered (on_demand, docs/memory-tools.md)

    def p(self, relevant: int, memory_tokens: int, harmful: int = 0, instructed: bool = False) -> float:
        raw = (self.base + self.lift * relevant - self.harm * harmful + self.instruction * instructed
               - self.rot * max(0, memory_tokens - self.threshold) / 1000)
        return min(1.0, max(0.0, raw))


# IBM's qualitative finding: memory helps a strong model (full > none) and hurts a small one (full < none),
# with core + retrieval in between. Figures chosen so 40 tasks x 4 trials resolve the differences. A wrong lesson
# misleads more than a right one helps (harm > lift), the small model more than the strong one (it cannot tell
# what does not apply); harm only acts where an artifact plants harms (docs/robustness.md).
# The instruction alone (protocol_only) is planted at 0: the control arm's truth is "no effect", which the
# decomposition must not mistake for one (docs/controls.md).
INSTRUCTION_EFFECT = 0.0
PROFILES = {
    "strong": Profile("strong", base=0.55, lift=0.06, rot=0.01, threshold=2000, harm=0.12,
                      instruction=INSTRUCTION_EFFECT, pull=0.8),
    "small": Profile("small", base=0.50, lift=0.02, rot=0.12, threshold=600, harm=0.15,
                     instruction=INSTRUCTION_EFFECT, pull=0.5),
}
PULL_TOOL = "recall_guidelines"  # the memory tool the simulated agent calls (strategies/on_demand/strategy.py)


class WorldError(ValueError):
    pass


def profile(name: str) -> Profile:
    if name not in PROFILES:
        raise WorldError(f"unknown simulated profile {name!r}; valid: {', '.join(PROFILES)}")
    return PROFILES[name]


@dataclass(frozen=True)
class World:
    """A simulated-world memory artifact: guideline texts and the tasks each one helps."""

    path: str
    texts: dict[str, str]  # guideline id -> text
    helps: dict[str, frozenset[str]]  # guideline id -> task ids it helps
    harms: dict[str, frozenset[str]] = field(default_factory=dict)  # guideline id -> task ids it misleads

    @property
    def by_text(self) -> dict[str, str]:
        return {t: g for g, t in self.texts.items()}

    def relevant_ids(self, task_id: str, delivered_ids: Iterable[str]) -> list[str]:
        return sorted(g for g in set(delivered_ids) if str(task_id) in self.helps.get(g, ()))

    def harmful_ids(self, task_id: str, delivered_ids: Iterable[str]) -> list[str]:
        return sorted(g for g in set(delivered_ids) if str(task_id) in self.harms.get(g, ()))


_worlds: dict[tuple[str, float], World] = {}
_lock = threading.Lock()


@lru_cache(maxsize=64)
def _resolved(path: str, cwd: str) -> str:
    """`path` resolved once per working directory: a relative path names another file after a chdir."""
    return str(Path(cwd, path).resolve())


def load_world(path: str | Path) -> World:
    """Read (and memoise per file version) a simulated-world artifact; WorldError when it is not one."""
    path = Path(path)
    if not path.is_file():
        raise WorldError(f"simulated world: no memory artifact at {path} (run `make simulated-memory` first)")
    key = (_resolved(str(path), os.getcwd()), path.stat().st_mtime)  # read at every model call: resolved once
    with _lock:
        if key in _worlds:
            return _worlds[key]
    texts: dict[str, str] = {}
    meta: dict[str, Any] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        if "_meta" in row:
            meta.update(row["_meta"])
        else:
            texts[str(row["id"])] = str(row["text"])
    if len(set(texts.values())) < len(texts):  # the agent knows a guideline by its text
        raise WorldError(f"{path}: two guidelines share a text; the simulated agent could not tell them apart")
    sim = meta.get("simulated")
    if not isinstance(sim, dict) or "helps" not in sim:
        raise WorldError(f"{path}: not a simulated-world artifact (no _meta.simulated.helps); "
                         "write one with `make simulated-memory`")
    helps = {str(g): frozenset(str(t) for t in tasks) for g, tasks in sim["helps"].items()}
    harms = {str(g): frozenset(str(t) for t in tasks) for g, tasks in (sim.get("harms") or {}).items()}
    for name, planted in (("helps", helps), ("harms", harms)):
        unknown = set(planted) - set(texts)
        if unknown:
            raise WorldError(f"{path}: _meta.simulated.{name} names unknown guideline ids {sorted(unknown)[:5]}")
    world = World(str(path), texts, helps, harms)
    with _lock:
        _worlds[key] = world
    return world


@lru_cache(maxsize=100_000)
def count_tokens(text: str) -> int:
    import litellm

    return int(litellm.token_counter(model=TOKENIZER, text=text)) if text else 0


def _instruction(line: str) -> bool:
    return line.rstrip().endswith(INSTRUCTION)


def _memory_line(line: str) -> bool:
    return bool(_BULLET.match(line)) or _instruction(line)


def memory_lines(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The memory bullet lines (and the memory instruction's line) of every system and user message, in order:
    memory may sit after the policy, in the first user message or after the conversation (benchmark.placement),
    and the agent reads all of them."""
    lines = []
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):  # content parts (e.g. with cache_control marks)
            content = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
        if m.get("role") not in ("system", "user") or not isinstance(content, str):
            continue
        lines += [line for line in content.splitlines() if _memory_line(line)]
    return lines


@dataclass(frozen=True)
class Reading:
    """What the simulated agent read from one prompt."""

    delivered: tuple[str, ...]  # world guideline ids whose exact text was in a bullet line
    memory_tokens: int
    instructed: bool = False  # the memory instruction's line was read

    def p(self, prof: Profile, world: World, task_id: str) -> float:
        return prof.p(len(world.relevant_ids(task_id, self.delivered)), self.memory_tokens,
                      len(world.harmful_ids(task_id, self.delivered)), self.instructed)

    @property
    def key(self) -> str:
        """What the draw depends on besides task and seed: the guidelines read and the block's size. The
        instruction is named only when no bullet was read (protocol_only): its prompt differs from none's, so it
        draws apart from none's, while every block with bullets keeps the draws it always had."""
        alone = self.instructed and not self.delivered and not self.memory_tokens
        return f"{','.join(sorted(self.delivered))}|{self.memory_tokens}" + ("|instructed" if alone else "")


def read_lines(lines: Iterable[str], world: World) -> Reading:
    by_text = world.by_text
    delivered: list[str] = []
    tokens, instructed = 0, False
    for line in lines:
        instructed = instructed or _instruction(line)
        m = _BULLET.match(line)
        if not m:
            continue
        tokens += count_tokens(line)
        body = m.group(2)
        ace = _ACE_BODY.match(body)
        gid = by_text.get(ace.group(1) if ace else body)
        if gid is not None and gid not in delivered:
            delivered.append(gid)
    return Reading(tuple(delivered), tokens, instructed)


def pulled_lines(messages: Sequence[dict[str, Any]]) -> list[str]:
    """The memory bullet lines of every answer to a PULL_TOOL call in the conversation (what on_demand gave)."""
    ids = {c.get("id") for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []
           if (c.get("function") or {}).get("name") == PULL_TOOL}
    return [line for m in messages if m.get("role") == "tool" and m.get("tool_call_id") in ids
            for line in str(m.get("content") or "").splitlines() if _BULLET.match(line)]


def read_prompt(messages: Sequence[dict[str, Any]], world: World) -> Reading:
    """What the agent read: the prompt's memory lines and the answers of its memory-tool calls."""
    return read_lines(memory_lines(messages) + pulled_lines(messages), world)


def pulls(prof: Profile, task_id: str, seed: object) -> bool:
    """Whether the agent recalls on its first step when the tool is offered: fixed per (task, trial seed)."""
    return draw(task_id, seed, "pull") < prof.pull


def draw(task_id: str, seed: object, reading: str = "") -> float:
    """u in [0, 1), fixed per (task, trial seed, Reading.key)."""
    digest = hashlib.sha256(f"simulated|{task_id}|{seed}|{reading}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def succeeds(p: float, task_id: str, seed: object, reading: str = "") -> bool:
    return draw(task_id, seed, reading) < p


# --- expectations ------------------------------------------------------------------------------------------

def rendered_lines(text: str) -> list[str]:
    """The lines the simulated agent reads of a rendered memory block (whatever the strategy's format)."""
    return [line for line in text.splitlines() if _memory_line(line)]


def block_tokens(text: str) -> int:
    """A memory block's tokens as the simulated agent counts them (Reading.memory_tokens of the whole block)."""
    return sum(count_tokens(line) for line in text.splitlines() if _BULLET.match(line))


def expected_p(prof: Profile, world: World, task_id: str, block: str) -> float:
    """The probability the simulated agent succeeds on `task_id` when its prompt carries memory `block`."""
    return read_lines(rendered_lines(block), world).p(prof, world, task_id)


def expected_rates(prof: Profile, world: World, blocks: dict[str, str], k: int = 1) -> float:
    """Expected Pass^k over tasks: mean of p^k (trials are independent draws), `blocks` = task id -> memory
    block that task receives (empty string for `none`)."""
    if not blocks:
        return float("nan")
    return sum(expected_p(prof, world, t, b) ** k for t, b in blocks.items()) / len(blocks)


def simulate_records(prof: Profile, world: World, blocks: dict[str, dict[str, str]], trial_seeds: Sequence[int],
                     model: str | None = None, benchmark: str = "tau2_simulated", split: str = "test",
                     run: str = "simulated") -> list[dict[str, Any]]:
    """Records as a real sweep of the simulated agent would write them (success fields only, no tokens):
    `blocks` = strategy -> task id -> memory block. The same p and the same draw as the agent's, without
    playing the episodes, for checks that need many seeds (tests, analysis.power --profile)."""
    model = model or f"{PROVIDER}/{prof.name}"
    rows = []
    for strategy, per_task in blocks.items():
        for task_id, block in per_task.items():
            reading = read_lines(rendered_lines(block), world)
            p = reading.p(prof, world, task_id)
            for trial, seed in enumerate(trial_seeds):
                ok = succeeds(p, task_id, seed, reading.key)
                rows.append({"run": run, "job": f"{benchmark}/{split}/{model}/{strategy}", "benchmark": benchmark,
                             "split": split, "model": model, "strategy": strategy, "task_id": str(task_id),
                             "trial": trial, "seed": seed, "success": ok, "reward": float(ok), "error": None,
                             "memory_tokens": reading.memory_tokens, "p": p})
    return rows
