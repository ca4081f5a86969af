"""`ace_online`: the ACE playbook learns after every finished episode (Reflector + Curator), one learning
stream per trial. The frozen `ace` is in strategies/ace/strategy.py."""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from strategies.ace.adapt import AceSettings, Adapter, UpdateReport
from strategies.ace.llm import JSON_MODES, JsonLLM
from strategies.ace.playbook import Bullet, Playbook
from strategies.ace.pruning import EmbeddingCache
from strategies.ace.strategy import FRAME, HISTORY, LATEST, SNAPSHOTS, AcePlaybook, now_utc
from strategies.base import Delivery, StepView, StrategyBase, StreamState, TaskView, Trajectory, trial_of
from memory_kit.budget import token_counter
from strategies.declaration import Declaration, always
from memory_kit.memory_file import learned_from
from strategies.ace.strategy import read_playbook_or_guidelines
from strategies.options import budget_field, option
from memory_kit.stream_data import guideline_data, guidelines_of
from foundation.atomic import write_text_atomic
from strategies.plan_block import full_block
from strategies.registry import StrategyContext


@dataclass(frozen=True)
class AceOnlineOptions(AceSettings):
    """Every playbook setting (strategies/ace/adapt.py), where the starting playbook comes from (null: the run's
    memory=, or none), the per-delivery cap, and each role's model (null: the run's), kwargs and key."""

    playbook: str | None = None
    budget_tokens: int | None = budget_field()
    reflector_model: str | None = None
    reflector_kwargs: dict[str, Any] | None = None
    reflector_api_key_env: str | None = None
    curator_model: str | None = None
    curator_kwargs: dict[str, Any] | None = None
    curator_api_key_env: str | None = None
    json_mode: str = option("schema", choices=JSON_MODES)
    embedder: str = "minilm"  # de-duplication's (only when dedup is on)


def learns_from_labels(opts: AceOnlineOptions) -> bool:
    """Labels are learned from when allowed, or when the verdict decides re-runs."""
    return opts.allow_ground_truth or (opts.retry_without_ground_truth and opts.reflection_rounds > 0)


class AceOnline(AcePlaybook):
    """`ace_online`: after every finished episode, Reflector + Curator update the playbook.

    Each trial is its own learning stream (so Pass^k trials stay independent): every stream starts from the
    same initial playbook and learns from its own episodes only, in the runner's fixed task order, so the runner
    runs the streams side by side (its declaration's `trial_streams`; each stream's updates one at a time, under
    its lock). Stream 0 lives in `<artifacts_dir>/`, stream t > 0 in `<artifacts_dir>/trial_<t>/`: every
    update writes a full snapshot `snapshots/playbook_NNNN.jsonl` there, and `playbook.jsonl` is always that
    stream's latest (with `_meta.learned_from`). All streams append to one `<artifacts_dir>/history.jsonl`
    (field `stream`). A stream is also data (`state`: its playbook, applied episodes, updates and re-run
    deliveries), which the harness commits with the run after each update and restores on resume
    (harness/runner/stream_state.py), and which travels with an episode to a Ray worker and back, as every
    online learner's stream does.
    """

    name = "ace_online"
    # the playbook's guidelines, as plain bullets, for the plan (an upper bound)
    declaration = Declaration(options=AceOnlineOptions, online=always, trial_streams=True,
                              ground_truth=learns_from_labels, labelled_by_default=False, frame=FRAME,
                              plan=lambda memory, count, opts: full_block(memory, count))

    def __init__(self, playbook: Playbook, *, adapter: Adapter, learned_from: dict[str, Any] | None = None,
                 token_model: str | None = None, **kwargs: Any):
        self.adapter = adapter
        self.token_model = token_model  # the tokenizer's model: a stream's snapshot counts tokens the same way
        self._history_lock = threading.Lock()  # streams append to one history.jsonl
        self._streams_lock = threading.RLock()
        super().__init__(playbook, settings=adapter.settings, count_tokens=adapter.count_tokens, **kwargs)
        self.initial = self._playbook  # every stream starts here (after the budget, as loaded)
        self.learned_from = learned_from  # the job's benchmark, split, model, labels: each stream adds its tasks
        self.streams: dict[int, _Stream] = {}
        self._reconciled: set[int] = set()  # streams whose history this process has reconciled (see _save)
        self._stream(0)

    # --- streams -------------------------------------------------------------------------------
    def _stream(self, trial: int) -> "_Stream":
        with self._streams_lock:
            stream = self.streams.get(trial)
            if stream is None:
                stream = self.streams[trial] = self._open(trial)
            return stream

    def _open(self, trial: int) -> "_Stream":
        folder = None if self.artifacts_dir is None else (
            self.artifacts_dir if trial == 0 else self.artifacts_dir / f"{STREAM_DIR}{trial}")
        stream = _Stream(trial, folder, self.initial, self._fit(self.initial), set(), 0)
        if folder is not None and (folder / LATEST).is_file():  # a resumed run: the harness restores the stream
            return stream
        self._save(UpdateReport(task_id="", reward=0.0, success=False, bullets=len(self.initial),
                                tokens=self.count_tokens(self.initial.render(self.settings.cite))), event="start",
                   stream=stream)
        return stream

    def for_trial(self, trial: int) -> "_TrialView":
        """Runner hook: what the episodes of one trial see (that trial's stream)."""
        return _TrialView(self, trial)

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self.deliver_in(0, task, step)

    def deliver_in(self, trial: int, task: TaskView, step: StepView) -> Delivery:
        stream = self._stream(trial)
        with self._lock:  # a task being re-run after a reflection: that episode alone gets the reflection
            return stream.retry.get(_episode_key(task.task_id, trial), stream.delivery)

    @property
    def playbook(self) -> Playbook:
        """Stream 0's current playbook (the only one when trials = 1)."""
        return self._stream(0).playbook

    @property
    def state(self) -> "StreamState":
        return self  # its streams as data: snapshot / restore

    def snapshot(self, trial: int) -> dict[str, Any]:
        """Stream `trial` as data. Read under the delivery lock, never the stream's: a re-run sent to a Ray worker
        from inside an update asks for it."""
        stream = self._stream(trial)
        with self._lock:
            return {"playbook": stream.playbook.to_rows(), "next_id": stream.playbook.next_id,
                    "applied": sorted(stream.applied), "updates": stream.updates,
                    "retry": {key: {"text": d.text, "guidelines": guideline_data(d.guidelines)}
                              for key, d in stream.retry.items()}}

    def restore(self, trial: int, state: Mapping[str, Any]) -> None:
        """Set stream `trial` to `state` (a resume, a Ray worker); its latest file says so. The same state again (a
        Ray episode coming back) changes nothing."""
        stream = self._stream(trial)
        playbook = Playbook([Bullet(**row) for row in state["playbook"]], int(state["next_id"]))
        with self._lock:
            same = (stream.updates, sorted(stream.applied), stream.playbook) == \
                (state["updates"], list(state["applied"]), playbook)
        if same:
            return
        delivery = self._fit(playbook)
        with self._lock:
            stream.playbook, stream.delivery, stream.applied = playbook, delivery, set(state["applied"])
            self.updates += int(state["updates"]) - stream.updates
            stream.updates = int(state["updates"])
            stream.retry = {key: Delivery(tuple(guidelines_of(d["guidelines"])), d["text"])
                            for key, d in state["retry"].items()}
        self._save(None, event="restore", stream=stream)

    def build(self, trajectories: Any) -> None:
        """Offline from stored episodes: the same update, once per trajectory, in the order given."""
        for trajectory in trajectories:
            self.learn(trajectory)

    def learn(self, trajectory: Trajectory, rerun: Callable[[], Trajectory | None] | None = None,
              gold: Callable[[], str | None] | None = None, samples: int | None = None) -> dict[str, Any]:
        """An update with ACE's reflect-and-retry rounds. The harness passes `rerun` (runs the same task
        again; this strategy then delivers the playbook plus the reflection to that task) and `gold` (the
        task's gold solution, asked for only when ground truth is allowed) and `samples` (the job's episodes,
        for the Curator's "sample i of N"). Returns facts for the episode's record (`update_lost`).
        Strategies never see the adapter."""
        trial = trial_of(trajectory.episode)
        stream = self._stream(trial)
        key = _episode_key(trajectory.task.task_id, trial)  # reflections are keyed by episode, never shared

        def again(playbook: Playbook, reflection: str) -> Trajectory | None:
            text = "\n".join(t for t in (playbook.render(self.settings.cite), reflection) if t)
            with self._lock:
                stream.retry[key] = Delivery(tuple(playbook.as_guidelines()), text)
            assert rerun is not None  # `again` is handed on only with a rerun
            try:
                return rerun()
            finally:
                with self._lock:
                    stream.retry.pop(key, None)

        solution = gold() if gold is not None and self.settings.allow_ground_truth else None
        with stream.lock:  # one update at a time per stream (the runner runs a stream's episodes in order)
            if trajectory.episode is not None and trajectory.episode in stream.applied:
                return {}  # a resumed run replays an episode this playbook already learned from
            progress = (stream.updates + 1, max(samples, stream.updates + 1)) if samples else None
            playbook, report = self.adapter.step(stream.playbook, trajectory, again if rerun is not None else None,
                                                 solution, progress)
            delivery = self._fit(playbook)
            with self._lock:
                stream.playbook, stream.delivery = playbook, delivery
                self.updates += 1  # over every stream: streams learn side by side
                stream.updates += 1
                if trajectory.episode is not None:
                    stream.applied.add(trajectory.episode)
            self._save(report, event="update", episode=trajectory.episode, stream=stream)
            return {"update_lost": report.lost}

    @property
    def ground_truth(self) -> bool | None:
        """Labels reach this playbook when this learner is allowed them or its starting playbook had them."""
        return True if self.settings.allow_ground_truth else super().ground_truth

    def stream_learned_from(self, stream: "_Stream") -> dict[str, Any] | None:
        """`_meta.learned_from` of one stream's playbook: the job's facts, the tasks this stream learned from,
        and the starting playbook's own `learned_from` (`started_from`), so a chain of artifacts is checked whole."""
        if self.learned_from is None:
            return self.meta.get("learned_from")
        tasks = sorted(episode.rsplit("#", 1)[0] for episode in stream.applied)
        out = learned_from(**{**self.learned_from, "task_ids": tasks}, trial=stream.trial)
        return {**out, "started_from": self.meta.get("learned_from")} if self.meta.get("learned_from") else out

    def _save(self, report: UpdateReport | None, event: str, episode: str | None = None,
              stream: "_Stream | None" = None) -> None:
        """The stream's latest file (`restore`: that alone), a snapshot of it and a line of history."""
        if self.artifacts_dir is None or stream is None or stream.dir is None:
            return
        dropped = ("kind", "next_id", "applied", "updates", "learned_from")  # a starting playbook's own, not ours
        meta = {**{k: v for k, v in self.meta.items() if k not in dropped}, "strategy": self.name,
                "trial": stream.trial, "updates": stream.updates, "applied": sorted(stream.applied),
                "reflector_model": self.adapter.reflector.model, "curator_model": self.adapter.curator.model,
                "ground_truth": self.ground_truth, "saved_at": now_utc()}
        if (source := self.stream_learned_from(stream)) is not None:
            meta["learned_from"] = source
        if report is None:  # a restored stream: its latest file is the committed one again
            stream.playbook.save(stream.dir / LATEST, meta)
            return
        snapshot = Path(SNAPSHOTS) / f"playbook_{stream.updates:04d}.jsonl"
        stream.playbook.save(stream.dir / snapshot, meta)
        stream.playbook.save(stream.dir / LATEST, meta)
        with self._history_lock:
            if event == "update":
                self._reconcile_history(stream)
            self._write_history({"update": stream.updates, "stream": stream.trial, "at": now_utc(), "event": event,
                                 "episode": episode, **asdict(report),
                                 "snapshot": str(stream.dir.relative_to(self.artifacts_dir) / snapshot)})

    def _reconcile_history(self, stream: "_Stream") -> None:
        """Before this process's first update of a stream, drop the history lines of that stream's updates from
        this one on: a resumed run rolled them back (their rows were never written) and now applies them again,
        so each applied update has one line. Called under the history lock."""
        path = None if self.artifacts_dir is None else self.artifacts_dir / HISTORY
        if stream.trial in self._reconciled or path is None or not path.is_file():
            return
        self._reconciled.add(stream.trial)
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        kept = [line for line in lines if not _rolled_back(line, stream.trial, stream.updates)]
        if len(kept) != len(lines):
            write_text_atomic(path, "".join(kept))

    @classmethod
    def create(cls, ctx: StrategyContext) -> "AceOnline":
        settings = cls.declaration.parse(cls.name, ctx.options)
        source = settings.playbook or ctx.memory_path  # each stream resumes from its own latest file
        if source:
            playbook, meta = read_playbook_or_guidelines(source)
            meta = {**meta, "source": str(source)}
        else:
            playbook, meta = Playbook(), {"source": None}
        count = token_counter(ctx.model)
        adapter = Adapter(reflector=_role(settings, "reflector", ctx), curator=_role(settings, "curator", ctx),
                          count_tokens=count, settings=settings,
                          embeddings=EmbeddingCache(_embedder(settings)) if settings.dedup_on else None)
        return cls(playbook, adapter=adapter, artifacts_dir=ctx.artifacts_dir, meta=meta, options=dict(ctx.options),
                   learned_from=ctx.learned_from, token_model=ctx.model)


STREAM_DIR = "trial_"


def _episode_key(task_id: str, trial: int) -> str:
    return f"{task_id}#{trial}"


@dataclass
class _Stream:
    """One trial's learning stream: its own playbook, delivery, applied episodes and folder."""

    trial: int
    dir: Path | None
    playbook: Playbook
    delivery: Delivery
    applied: set[str]
    updates: int
    retry: dict[str, Delivery] = field(default_factory=dict)  # episode key -> playbook + reflection
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # its updates, one at a time


class _TrialView(StrategyBase):
    """What the episodes of one trial see: deliver() and record facts from that trial's stream."""

    def __init__(self, owner: AceOnline, trial: int):
        self.owner, self.trial, self.name = owner, trial, owner.name

    def deliver(self, task: TaskView, step: StepView) -> Delivery:
        return self.owner.deliver_in(self.trial, task, step)

    def record_facts(self, trajectory: Trajectory | None) -> dict[str, Any]:
        stream = self.owner._stream(self.trial)
        return _stream_facts(self.owner, trajectory, stream.playbook, stream.updates)


def _rolled_back(line: str, trial: int, first: int) -> bool:
    row = json.loads(line) if line.strip() else {}
    return row.get("event") == "update" and row.get("stream") == trial and int(row.get("update", 0)) >= first


def _stream_facts(ace: AcePlaybook, trajectory: Trajectory | None, playbook: Playbook, updates: int) -> dict[str, Any]:
    """`facts_for` a stream, plus where the episode ran in it (`episodes_seen`: updates the stream had applied) and
    the size of the playbook it saw (`memory_size`, bullets): the learning curve's points."""
    return {**ace.facts_for(trajectory, playbook), "episodes_seen": updates, "memory_size": len(playbook)}


def _role(opts: AceOnlineOptions, role: str, ctx: StrategyContext) -> JsonLLM:
    """`<role>_model: null` = the run's own model (and its kwargs, e.g. a local server's api_base)."""
    reflector = role == "reflector"
    model, kwargs, key = ((opts.reflector_model, opts.reflector_kwargs, opts.reflector_api_key_env) if reflector
                          else (opts.curator_model, opts.curator_kwargs, opts.curator_api_key_env))
    if not (model or ctx.model):
        raise ValueError(f"ace_online: no model for the {role}; set strategy.options.{role}_model")
    client = ctx.run_client().configured(model, kwargs, key, max_retries=opts.role_max_retries,
                                         retry_backoff_s=opts.role_retry_backoff_s)
    return JsonLLM.of(client, json_mode=opts.json_mode)


def _embedder(opts: AceOnlineOptions) -> Any:
    from memory_kit.embeddings import make_embedder  # lazy: the model loads only when dedup is on

    return make_embedder(opts.embedder)
