"""τ²-bench adapter: one domain and split as the runner sees it (the Benchmark protocol).

tau2's own Orchestrator runs each episode and tau2's own `evaluate_simulation` scores it. What we add:
- the agent (agent.py: `MemoryAgent`, tau2's LLMAgent asking the strategy what to deliver at *every* step);
- the user simulator (user.py), calling the model through our `ModelClient`, so every call lands in the
  token ledger with the provider's own figures;
- trajectories saved in tau2's `Results` format (results.py), so `tau2 view` can open them.
"""

from __future__ import annotations

import json
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from tau2.data_model.simulation import Results, TerminationReason
from tau2.data_model.tasks import Task
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.metrics.agent_metrics import is_successful
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.run import get_info
from tau2.utils.utils import get_now

from harness.benchmarks.episode import EpisodeFrame
from harness.benchmarks.protocol import BenchmarkBase
from harness.benchmarks.tau2.agent import AGENT_KINDS, AGENT_NAME, MalformedOutput, agent_class
from harness.benchmarks.tau2.data import TaskSource, configured_data_dir, graded_by_nl, needs_nl_judge
from harness.benchmarks.tau2.judge import judging
from harness.benchmarks.tau2.results import ERROR_OF, feedback, partial_simulation, trajectory_messages
from harness.benchmarks.tau2.runtime import commit_from_harness, register_agent
from harness.benchmarks.tau2.user import LedgerUser
from harness.errors import AGENT
from harness.ledger import MemoryTokenCounter
from harness.records import EpisodeRecord
from harness.row import RowLike
from harness.settings import BenchmarkSettings, plain
from harness.serving.model_client import ModelClient
from harness.serving.models import ModelSpec
from strategies import Strategy, TaskView, Trajectory
from strategies.base import first_user_text

SPLITS = {"retail": ("train", "test", "base"), "airline": ("train", "test", "base"),
          "telecom": ("train", "test", "base", "small")}


class Tau2Benchmark(BenchmarkBase):
    """One τ² domain and split, as the runner sees it (the Benchmark protocol; placements: assembly's)."""

    def __init__(self, settings: BenchmarkSettings):
        super().__init__(settings)
        self.domain = settings.domain
        self.source = TaskSource(self.domain, configured_data_dir(settings.data_dir))
        self.agent_kind = settings.agent
        self.judge_model = settings.judge_model or None
        register_agent()  # once per process: our agent's name in tau2's registry (runtime.py)
        commit_from_harness()  # once per process: the commit tau2's Results info carries (runtime.py)

    def needs_judge(self) -> bool:
        """Whether a selected task is graded by NL assertions, so benchmark.judge_model will be called."""
        return any(needs_nl_judge(t) for t in self.tasks())

    def validate(self) -> None:
        if self.domain not in SPLITS:
            raise ValueError(f"unknown tau2 domain {self.domain!r}; valid: {', '.join(SPLITS)}")
        if self.agent_kind not in AGENT_KINDS:
            raise ValueError(f"benchmark.agent={self.agent_kind!r}; valid: {', '.join(AGENT_KINDS)}")
        self.source.check()
        splits = self.source.splits() or SPLITS[self.domain]
        if self.settings.split not in splits:
            raise ValueError(f"{self.name}: unknown split {self.settings.split!r}; valid: {', '.join(splits)}")
        if self.settings.task_ids:
            known = {t.id for t in self._all_tasks}
            missing = [t for t in self.settings.task_ids if str(t) not in known]
            if missing:
                raise ValueError(f"{self.name}/{self.settings.split}: unknown task ids {missing}")
        judged = [t.id for t in self.tasks() if needs_nl_judge(t)]
        if judged and not self.judge_model:
            raise ValueError(f"{self.name}/{self.settings.split}: {len(judged)} task(s) are graded by NL assertions "
                             f"(e.g. {judged[0]}), which need an LLM judge: set benchmark.judge_model=<LiteLLM model> "
                             f"(tau2-bench v1.0.1 uses openai/gpt-4.1-2025-04-14)")

    @cached_property
    def _all_tasks(self) -> list[Task]:
        return self.source.load_tasks(self.settings.split)

    @property
    def task_set(self) -> dict[str, Any]:
        """The task set's identity (tau2 version, tasks/split sha256, source), in every record and the manifest."""
        return self.source.fingerprint

    def identity_extra(self) -> dict[str, Any]:
        """Part of the job identity beyond the config keys: what was run (a data dir's files may change)."""
        extra: dict[str, Any] = {}
        if self.source.data_dir is not None:
            extra["task_set"] = self.task_set
        if self.judge_model:
            extra["judge_model"] = self.judge_model
        if self.agent_kind != "tool_calling":
            extra["agent"] = self.agent_kind
        return extra

    def manifest_facts(self) -> dict[str, Any]:
        return {"task_set": self.task_set, "agent": self.agent_kind, "judge_model": self.judge_model}

    def tasks(self) -> list[Task]:
        tasks = self._all_tasks
        if self.settings.task_ids:
            wanted = [str(t) for t in self.settings.task_ids]
            tasks = [t for t in tasks if t.id in wanted]
        if self.settings.limit is not None:
            tasks = tasks[: self.settings.limit]
        return tasks

    @staticmethod
    def task_view(task: Task, benchmark: str, seen: str = "") -> TaskView:
        """Only what the agent has seen of the task: nothing before the conversation, then the user's first
        message (`seen`). The user scenario is the simulator's hidden brief and never reaches a strategy."""
        return TaskView(benchmark=benchmark, task_id=task.id, description=seen)

    @cached_property
    def _info(self):
        return get_info(domain=self.domain, agent=AGENT_NAME, user="user_simulator", llm_agent="(see config.yaml)",
                        llm_args_agent={}, llm_user="(see config.yaml)", llm_args_user={},
                        num_trials=self.settings.trials, max_steps=self.settings.max_steps,
                        max_errors=self.settings.max_errors, seed=self.settings.seed)

    @property
    def tool_types(self) -> dict[str, str]:
        """tool name -> tau2's tool type (read, write, ...): which gold calls change the DB (tau2_script.py)."""
        return _tool_types(self.source)

    def oracle_script(self, task: Task, find_drop: bool = False) -> dict[str, Any]:
        """A scripted model's script for `task` (harness/scripted/tau2_script.py); never called for a real model."""
        from harness.scripted.tau2_script import oracle_script

        return oracle_script(self, task, find_drop)

    def gold_solution(self, task: Task) -> str:
        """The task's gold actions (tau2's evaluation criteria), for an ACE Reflector allowed ground truth."""
        crit = task.evaluation_criteria
        lines = [f"{a.requestor}: {a.name}({json.dumps(a.arguments, ensure_ascii=False)})"
                 for a in (crit.actions or [])]
        if crit.communicate_info:
            lines.append("information to communicate: " + "; ".join(str(x) for x in crit.communicate_info))
        return "\n".join(lines) or "(this task has no gold actions)"

    def run_episode(self, task: Task, *, trial: int, seed: int, strategy: Strategy, model: ModelSpec,
                    counter: MemoryTokenCounter, trajectory_path: Path) -> tuple[EpisodeRecord, Trajectory]:
        """Run one task x trial with tau2's orchestrator and evaluator; its record and trajectory."""
        frame = EpisodeFrame()
        view = self.task_view(task, self.name)
        script = self.oracle_script(task, find_drop=getattr(model, "simulated", False)) if model.scripted else None
        agent_client, user_client = model.clients(task_script=script)
        env = self.source.environment()
        try:
            user_tools = env.get_user_tools()
        except Exception:
            user_tools = None
        agent = agent_class(self.agent_kind)(
            tools=env.get_tools(), domain_policy=env.get_policy(), llm=agent_client.model, strategy=strategy,
            task_view=view, client=agent_client, ledger=frame.ledger, memory_counter=counter,
            prompted=model.prompted_tools, assembly_options=self.assembly)
        user = LedgerUser(tools=user_tools, instructions=str(task.user_scenario), llm=user_client.model,
                          client=user_client, ledger=frame.ledger, prompted=model.user_prompted_tools)
        orchestrator = Orchestrator(domain=self.domain, agent=agent, user=user, environment=env, task=task,
                                    max_steps=self.settings.max_steps, max_errors=self.settings.max_errors, seed=seed)
        start_time = get_now()
        try:
            simulation = orchestrator.run()
        except MalformedOutput as exc:
            frame.label(AGENT, f"malformed model output: {exc}")
            simulation = partial_simulation(orchestrator, start_time, frame.started, exc.raw)
        except Exception as exc:  # labelled by harness.errors: only provider/network failures are "infra"
            frame.fail(exc)
            simulation = partial_simulation(orchestrator, start_time, frame.started)
        simulation.trial, simulation.seed = trial, seed
        # NL_ASSERTION tasks (tau2-bench v1.0.1 retail) need tau2's judge, as upstream grades them
        evaluation = EvaluationType.ALL_WITH_NL_ASSERTIONS if graded_by_nl(task) else EvaluationType.ALL
        with judging(self._judge_client(model) if graded_by_nl(task) else None, frame.ledger):
            # environments from fresh_db.py (data.py): the evaluation's CPU is small, so it runs in this thread
            simulation.reward_info = evaluate_simulation(simulation=simulation, task=task, solo_mode=False,
                                                         evaluation_type=evaluation,
                                                         domain=self.source.evaluator_domain)
        termination = TerminationReason(simulation.termination_reason)
        if frame.error is None:
            frame.label(ERROR_OF.get(termination))
        reward = float(simulation.reward_info.reward)
        messages = trajectory_messages(simulation.messages)
        seen = first_user_text(messages)  # what the agent saw: the user's first message
        trajectory = Trajectory(task=self.task_view(task, self.name, seen), messages=messages, reward=reward,
                                success=is_successful(reward), feedback=feedback(simulation.reward_info))
        frame.write(trajectory_path,
                    Results(info=self._info, tasks=[task], simulations=[simulation]).model_dump_json(indent=2))
        return frame.finish(task.id, success=is_successful(reward), reward=reward, termination=termination.value,
                            task_text=seen, trajectory=trajectory, task_set=self.task_set, agent=self.agent_kind,
                            judge_model=self.judge_model)

    def _judge_client(self, model: ModelSpec) -> Optional[ModelClient]:
        if not self.judge_model:
            return None
        kwargs = {"temperature": 0.0, **plain(self.settings.judge_kwargs)}  # tau2's judge temperature
        return ModelClient(self.judge_model, kwargs, max_retries=model.settings.max_retries,
                           retry_backoff_s=model.settings.retry_backoff_s)

    def load_trajectory(self, path: Path, record: RowLike) -> Trajectory:
        """A stored episode (tau2 Results file) as the strategy protocol's Trajectory."""
        results = Results.load(path)
        sim, task = results.simulations[0], results.tasks[0]
        messages = trajectory_messages(sim.messages)
        return Trajectory(task=self.task_view(task, self.name, first_user_text(messages)), messages=messages,
                          reward=float(record["reward"]), success=bool(record["success"]),
                          feedback=feedback(sim.reward_info))


_TOOL_TYPES: dict[tuple[str, str], dict[str, str]] = {}


def _tool_types(source: TaskSource) -> dict[str, str]:
    # ~0.4 s to build a domain's tools; every job of a sweep (one process) asks again for the same domain
    key = (source.domain, str(source.data_dir))
    if key not in _TOOL_TYPES:
        tools = source.environment().tools
        _TOOL_TYPES[key] = {name: tools.tool_type(name).value for name in tools.get_tools()}
    return _TOOL_TYPES[key]
