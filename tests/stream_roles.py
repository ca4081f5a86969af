"""FAKE ACE roles for the online-stream tests: no language model. Each answer is a function of the request alone
(a CRC of the prompt), so a stream's updates are the same whichever thread, process or order the streams run in,
and a stream that saw other episodes, or the same ones in another order, learns other bullets.

`gate`: a barrier each stream's first Reflector call waits at (None: no barrier), to show streams overlap.
Helpers compare two runs' records (less timing) and their playbooks."""

from __future__ import annotations

import json
import threading
import zlib
from pathlib import Path
from typing import Any, Optional

from litellm import CustomLLM, ModelResponse

from conftest import read_records
from harness.serving.providers import register_provider

PROVIDER = "memdeliv-stream-roles"
MODEL = f"{PROVIDER}/roles"
TIMING = ("wall_s", "started_at", "model_seconds", "run")  # what differs between two runs of the same episodes


class PromptKeyedRoles(CustomLLM):
    def __init__(self, gate: Optional[threading.Barrier] = None) -> None:
        super().__init__()
        self.gate = gate
        self.threads: set[str] = set()
        self._lock = threading.Lock()

    def completion(self, model: str, messages: list[dict[str, Any]], *args: Any, **kwargs: Any) -> ModelResponse:
        user = str(messages[-1]["content"])
        crc = zlib.crc32(user.encode())
        if "Reflector of an agent" in messages[0]["content"]:
            with self._lock:
                first = threading.current_thread().name not in self.threads
                self.threads.add(threading.current_thread().name)
            if first and self.gate is not None:
                self.gate.wait()  # every stream reaches its first update before any goes on
            answer = {"error_analysis": f"analysis {crc:08x}", "key_insight": f"insight {crc:08x}", "bullet_tags": []}
        else:
            answer = {"operations": [{"type": "ADD", "section": "strategies", "content": f"Lesson {crc:08x}."}]}
        return ModelResponse(model=model, choices=[{"message": {"role": "assistant", "content": json.dumps(answer)},
                                                    "finish_reason": "stop"}],
                             usage={"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18})


def install(gate: Optional[threading.Barrier] = None) -> PromptKeyedRoles:
    return register_provider(PROVIDER, PromptKeyedRoles(gate))


def job(artifact: Path, runs_dir: Path, name: str, *extra: str) -> list[str]:
    """An ace_online job on the SIMULATED agent: its draws depend on the trial's seed and on the playbook it
    reads, so every stream takes its own path and learns its own bullets."""
    return ["model=simulated", f"model.world={artifact}", "strategy=ace_online", f"memory={artifact}",
            f"strategy.options.reflector_model={MODEL}", f"strategy.options.curator_model={MODEL}",
            "strategy.options.dedup_threshold=null", "benchmark=tau2_retail", "benchmark.limit=4",
            "benchmark.trials=3", "progress=false", f"runs_dir={runs_dir}", f"run_name={name}", *extra]


def comparable_records(run_dir: Path) -> dict[tuple[str, int], dict[str, Any]]:
    out = {}
    for record in read_records(run_dir):
        row = {k: v for k, v in record.items() if k not in TIMING}
        row["step_usage"] = [{k: v for k, v in s.items() if k != "latency_s"} for s in row.get("step_usage") or []]
        out[(record["task_id"], record["trial"])] = row
    return out


def playbooks(run_dir: Path) -> dict[str, Any]:
    """Every stream's files under the job's memory folder: playbook lines byte for byte (`_meta.saved_at`, the
    clock, left out) and the stream's history lines less their clock."""
    [art] = list((run_dir / "memory").iterdir())
    out: dict[str, Any] = {}
    for path in sorted(art.rglob("*.jsonl")):
        lines = path.read_text().splitlines()
        if path.name == "history.jsonl":
            for line in lines:
                doc = json.loads(line)
                doc.pop("at")
                out.setdefault(f"history/stream {doc.get('stream')}", []).append(doc)
            continue
        meta = json.loads(lines[0])
        meta["_meta"].pop("saved_at")
        out[str(path.relative_to(art))] = [meta, *lines[1:]]
    return out
