"""A ReAct code agent for AppWorld, in the style of AppWorld's official one (our own wording).

The model reads instructions, one worked example, its supervisor's profile and the task; it answers
with Python in a code block; the engine runs the code and the printed output is the next
observation. API docs are not in the prompt: the model looks them up through `apis.api_docs`.
Memory comes from the strategy at EVERY step and is placed where `placement` says:
  first_user_message  (default; ACE's AppWorld layout) inside the first user message, re-sent each step
  after_policy        at the end of the system message
  end_of_conversation as the last message of each call (cache-hostile, for comparison)
Request assembly (harness/assembly.py, docs/request-assembly.md) works here as on τ²: with
`context_policy=priority_drop` the oldest code rounds are folded into a summary made by code, then memory
items are dropped by priority; with `answer_mode=rebuild` a final step that only answers
(`apis.supervisor.complete_task(answer=...)`) is regenerated from a clean request: instructions, memory,
the task and what the code printed, with no conversation scaffolding.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

from harness import assembly
from harness.assembly import TRUNCATED  # noqa: F401  (re-exported: the marker tests and readers look for)
from harness.assembly import cache_marks, cut_observation, trailing_role
from harness.errors import call_strategy
from harness.ledger import Ledger, MemoryTokenCounter
from harness.model_client import ModelClient
from strategies import EMPTY, Delivery, StepView, Strategy, TaskView

PLACEMENTS = ("first_user_message", "after_policy", "end_of_conversation")

SYSTEM = ("You are a highly capable AI assistant who completes your supervisor's day-to-day tasks fully "
          "autonomously, by writing Python code that calls the APIs of their apps.")

INSTRUCTIONS = """\
I am your supervisor. Complete the task below on my behalf by interacting with my apps (spotify, venmo, \
gmail, ...) through their APIs, in a Python REPL. Each of your replies holds one ```python code block; I run \
it and show you what it printed. Then you write the next block, and so on until the task is done.

Three APIs tell you everything else:
```python
print(apis.api_docs.show_app_descriptions())                      # the apps you can use
print(apis.api_docs.show_api_descriptions(app_name="spotify"))    # the APIs of one app
print(apis.api_docs.show_api_doc(app_name="spotify", api_name="login"))  # one API's parameters and response
```

Rules:
- Look up an API's doc before calling it for the first time; never guess parameter names.
- Write small steps and print what you need to see; variables persist between steps.
- Many APIs need an access token: log in with the app's `login` API, using my account passwords from \
`apis.supervisor.show_account_passwords()`.
- List APIs are paginated: keep requesting pages until one comes back empty.
- Act on my data only as the task asks; never ask me questions, decide on your own.
- When done, call `apis.supervisor.complete_task()`; if the task asks a question, pass the answer: \
`apis.supervisor.complete_task(answer=...)` (a short value: a number, a name, yes/no).
"""

DEMO_TASK = "How many playlists do I have on Spotify?"
DEMO_SUPERVISOR = {"first_name": "Ana", "last_name": "Reyes", "email": "ana.reyes@example.org",
                   "phone_number": "5551234567"}
DEMO_TURNS = (  # invented data; shows the rhythm of look-up, login, paginate, answer
    ("Let me see which Spotify APIs exist.\n```python\nprint(apis.api_docs.show_api_descriptions(app_name='spotify'))\n```",
     '[{"name": "login", "description": "Login to your account."}, '
     '{"name": "show_playlist_library", "description": "Search or show a list of your playlists."}, ...]'),
    ("I need the login parameters and my password.\n```python\n"
     "print(apis.api_docs.show_api_doc(app_name='spotify', api_name='login'))\n"
     "passwords = apis.supervisor.show_account_passwords()\nprint([p['account_name'] for p in passwords])\n```",
     '{"api_name": "login", "parameters": [{"name": "username", ...}, {"name": "password", ...}], ...}\n'
     '["amazon", "spotify", "venmo"]'),
    ("```python\npassword = next(p['password'] for p in passwords if p['account_name'] == 'spotify')\n"
     "token = apis.spotify.login(username='ana.reyes@example.org', password=password)['access_token']\n"
     "playlists, page = [], 0\nwhile True:\n"
     "    batch = apis.spotify.show_playlist_library(access_token=token, page_index=page)\n"
     "    if not batch:\n        break\n    playlists += batch\n    page += 1\nprint(len(playlists))\n```",
     "7"),
    ("I have the answer.\n```python\napis.supervisor.complete_task(answer=7)\n```", "Execution successful."),
)

_CODE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)```", re.S)


def extract_code(text: str) -> Optional[str]:
    """All python code blocks of a reply, joined (the model may split one step into several)."""
    blocks = [b.strip() for b in _CODE.findall(text or "") if b.strip()]
    return "\n\n".join(blocks) if blocks else None


def truncate(text: str, limit: int) -> str:
    """The shared cut (harness/assembly.py: the τ² agent's tool results say the same), with a hint for code."""
    return cut_observation(text, limit, hint="Print less at a time to see it.")


def task_header(supervisor: dict[str, str], instruction: str) -> str:
    return (f"My name is {supervisor['first_name']} {supervisor['last_name']}. My personal email is "
            f"{supervisor['email']} and my phone number is {supervisor['phone_number']}.\nTask: {instruction}")


def demo_text() -> str:
    lines = ["Here is a worked example (an earlier task, invented data):", task_header(DEMO_SUPERVISOR, DEMO_TASK)]
    for reply, output in DEMO_TURNS:
        lines += [f"\nASSISTANT:\n{reply}", f"\nOUTPUT:\n{output}"]
    return "\n".join(lines)


def first_user_message(supervisor: dict[str, str], instruction: str, memory: str = "") -> str:
    """Instructions, the worked example, memory (ACE's place for its playbook) and the task."""
    parts = [INSTRUCTIONS, demo_text(), *([memory] if memory else []),
             "Now the real task.\n" + task_header(supervisor, instruction)]
    return "\n\n".join(parts)


def conversation(supervisor: dict[str, str], instruction: str, turns: Sequence[StepRecord]) -> list[dict[str, Any]]:
    """The memory-free chat after the system message: the first user message, then code and output."""
    messages = [{"role": "user", "content": first_user_message(supervisor, instruction)}]
    for turn in turns:
        messages.append({"role": "assistant", "content": turn.reply})
        messages.append({"role": "user", "content": f"Output:\n{turn.observation}"})
    return messages


def placed(system: str, history: list[dict[str, Any]], memory: str, placement: str, model: str,
           first_with_memory: Callable[[], str]) -> list[dict[str, Any]]:
    """[system, *history] with the memory block where `placement` says; `first_with_memory()` is the first
    user message with the block inside it (where ACE puts its playbook)."""
    if memory and placement == "after_policy":
        system = f"{system}\n\n{memory}"
    if memory and placement == "first_user_message":
        history = [{**history[0], "content": first_with_memory()}, *history[1:]]
    messages = [{"role": "system", "content": system}, *history]
    if memory and placement == "end_of_conversation":  # a user message for Claude (assembly.trailing_role)
        messages.append({"role": trailing_role(model) if model else "system", "content": memory})
    return messages


def layout(supervisor: dict[str, str], instruction: str, placement: str, model: str = "") -> assembly.Layout:
    """AppWorld's conversation for harness/assembly.py: where memory goes, what a round is, how it is summarised."""
    if placement not in PLACEMENTS:
        raise ValueError(f"placement {placement!r}; valid: {', '.join(PLACEMENTS)}")

    def place(system: str, history: list[dict[str, Any]], memory: str) -> list[dict[str, Any]]:
        return placed(system, history, memory, placement, model,
                      lambda: first_user_message(supervisor, instruction, memory))

    return assembly.Layout(place=place, split=split_rounds, summarise=summarise_rounds)


def build_messages(supervisor: dict[str, str], instruction: str, delivery: Delivery, turns: list[StepRecord],
                   placement: str = "first_user_message", model: str = "") -> list[dict[str, Any]]:
    """The chat the model sees at one step; with EMPTY delivery it is the memory-free conversation."""
    memory = "" if delivery.empty else delivery.text
    return layout(supervisor, instruction, placement, model).place(
        SYSTEM, conversation(supervisor, instruction, turns), memory)


def split_rounds(history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]], int]:
    """assembly.split_units for AppWorld: the first user message holds the task and is the only request;
    after it each unit is one round (the agent's code and its output)."""
    units: list[list[dict[str, Any]]] = []
    for m in history[1:]:
        if m.get("role") == "assistant" or not units:
            units.append([m])
        else:
            units[-1].append(m)
    return history[:1], units, -1


def summarise_rounds(messages: Sequence[dict[str, Any]]) -> str:
    """One line per folded message, made by code: the code the agent ran and the start of what it printed."""
    lines = []
    for m in messages:
        text = str(m.get("content") or "")
        if m.get("role") == "assistant":
            code = extract_code(text)
            lines.append(f"- You ran: {assembly.clip(code, assembly.SUMMARY_TEXT_CHARS)}" if code
                         else f"- You said (no code): {assembly.clip(text, assembly.SUMMARY_TEXT_CHARS)}")
        elif text.startswith("Output:\n"):
            lines.append(f"  - it printed: {assembly.clip(text[len('Output:'):], assembly.SUMMARY_RESULT_CHARS)}")
        else:
            lines.append(f"- {assembly.clip(text, assembly.SUMMARY_TEXT_CHARS)}")
    return "\n".join(lines)


# --- answer_mode=rebuild ------------------------------------------------------------------------------
def answer_only(code: Optional[str]) -> bool:
    """Whether a step does nothing but hand in an answer: one `...complete_task(answer=...)` call."""
    try:
        body = ast.parse(code or "").body
    except SyntaxError:
        return False
    if len(body) != 1 or not isinstance(body[0], ast.Expr) or not isinstance(body[0].value, ast.Call):
        return False
    call = body[0].value
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "complete_task"):
        return False
    given = [*call.args, *(k.value for k in call.keywords if k.arg == "answer")]
    return any(not (isinstance(v, ast.Constant) and v.value is None) for v in given)


REBUILD_ASK = ("Write the final step now: one ```python code block that calls "
               "apis.supervisor.complete_task(answer=...) with the answer the task asks for, taken from these "
               "outputs. Reply with that code block only.")


def rebuild_request(supervisor: dict[str, str], instruction: str, turns: Sequence[StepRecord], memory: str, *,
                    placement: str, model: str = "", omitted: int = 0) -> list[dict[str, Any]]:
    """The clean request for the answer (seed 002's answer stage, as assembly.rebuild_request on τ²): the
    system message, the instructions, memory where `placement` puts it, the task, and what each code step
    printed (already cut to max_observation_chars), raw. No worked example, no chat of code and outputs.
    `omitted`: the oldest steps left out to fit the window (context_policy=priority_drop), said so."""
    facts = [f"You ran:\n```python\n{t.code}\n```\nIt printed:\n{t.observation}" for t in turns if t.code]
    note = ([f"[the outputs of the {omitted} earliest code steps were omitted to fit the context window; they are "
             "not shown: do not guess them]"] if omitted else [])
    printed = "What your code printed while you worked on this task (raw):\n\n" + "\n\n".join([*note, *facts[omitted:]])

    def body(with_memory: str) -> str:
        return "\n\n".join([INSTRUCTIONS, *([with_memory] if with_memory else []), task_header(supervisor, instruction),
                             printed, REBUILD_ASK])

    return placed(SYSTEM, [{"role": "user", "content": body("")}], memory, placement, model, lambda: body(memory))


@dataclass
class StepRecord:
    reply: str
    code: Optional[str]
    observation: str
    working_reply: Optional[str] = None  # answer_mode=rebuild: the reply the rebuilt one replaced
    rebuild_discarded: Optional[str] = None  # a rebuilt reply that did not answer: the working one stood


@dataclass
class EpisodeResult:
    steps: list[StepRecord] = field(default_factory=list)
    completed: bool = False  # the agent called complete_task


class ReActCodeAgent:
    """Drives one task: prompt -> code -> engine -> observation, until completion or max_steps."""

    def __init__(self, client: ModelClient, strategy: Optional[Strategy], task_view: TaskView, ledger: Ledger,
                 counter: MemoryTokenCounter, *, placement: str = "first_user_message", max_steps: int = 40,
                 max_observation_chars: int = 20000, assembly_options: Optional[assembly.AssemblyOptions] = None):
        if placement not in PLACEMENTS:
            raise ValueError(f"placement {placement!r}; valid: {', '.join(PLACEMENTS)}")
        self.client, self.strategy, self.task_view = client, strategy, task_view
        self.ledger, self.counter = ledger, counter
        self.placement, self.max_steps, self.max_observation_chars = placement, max_steps, max_observation_chars
        self.opts = assembly_options or assembly.AssemblyOptions(placement=placement)
        self.result = EpisodeResult()

    def run(self, supervisor: dict[str, str], instruction: str,
            execute: Callable[[str], tuple[str, bool]]) -> EpisodeResult:
        """`execute(code) -> (output, task_completed)` is the engine; it may raise (worker death), and then
        `self.result` still holds the steps taken so far."""
        result = self.result = EpisodeResult()
        shape = layout(supervisor, instruction, self.placement, self.client.model)
        while len(result.steps) < self.max_steps:
            history = conversation(supervisor, instruction, result.steps)
            step = StepView(index=len(result.steps),
                            messages=tuple({"role": m["role"], "content": m["content"]} for m in history))
            delivery = call_strategy(self.strategy, "deliver", self.task_view, step) if self.strategy else EMPTY
            request = assembly.assemble(SYSTEM, history, delivery, placement=self.placement, model=self.client.model,
                                        policy=self.opts.context_policy, limit=self.opts.limit,
                                        measure=self._measure, strict_limit=self.opts.strict_limit, layout=shape)
            completion = self._complete(request.messages)
            self.ledger.add_agent_step(completion.usage, self.counter(request.delivery.text), request.delivery.ids,
                                       dropped_ids=delivery.dropped, context_dropped_ids=request.context_dropped,
                                       summarised_turns=request.summarised_turns)
            reply = completion.content or ""
            code = extract_code(reply)
            record = StepRecord(reply=reply, code=code, observation="")
            if self.opts.answer_mode == "rebuild" and answer_only(code) and any(t.code for t in result.steps):
                record = self._rebuild_answer(record, supervisor, instruction, request.delivery)
            if record.code is None:
                record.observation = "No ```python code block found in your reply. Reply with one code block."
                done = False
            else:
                output, done = execute(record.code)
                record.observation = truncate(output, self.max_observation_chars)
            result.steps.append(record)
            if done:
                result.completed = True
                break
        return result

    def _rebuild_answer(self, working: StepRecord, supervisor: dict[str, str], instruction: str,
                        delivery: Delivery) -> StepRecord:
        """answer_mode=rebuild: the answering step regenerated from a clean request, ledgered as phase answer.
        A rebuilt reply that is not an answer-only code block leaves the working step in place."""
        turns, memory = self.result.steps, delivery.text

        def request(omitted: int) -> list[dict[str, Any]]:
            return rebuild_request(supervisor, instruction, turns, memory, placement=self.placement,
                                   model=self.client.model, omitted=omitted)

        omitted = 0
        if self.opts.context_policy == "priority_drop" and self.opts.limit:  # the oldest outputs go first
            droppable = range(sum(1 for t in turns if t.code) - 1)  # the newest output always stays
            omitted = bisect.bisect_left(droppable, True, key=lambda k: self._measure(request(k)) <= self.opts.limit)
        completion = self._complete(request(omitted))
        self.ledger.add_agent_step(completion.usage, self.counter(memory), delivery.ids,
                                   dropped_ids=delivery.dropped, phase="answer")
        rebuilt = completion.content or ""
        code = extract_code(rebuilt)
        if not answer_only(code):
            return StepRecord(working.reply, working.code, "", rebuild_discarded=rebuilt)
        return StepRecord(rebuilt, code, "", working_reply=working.reply)

    def _complete(self, messages: list[dict[str, Any]]):
        return self.client.complete(cache_marks(messages, self.placement, self.client.model, self.opts.prompt_caching))

    def _measure(self, messages: list[dict[str, Any]]) -> int:
        return assembly.request_tokens(self.client.model, messages)
