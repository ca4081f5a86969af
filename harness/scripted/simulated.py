"""`memdeliv-simulated/<profile>`: a SIMULATED agent (not a language model) with a known success probability.

It plays τ² like the scripted oracle (replays the task's gold actions, then says the facts to communicate),
but each episode succeeds only with the probability harness/scripted/simulated_world.py computes from *the prompt it
receives*: the memory bullets it can read there, how many tokens they take, and whether the memory instruction
is there (the control arms: docs/controls.md). So placement, budgets,
truncation and end_of_conversation all reach it, and the planted effect is known exactly.

The draw is made ONCE per episode, from the prompt of the episode's first agent step, and kept for its later
steps (keyed by the `episode` id harness/serving/models.py puts in the metadata, with how many gold calls it has made:
a history summarised by priority_drop would otherwise make it repeat them). A strategy that re-ranks every step
(`rerank_each_step`) or an assembly that drops memory later in a long episode (`priority_drop`) therefore does
not mix several p values into one outcome: the p in the tag is the one that decided the episode.

A failed draw leaves out the task's last gold *write* whose omission changes tau2's DB check (the adapter finds
it by replaying the gold actions; some gold writes fail and change nothing), so the DB check fails, and sends a
call that changes nothing in its place (the read before it again, or the write aimed at no record), so a failed
episode takes as many steps as a successful one; a task without such a write drops the facts to communicate; a
task with neither answers with an unparseable tool call (a recorded agent error). Every final message carries
`[simulated: p=... u=... outcome=...]`, so each trajectory says what the agent read and drew (with `harmful=N`
when the artifact plants harm and the prompt carried N harmful lessons: docs/robustness.md).

Model config (configs/model/simulated.yaml): `profile` (strong | small) and `world` (the artifact of
`make simulated-memory`) reach it through LiteLLM metadata; the user side is the oracle's scripted user.
"""

from __future__ import annotations

import json
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import litellm
from litellm import CustomLLM, ModelResponse

from harness.scripted import oracle, simulated_world
from harness.scripted.token_count import prompt_tokens
from harness.serving.providers import Provider, register_provider

PROVIDER = simulated_world.PROVIDER
# `harmful=N` appears only when the world planted harm and N > 0, so a world without harms writes what it always did
TAG = re.compile(r"\[simulated: p=([0-9.]+) u=([0-9.]+) relevant=(\d+) memory_tokens=(\d+)(?: harmful=(\d+))? "
                 r"outcome=(\w+)\]")


class SimulatedAgent(CustomLLM):
    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        meta = (kwargs.get("litellm_params") or {}).get("metadata") or {}
        script = meta.get("script")
        if not script or not meta.get("world"):
            raise litellm.exceptions.BadRequestError(
                message="simulated model needs a script and a world in metadata (configs/model/simulated.yaml)",
                model=model, llm_provider=PROVIDER)
        if meta.get("role") == "user":
            message = {"role": "assistant", "content": oracle._user_turn(messages, script)}
        else:
            if not meta.get("episode"):
                raise litellm.exceptions.BadRequestError(
                    message="simulated model needs an episode id in metadata (harness/serving/models.py sets it)",
                    model=model, llm_provider=PROVIDER)
            seed = (kwargs.get("optional_params") or {}).get("seed")
            tools = {(t.get("function") or t).get("name") for t in (kwargs.get("optional_params") or {}).get("tools")
                     or ()}
            message = agent_turn(messages, script, simulated_world.profile(meta.get("profile") or model.split("/")[-1]),
                                 simulated_world.load_world(meta["world"]), seed, episode=str(meta["episode"]),
                                 can_pull=simulated_world.PULL_TOOL in tools)
        text = message.get("content") or json.dumps(message.get("tool_calls"))
        # as litellm.token_counter counts
        prompt = prompt_tokens(simulated_world.TOKENIZER, oracle._countable(messages))
        out = litellm.token_counter(model=simulated_world.TOKENIZER, text=text)
        return ModelResponse(
            model=f"{PROVIDER}/{model}",
            choices=[{"message": message, "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            usage={"prompt_tokens": prompt, "completion_tokens": out, "total_tokens": prompt + out},
        )


@dataclass(frozen=True)
class EpisodeDraw:
    """What decided one episode: read from its first agent step's prompt."""

    p: float
    u: float
    relevant: int
    memory_tokens: int
    harmful: int = 0  # planted harmful guidelines read (docs/robustness.md)

    @property
    def success(self) -> bool:
        return self.u < self.p


@dataclass
class _Episode:
    drawn: EpisodeDraw
    calls_made: int = 0  # gold calls sent so far: a summarised history (priority_drop) no longer shows them all


_episodes: OrderedDict[str, _Episode] = OrderedDict()
_episodes_lock = threading.Lock()
_MAX_EPISODES = 100_000  # bound on remembered episodes; far more than run concurrently in one process


def _episode(messages: list[dict[str, Any]], task_id: str, prof: simulated_world.Profile,
             w: simulated_world.World, seed: object, episode: str | None) -> _Episode:
    """The episode's state: its draw made from `messages` on its first call and kept for every later step.
    episode None: every call is its own episode (direct use in tests)."""
    if episode is not None:
        with _episodes_lock:
            if episode in _episodes:
                return _episodes[episode]
    reading = simulated_world.read_prompt(messages, w)
    state = _Episode(EpisodeDraw(reading.p(prof, w, task_id), simulated_world.draw(task_id, seed, reading.key),
                                 len(w.relevant_ids(task_id, reading.delivered)), reading.memory_tokens,
                                 len(w.harmful_ids(task_id, reading.delivered))))
    if episode is not None:
        with _episodes_lock:
            state = _episodes.setdefault(episode, state)
            while len(_episodes) > _MAX_EPISODES:
                _episodes.popitem(last=False)
    return state


def agent_turn(messages: list[dict[str, Any]], script: dict[str, Any], prof: simulated_world.Profile,
               w: simulated_world.World, seed: object, episode: str | None = None,
               can_pull: bool = False) -> dict[str, Any]:
    task_id = str(script["task_id"])
    pull = _pull(messages, task_id, prof, seed, episode) if can_pull else None
    if pull is not None:
        return pull
    state = _episode(messages, task_id, prof, w, seed, episode)
    drawn = state.drawn
    p, u, ok = drawn.p, drawn.u, drawn.success
    calls = list(script.get("gold_calls", []))
    final = script.get("final_message", "").strip()
    writes = [i for i, c in enumerate(calls) if c.get("write")]
    drop = script["drop"] if "drop" in script else (writes[-1] if writes else None)
    broken = False
    if not ok:
        if drop is not None:
            instead = instead_of_write(calls, drop)
            calls[drop:drop + 1] = [instead] if instead is not None else []
        elif script.get("communicate"):
            final = "Your request has been handled."
        else:
            broken = True
    tag = (f"[simulated: p={p:.6f} u={u:.6f} relevant={drawn.relevant} "
           f"memory_tokens={drawn.memory_tokens}{f' harmful={drawn.harmful}' if drawn.harmful else ''} "
           f"outcome={'success' if ok else 'failure'}]")
    shown = sum(1 for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []
                if (c.get("function") or {}).get("name") != simulated_world.PULL_TOOL)
    done = max(shown, state.calls_made)
    if broken:  # nothing to leave out: the agent fails by answering with a tool call that does not parse
        return {"role": "assistant", "content": tag, "tool_calls": [{
            "id": f"call_{done}", "type": "function", "function": {"name": "think", "arguments": "{not json"}}]}
    if done < len(calls):
        state.calls_made = done + 1
        return oracle.gold_call_message(calls[done], done)
    return {"role": "assistant", "content": f"{final} {tag} {oracle.DONE_MARKER}".strip()}


def instead_of_write(calls: list[dict[str, Any]], drop: int) -> dict[str, Any] | None:
    """What a failed episode sends in place of the write it leaves out, so that it takes as many steps as a
    successful one and an arm that fails more pays no fewer memory tokens per episode (docs/controls.md): the
    last read before the write, again, or else the write aimed at no record (every text argument `unknown`: the
    tool answers an error). Neither changes the DB, so its check still fails. None: a write with no text
    argument and no read before it, left out with nothing in its place."""
    read = next((c for c in reversed(calls[:drop]) if c.get("read")), None)
    if read is not None:
        return dict(read)
    write = calls[drop]
    arguments = dict(write.get("arguments") or {})
    if not any(isinstance(v, str) for v in arguments.values()):
        return None
    return {**write, "arguments": {k: UNKNOWN if isinstance(v, str) else v for k, v in arguments.items()}}


UNKNOWN = "unknown"


def _pull(messages: list[dict[str, Any]], task_id: str, prof: simulated_world.Profile, seed: object,
          episode: str | None) -> dict[str, Any] | None:
    """The recall call of the episode's first step, when the planted chance says it pulls; None otherwise (the
    draw is made, or it already pulled)."""
    with _episodes_lock:
        drawn = episode is not None and episode in _episodes
    if drawn or any((c.get("function") or {}).get("name") == simulated_world.PULL_TOOL for m in messages
                    for c in m.get("tool_calls") or []) or not simulated_world.pulls(prof, task_id, seed):
        return None
    query = next((str(m.get("content")) for m in messages if m.get("role") == "user" and m.get("content")), "")
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": "recall_0", "type": "function",
        "function": {"name": simulated_world.PULL_TOOL, "arguments": json.dumps({"query": query or task_id})}}]}


def parse_tag(text: str) -> dict[str, Any] | None:
    """The draw a trajectory's final agent message records (None when there is none)."""
    m = TAG.search(text or "")
    if not m:
        return None
    return {"p": float(m.group(1)), "u": float(m.group(2)), "relevant": int(m.group(3)),
            "memory_tokens": int(m.group(4)), "harmful": int(m.group(5) or 0), "success": m.group(6) == "success"}


def install() -> None:
    register_provider(PROVIDER, SimulatedAgent(), replace=False)


# its memory is counted as the world reads it, so a step's memory tokens and the draw's tag are one figure
SERVED = Provider(PROVIDER, install, simulated=True, memory_tokens=simulated_world.block_tokens)
