"""τ²-bench adapter: the only module that imports tau2.

tau2's own Orchestrator runs each episode and tau2's own `evaluate_simulation` scores it. What we add:
- `MemoryAgent` (an `LLMAgent` subclass, registered with tau2's registry) asks the strategy what to
  deliver at *every* step and renders it into the prompt;
- both agent and user simulator call the model through our `ModelClient`, so every call lands in the
  token ledger with the provider's own figures;
- trajectories are saved in tau2's `Results` format, so `tau2 view` can open them.
"""

from __future__ import annotations

import hashlib
import json
import sys
import threading
import time
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from loguru import logger

logger.remove()  # before tau2 is imported: it logs its registry at import and every step at INFO
logger.add(sys.stderr, level="ERROR")

from harness import assembly  # noqa: E402
from harness.errors import UserSimulatorError, call_strategy, classify  # noqa: E402
from harness.model_client import ModelClient  # noqa: E402
from harness.prompted_tools import PromptedParseError, parse_reply, render_tools, to_text_messages  # noqa: E402
from tau2.agent.base import AgentError
from tau2.agent.llm_agent import LLMAgent, LLMAgentState
from tau2.data_model.message import AssistantMessage, MultiToolMessage, SystemMessage, ToolCall, UserMessage
from tau2.data_model.simulation import Results, SimulationRun, TerminationReason
from tau2.data_model.tasks import Task
from tau2.evaluator.evaluator import EvaluationType, evaluate_simulation
from tau2.metrics.agent_metrics import is_successful
from tau2.orchestrator.orchestrator import Orchestrator
from tau2.registry import registry
from tau2.run import get_info
from tau2.user.user_simulator import UserSimulator
from tau2.utils.llm_utils import to_litellm_messages
from tau2.utils.utils import get_now

from harness.benchmarks.protocol import BenchmarkBase
from harness.benchmarks.tau2_data import TaskSource, configured_data_dir, graded_by_nl, needs_nl_judge
from harness.benchmarks.tau2_judge import judging
from harness.benchmarks.tau2_react import ReactTurn
from harness.ledger import Ledger, MemoryTokenCounter
from harness.store import redact_text
from strategies import EMPTY, Delivery, StepView, Strategy, TaskView, Trajectory
from strategies.atomic import write_text_atomic
from strategies.base import first_user_text

AGENT_NAME = "memdeliv_agent"
AGENT_KINDS = ("tool_calling", "react")  # react: tau2-bench's ReAct example scheme (harness/benchmarks/tau2_react.py)
SPLITS = {"retail": ("train", "test", "base"), "airline": ("train", "test", "base"),
          "telecom": ("train", "test", "base", "small")}

# tau2 termination reason -> our error label (None = ended normally, the evaluator decides success)
_ERROR_OF = {
    TerminationReason.AGENT_STOP: None,
    TerminationReason.USER_STOP: None,
    TerminationReason.MAX_STEPS: "max_steps",
    TerminationReason.TOO_MANY_ERRORS: "agent",
    TerminationReason.AGENT_ERROR: "agent",
    TerminationReason.JUDGE_STOP: "agent",
    TerminationReason.USER_ERROR: "user_simulator",  # tau2 counts it as a failure too
}


# oracle_script's `drop` per (domain, data, task content): replaying gold actions costs ~0.4 s a task, and every
# job of a sweep (one process) asks again for the same tasks
_DROPS: dict[tuple[str, str, str], Optional[int]] = {}
_DROPS_LOCK = threading.Lock()

class MalformedOutput(AgentError):
    """The model answered with something that is not a valid message or tool call."""

    def __init__(self, reason: str, raw: dict[str, Any]):
        super().__init__(reason)
        self.raw = raw


class MemoryAgent(LLMAgent):
    """tau2's LLM agent with a memory block delivered by a strategy at every step."""

    def __init__(self, tools, domain_policy, llm=None, llm_args=None, *, strategy: Optional[Strategy] = None,
                 task_view: Optional[TaskView] = None, client: Optional[ModelClient] = None,
                 ledger: Optional[Ledger] = None, placement: str = "after_policy",
                 memory_counter: Optional[MemoryTokenCounter] = None, prompted: bool = False,
                 assembly_options: Optional[assembly.AssemblyOptions] = None):
        super().__init__(tools=tools, domain_policy=domain_policy, llm=llm, llm_args=llm_args)
        self.strategy = strategy
        self.task_view = task_view
        self.client = client or ModelClient(model=llm or "", kwargs=dict(self.llm_args))
        self.ledger = ledger if ledger is not None else Ledger()
        self.placement = placement
        self.opts = assembly_options or assembly.AssemblyOptions(placement=placement)  # harness/assembly.py
        self.memory_counter = memory_counter or MemoryTokenCounter(self.client.model)
        self.tool_schemas = [t.openai_schema for t in tools]
        self.tool_names = {t.name for t in tools}
        self.prompted = prompted  # tool schemas in the system prompt, replies parsed from text
        self.tools_block = render_tools(self.tool_schemas) if prompted else ""

    def set_seed(self, seed: int) -> None:
        self.client.kwargs["seed"] = seed

    def generate_next_message(self, message, state: LLMAgentState):
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        elif message is not None:
            state.messages.append(message)
        history = assembly.cut_tool_results(to_litellm_messages(state.messages), self.opts.max_observation_chars)
        step = StepView(index=len(self.ledger.agent_steps),
                        messages=tuple({"role": m["role"], "content": m.get("content")} for m in history))
        delivery = call_strategy(self.strategy, "deliver", self.task_view, step) if self.strategy else EMPTY
        # Prompted tool schemas never change, so they sit before the memory block (harness/assembly.py places
        # it: after the policy by default, in the stable, cacheable prefix, as IBM's τ² runs did).
        base = f"{self.system_prompt}\n\n{self.tools_block}" if self.prompted else self.system_prompt
        self._assembled = assembly.assemble(base, history, delivery, placement=self.placement,
                                            model=self.client.model, policy=self.opts.context_policy,
                                            limit=self.opts.limit, measure=self._measure,
                                            strict_limit=self.opts.strict_limit)
        state.system_messages = [SystemMessage(role="system", content=self._assembled.messages[0]["content"])]
        reply = self.respond(list(self._assembled.messages), delivery)
        if self.opts.answer_mode == "rebuild" and not reply.tool_calls and assembly.turn_has_tool_calls(history):
            reply = self._rebuild_answer(reply, delivery, history)
        state.messages.append(reply)
        return reply, state

    def respond(self, llm_messages: list[dict[str, Any]], delivery: Delivery) -> AssistantMessage:
        """One agent turn from the assembled request (the react variant makes two calls here)."""
        return self._to_message(self.call_model(llm_messages, delivery))

    def call_model(self, llm_messages: list[dict[str, Any]], delivery: Delivery, tools: bool = True):
        """One agent model call, ledgered as an agent step with the memory that reached the model."""
        request = self._assembled
        completion = self._complete(llm_messages, tools=tools)
        self.ledger.add_agent_step(completion.usage, self.memory_counter(request.delivery.text), request.delivery.ids,
                                   dropped_ids=delivery.dropped, context_dropped_ids=request.context_dropped,
                                   summarised_turns=request.summarised_turns)
        return completion

    def _measure(self, messages: list[dict[str, Any]]) -> int:
        if self.prompted:
            return assembly.request_tokens(self.client.model, to_text_messages(messages))
        return assembly.request_tokens(self.client.model, messages, self.tool_schemas)

    def _complete(self, messages: list[dict[str, Any]], tools: bool):
        messages = assembly.cache_marks(messages, self.placement, self.client.model, self.opts.prompt_caching)
        if self.prompted:
            return self.client.complete(to_text_messages(messages))
        return self.client.complete(messages, tools=self.tool_schemas if tools else None)

    def _rebuild_answer(self, working: AssistantMessage, delivery: Delivery, history) -> AssistantMessage:
        """answer_mode=rebuild: the reply to the user regenerated from a clean request (no tool scaffolding)."""
        messages = assembly.rebuild_request(self.system_prompt, history, delivery.text, placement=self.placement,
                                            model=self.client.model, max_chars=self.opts.max_observation_chars)
        completion = self._complete(messages, tools=False)
        self.ledger.add_agent_step(completion.usage, self.memory_counter(delivery.text), delivery.ids,
                                   dropped_ids=delivery.dropped, phase="answer")
        text = (completion.content or "").strip()
        raw = {**(working.raw_data or {}), "working_reply": working.content, "answer_mode": "rebuild",
               "answer_usage": _usage_dict(completion.usage)}
        if not text or "<tool_call>" in text:  # nothing usable: the working reply stands, and the trajectory says so
            raw["rebuild_discarded"] = completion.content
            return working.model_copy(update={"raw_data": raw})
        costs = (working.cost, completion.usage.cost_usd)
        return AssistantMessage(role="assistant", content=text, cost=None if None in costs else sum(costs),
                                usage=working.usage, raw_data=raw)

    def _to_message(self, completion) -> AssistantMessage:
        usage = _usage_dict(completion.usage)
        raw = {"content": completion.content, "finish_reason": completion.finish_reason,
               "tool_calls": [c.__dict__ for c in completion.tool_calls],
               "usage": usage}  # an unparseable step still cost tokens: the trajectory keeps them
        if self.prompted:
            return self._parse_prompted(completion, raw, usage)
        calls = []
        for call in completion.tool_calls:
            try:
                args = json.loads(call.arguments) if call.arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise MalformedOutput(f"tool call {call.name!r}: arguments are not JSON ({exc.msg})", raw) from None
            if not isinstance(args, dict):
                raise MalformedOutput(f"tool call {call.name!r}: arguments must be a JSON object", raw)
            if not call.name:
                raise MalformedOutput("tool call without a tool name", raw)
            calls.append(ToolCall(id=call.id, name=call.name, arguments=args))
        content = completion.content if completion.content and completion.content.strip() else None
        if not calls and content is None:
            raise MalformedOutput("empty response: no text and no tool call", raw)
        return AssistantMessage(role="assistant", content=None if calls else content, tool_calls=calls or None,
                                cost=completion.usage.cost_usd, usage=usage, raw_data=raw)

    def _parse_prompted(self, completion, raw: dict[str, Any], usage: dict[str, Any]) -> AssistantMessage:
        try:
            reply = parse_reply(completion.content, self.tool_names)
        except PromptedParseError as exc:
            raise MalformedOutput(f"prompted tool call: {exc}", raw) from None
        calls = None
        if reply.call is not None:
            calls = [ToolCall(id=f"call_{len(self.ledger.agent_steps)}", name=reply.call.name,
                              arguments=reply.call.arguments)]
        return AssistantMessage(role="assistant", content=reply.message, tool_calls=calls,
                                cost=completion.usage.cost_usd, usage=usage, raw_data=raw)


class LedgerUser(UserSimulator):
    """tau2's user simulator, calling the model through our client so its tokens are ledgered apart."""

    def __init__(self, tools=None, instructions=None, llm=None, llm_args=None, *,
                 client: Optional[ModelClient] = None, ledger: Optional[Ledger] = None, prompted: bool = False):
        super().__init__(tools=tools, instructions=instructions, llm=llm, llm_args=llm_args)
        self.client = client or ModelClient(model=llm or "", kwargs=dict(llm_args or {}))
        self.ledger = ledger if ledger is not None else Ledger()
        self.prompted = prompted

    def set_seed(self, seed: int) -> None:
        self.client.kwargs["seed"] = seed

    def _generate_next_message(self, message, state):
        if isinstance(message, MultiToolMessage):
            state.messages.extend(message.tool_messages)
        else:
            state.messages.append(message)
        messages = to_litellm_messages(state.system_messages + state.flip_roles())
        tools = [t.openai_schema for t in self.tools] if self.tools else None
        if self.prompted:
            return self._prompted_turn(messages, tools, state)
        completion = self.client.complete(messages, tools=tools)
        self.ledger.add_user_call(completion.usage)
        calls = None
        if completion.tool_calls:
            try:
                calls = [ToolCall(id=c.id, name=c.name, arguments=json.loads(c.arguments or "{}"), requestor="user")
                         for c in completion.tool_calls]
            except json.JSONDecodeError as exc:
                raise UserSimulatorError(f"user simulator wrote a malformed tool call: {exc.msg}") from None
        if not calls and not (completion.content or "").strip():
            raise UserSimulatorError("user simulator returned an empty message")
        reply = UserMessage(role="user", content=None if calls else completion.content, tool_calls=calls,
                            cost=completion.usage.cost_usd, usage=_usage_dict(completion.usage))
        state.messages.append(reply)
        return reply, state

    def _prompted_turn(self, messages: list[dict[str, Any]], tools: Optional[list[dict[str, Any]]], state):
        """The simulated user on a model without native tools (its tools, if any, rendered into the prompt)."""
        if tools:
            messages = [{**messages[0], "content": f"{messages[0]['content']}\n\n{render_tools(tools)}"},
                        *messages[1:]]
        completion = self.client.complete(to_text_messages(messages))
        self.ledger.add_user_call(completion.usage)
        try:
            parsed = parse_reply(completion.content, [t["function"]["name"] for t in tools or []])
        except PromptedParseError as exc:  # the simulator, not the agent under test, failed
            raise UserSimulatorError(f"user simulator: {exc}") from None
        calls = None
        if parsed.call is not None:
            calls = [ToolCall(id=f"user_call_{len(self.ledger.user_calls)}", name=parsed.call.name,
                              arguments=parsed.call.arguments, requestor="user")]
        reply = UserMessage(role="user", content=parsed.message, tool_calls=calls,
                            cost=completion.usage.cost_usd, usage=_usage_dict(completion.usage))
        state.messages.append(reply)
        return reply, state


registry.register_agent(MemoryAgent, AGENT_NAME)


def _usage_dict(usage) -> dict[str, Any]:
    return {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens,
            "cached_tokens": usage.cached_tokens}


class Tau2Benchmark(BenchmarkBase):
    """One τ² domain and split, as the runner sees it (the Benchmark protocol; placements: assembly's)."""

    def __init__(self, cfg: Any):
        self.cfg = cfg
        self.domain = cfg.domain
        self.name = cfg.name
        self.source = TaskSource(self.domain, configured_data_dir(cfg.get("data_dir")))
        self.agent_kind = cfg.get("agent") or "tool_calling"
        self.judge_model = cfg.get("judge_model") or None

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
        if self.cfg.split not in splits:
            raise ValueError(f"{self.name}: unknown split {self.cfg.split!r}; valid: {', '.join(splits)}")
        if self.cfg.task_ids:
            known = {t.id for t in self._all_tasks}
            missing = [t for t in self.cfg.task_ids if str(t) not in known]
            if missing:
                raise ValueError(f"{self.name}/{self.cfg.split}: unknown task ids {missing}")
        judged = [t.id for t in self.tasks() if needs_nl_judge(t)]
        if judged and not self.judge_model:
            raise ValueError(f"{self.name}/{self.cfg.split}: {len(judged)} task(s) are graded by NL assertions "
                             f"(e.g. {judged[0]}), which need an LLM judge: set benchmark.judge_model=<LiteLLM model> "
                             f"(tau2-bench v1.0.1 uses openai/gpt-4.1-2025-04-14)")

    @cached_property
    def _all_tasks(self) -> list[Task]:
        return self.source.load_tasks(self.cfg.split)

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
        if self.cfg.task_ids:
            wanted = [str(t) for t in self.cfg.task_ids]
            tasks = [t for t in tasks if t.id in wanted]
        if self.cfg.limit is not None:
            tasks = tasks[: self.cfg.limit]
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
                        num_trials=self.cfg.trials, max_steps=self.cfg.max_steps,
                        max_errors=self.cfg.max_errors, seed=self.cfg.seed)

    @cached_property
    def _tool_types(self) -> dict[str, str]:
        tools = self.source.environment().tools
        return {name: tools.tool_type(name).value for name in tools.get_tools()}

    def oracle_script(self, task: Task, find_drop: bool = False) -> dict[str, Any]:
        """Gold actions and facts to say, for the scripted models (oracle self-check, simulated world).

        find_drop (the simulated agent): `drop` = the position of the last gold call whose omission changes
        tau2's DB check (some gold writes fail and change nothing), None when there is none."""
        crit = task.evaluation_criteria
        calls = [{"name": a.name, "arguments": a.arguments, "write": self._tool_types.get(a.name) == "write"}
                 for a in (crit.actions or []) if a.requestor == "assistant"]
        info = " ".join(str(x) for x in (crit.communicate_info or []))
        # The oracle's user names only the task id (a self-check needs no more); the simulated world's user states
        # the request, as a user simulator who knows its scenario does, so retrieval has something to match.
        opening = (_request(task) if find_drop else "") or f"Hi, I need help with a request (task {task.id})."
        script = {"task_id": task.id, "gold_calls": calls, "final_message": info or "Your request has been handled.",
                  "communicate": bool(info), "opening": opening}
        if find_drop:
            script["drop"] = self._drop_position(task)
        return script

    def gold_solution(self, task: Task) -> str:
        """The task's gold actions (tau2's evaluation criteria), for an ACE Reflector allowed ground truth."""
        crit = task.evaluation_criteria
        lines = [f"{a.requestor}: {a.name}({json.dumps(a.arguments, ensure_ascii=False)})" for a in (crit.actions or [])]
        if crit.communicate_info:
            lines.append("information to communicate: " + "; ".join(str(x) for x in crit.communicate_info))
        return "\n".join(lines) or "(this task has no gold actions)"

    def _drop_position(self, task: Task) -> Optional[int]:
        """Replays the gold actions as tau2's DB check does, leaving out one assistant write at a time (last first)."""
        key = (self.domain, str(self.cfg.get("data_dir") or "packaged"),
               hashlib.sha256(task.model_dump_json().encode()).hexdigest())
        with _DROPS_LOCK:
            if key in _DROPS:
                return _DROPS[key]
        actions = task.evaluation_criteria.actions or []
        init = task.initial_state

        def db_hash(skip: Optional[int]) -> str:
            env = self.source.environment()
            env.set_state(initialization_data=init.initialization_data if init else None,
                          initialization_actions=init.initialization_actions if init else None,
                          message_history=(init.message_history or []) if init else [])
            for i, a in enumerate(actions):
                if i != skip:
                    try:
                        env.make_tool_call(tool_name=a.name, requestor=a.requestor, **a.arguments)
                    except Exception:  # tau2's own replay ignores a failing gold action too
                        pass
            return env.get_db_hash()

        assistant = [i for i, a in enumerate(actions) if a.requestor == "assistant"]
        found, full = None, None
        for pos in reversed(range(len(assistant))):
            if self._tool_types.get(actions[assistant[pos]].name) != "write":
                continue
            full = full or db_hash(None)
            if db_hash(assistant[pos]) != full:
                found = pos
                break
        with _DROPS_LOCK:
            _DROPS[key] = found
        return found

    def run_episode(self, task: Task, *, trial: int, seed: int, strategy: Strategy, model: Any,
                    counter: MemoryTokenCounter, trajectory_path: Path) -> dict[str, Any]:
        """Run one task x trial with tau2's orchestrator and evaluator; return the record's fields."""
        started = time.perf_counter()
        ledger = Ledger()
        view = self.task_view(task, self.name)
        script = self.oracle_script(task, find_drop=getattr(model, "simulated", False)) if model.scripted else None
        agent_client, user_client = model.clients(task_script=script)
        env = self.source.environment()
        try:
            user_tools = env.get_user_tools()
        except Exception:
            user_tools = None
        agent = _agent_class(self.agent_kind)(
            tools=env.get_tools(), domain_policy=env.get_policy(), llm=agent_client.model, strategy=strategy,
            task_view=view, client=agent_client, ledger=ledger, placement=self.cfg.placement, memory_counter=counter,
            prompted=model.prompted_tools, assembly_options=assembly.options_for(self.cfg, model.cfg))
        user = LedgerUser(tools=user_tools, instructions=str(task.user_scenario), llm=user_client.model,
                          client=user_client, ledger=ledger, prompted=model.user_prompted_tools)
        orchestrator = Orchestrator(domain=self.domain, agent=agent, user=user, environment=env, task=task,
                                    max_steps=self.cfg.max_steps, max_errors=self.cfg.max_errors, seed=seed)
        error = detail = None
        start_time = get_now()
        try:
            simulation = orchestrator.run()
        except MalformedOutput as exc:
            error, detail = "agent", f"malformed model output: {exc}"
            simulation = _partial(orchestrator, start_time, started, exc.raw)
        except Exception as exc:  # labelled by harness.errors: only provider/network failures are "infra"
            error, detail = classify(exc)
            simulation = _partial(orchestrator, start_time, started)
        simulation.trial, simulation.seed = trial, seed
        # NL_ASSERTION tasks (tau2-bench v1.0.1 retail) need tau2's judge, as upstream grades them
        evaluation = EvaluationType.ALL_WITH_NL_ASSERTIONS if graded_by_nl(task) else EvaluationType.ALL
        with judging(self._judge_client(model) if graded_by_nl(task) else None, ledger):
            simulation.reward_info = evaluate_simulation(simulation=simulation, task=task, solo_mode=False,
                                                         evaluation_type=evaluation,
                                                         domain=self.source.evaluator_domain)
        if error is None:
            error = _ERROR_OF.get(TerminationReason(simulation.termination_reason))
        reward = float(simulation.reward_info.reward)
        messages = trajectory_messages(simulation.messages)
        seen = first_user_text(messages)
        trajectory = Trajectory(task=self.task_view(task, self.name, seen), messages=messages, reward=reward,
                                success=is_successful(reward), feedback=_feedback(simulation.reward_info))
        _write_results(trajectory_path, Results(info=self._info, tasks=[task], simulations=[simulation]))
        return {
            "task_id": task.id,
            "success": is_successful(reward),
            "reward": reward,
            "termination": TerminationReason(simulation.termination_reason).value,
            "error": error,
            "error_detail": detail,
            **ledger.record_fields(),
            "wall_s": round(time.perf_counter() - started, 4),
            "task_text": seen,  # what the agent saw: the user's first message
            "task_set": self.task_set,
            "agent": self.agent_kind,
            "judge_model": self.judge_model,
            "_trajectory": trajectory,  # handed to online learners by the runner, never stored
        }

    def _judge_client(self, model: Any) -> Optional[ModelClient]:
        if not self.judge_model:
            return None
        kwargs = {"temperature": 0.0, **dict(self.cfg.get("judge_kwargs") or {})}  # tau2's judge temperature
        return ModelClient(self.judge_model, kwargs, max_retries=model.cfg.max_retries,
                           retry_backoff_s=model.cfg.retry_backoff_s)

    def load_trajectory(self, path: Path, record: dict[str, Any]) -> Trajectory:
        """A stored episode (tau2 Results file) as the strategy protocol's Trajectory."""
        results = Results.load(path)
        sim, task = results.simulations[0], results.tasks[0]
        messages = trajectory_messages(sim.messages)
        return Trajectory(task=self.task_view(task, self.name, first_user_text(messages)), messages=messages,
                          reward=float(record["reward"]), success=bool(record["success"]),
                          feedback=_feedback(sim.reward_info))


class ReactMemoryAgent(ReactTurn, MemoryAgent):
    """benchmark.agent=react: MemoryAgent with tau2-bench's two-phase ReAct turn (tau2_react.py)."""


def _agent_class(kind: str) -> type:
    return ReactMemoryAgent if kind == "react" else MemoryAgent


def trajectory_messages(messages: list[Any]) -> tuple[dict[str, Any], ...]:
    """tau2's litellm conversion, plus `raw_content`: the text the agent wrote beside a tool call. tau2
    keeps a message to text or calls (the orchestrator rejects both), so that text lives only in raw_data;
    ACE reads the bullet ids the agent cited from it."""
    out = []
    for message in messages:
        for converted in to_litellm_messages([message]):
            raw = getattr(message, "raw_data", None) or {}
            text = raw.get("content") if isinstance(raw, dict) else None
            if converted.get("role") == "assistant" and converted.get("tool_calls") and isinstance(text, str) \
                    and text.strip() and not converted.get("content"):
                converted = {**converted, "raw_content": text}
            out.append(converted)
    return tuple(out)


def _request(task: Task) -> str:
    """The task's request as its user would state it (the scenario's reason for calling)."""
    instr = getattr(task.user_scenario, "instructions", None)
    return str(getattr(instr, "reason_for_call", None) or "").strip()


def _feedback(reward_info: Any) -> str:
    """The evaluator's own report (DB check, communicated facts), for reflectors that may see it."""
    if reward_info is None:
        return ""
    parts = [f"reward={reward_info.reward}"]
    if reward_info.db_check is not None:
        parts.append(f"db_match={reward_info.db_check.db_match}")
    for check in reward_info.communicate_checks or []:
        parts.append(f"communicated {check.info!r}: {check.met}")
    if reward_info.info and reward_info.info.get("note"):
        parts.append(str(reward_info.info["note"]))
    return "; ".join(parts)


def _partial(orchestrator: Orchestrator, start_time: str, started: float,
             raw: Optional[dict[str, Any]] = None) -> SimulationRun:
    """The trajectory so far, ended as an agent error (the evaluator then gives reward 0)."""
    messages = orchestrator.get_trajectory()
    if raw is not None:  # keep the unparseable output in the trajectory, where a reader looks for it
        messages.append(AssistantMessage(role="assistant", content=f"[unparseable model output] {raw.get('content')}",
                                         raw_data=raw, usage=raw.get("usage"), turn_idx=len(messages)))
    return SimulationRun(id=f"{orchestrator.task.id}_partial", task_id=orchestrator.task.id, start_time=start_time,
                         end_time=get_now(), duration=time.perf_counter() - started,
                         termination_reason=TerminationReason.AGENT_ERROR, messages=messages)


def _write_results(path: Path, results: Results) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, redact_text(results.model_dump_json(indent=2)))

