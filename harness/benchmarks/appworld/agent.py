"""A ReAct code agent for AppWorld, in the style of AppWorld's official one (our own wording).

The model reads instructions, one worked example, its supervisor's profile and the task; it answers
with Python in a code block; the engine runs the code and the printed output is the next
observation. API docs are not in the prompt: the model looks them up through `apis.api_docs`.
Memory comes from the strategy at EVERY step and is placed where `benchmark.placement` says:
  first_user_message  (default; ACE's AppWorld layout) inside the first user message, re-sent each step
  after_policy        at the end of the system message
  end_of_conversation as the last message of each call (cache-hostile, for comparison)
Each step is the shared agent step (harness/assembly/step.py, docs/request-assembly.md), as on τ²: with
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

from harness.assembly.layout import Layout, place
from harness.assembly.observations import cut_observation
from harness.assembly.options import MAX_OBSERVATION_CHARS, AssemblyOptions, check
from harness.assembly.step import AgentStep
from harness.assembly.summary import SUMMARY_RESULT_CHARS, SUMMARY_TEXT_CHARS, clip
from harness.ledger import Ledger, MemoryTokenCounter
from harness.serving.model_client import ModelClient
from strategies import Delivery, Strategy, TaskView

DEFAULT_PLACEMENT = "first_user_message"  # ACE's AppWorld layout: the playbook in the first user message
POLICY_GAP = "\n\n"  # between the system text and a memory block placed after it

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
    ("Let me see which Spotify APIs exist.\n```python\n"
     "print(apis.api_docs.show_api_descriptions(app_name='spotify'))\n```",
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


def truncate(text: str, limit: Optional[int]) -> str:
    """The shared cut (harness/assembly/observations.py: τ²'s tool results say the same), with a hint for code."""
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


def layout(supervisor: dict[str, str], instruction: str, placement: str, model: str = "") -> Layout:
    """AppWorld's conversation for the assembly: memory placed by assembly's `place` (in the first user message,
    where ACE puts its playbook, it sits between the worked example and the task), what a round is, and how
    folded rounds are summarised."""
    check(placement)

    def placed(system: str, history: list[dict[str, Any]], memory: str) -> list[dict[str, Any]]:
        return place(system, history, memory, placement, model, policy_gap=POLICY_GAP,
                     into_first_user=lambda _first, block: first_user_message(supervisor, instruction, block))

    return Layout(place=placed, split=split_rounds, summarise=summarise_rounds)


def build_messages(supervisor: dict[str, str], instruction: str, delivery: Delivery, turns: list[StepRecord],
                   placement: str = DEFAULT_PLACEMENT, model: str = "") -> list[dict[str, Any]]:
    """The chat the model sees at one step; with EMPTY delivery it is the memory-free conversation."""
    memory = "" if delivery.empty else delivery.text
    return layout(supervisor, instruction, placement, model).place(
        SYSTEM, conversation(supervisor, instruction, turns), memory)


def split_rounds(history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[list[dict[str, Any]]], int]:
    """assembly's split_units for AppWorld: the first user message holds the task and is the only request;
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
            lines.append(f"- You ran: {clip(code, SUMMARY_TEXT_CHARS)}" if code
                         else f"- You said (no code): {clip(text, SUMMARY_TEXT_CHARS)}")
        elif text.startswith("Output:\n"):
            lines.append(f"  - it printed: {clip(text[len('Output:'):], SUMMARY_RESULT_CHARS)}")
        else:
            lines.append(f"- {clip(text, SUMMARY_TEXT_CHARS)}")
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
    """The clean request for the answer (seed 002's answer stage, as assembly's rebuild_request on τ²): the
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

    return place(SYSTEM, [{"role": "user", "content": body("")}], memory, placement, model, policy_gap=POLICY_GAP,
                 into_first_user=lambda _first, block: body(block))


@dataclass
class StepRecord:
    reply: str
    code: Optional[str]
    observation: str
    working_reply: Optional[str] = None  # answer_mode=rebuild: the reply the rebuilt one replaced
    rebuild_discarded: Optional[str] = None  # a rebuilt reply that did not answer: the working one stood
    memory: bool = False  # a memory-tool call the step answered (docs/memory-tools.md): the engine never ran it


@dataclass
class EpisodeResult:
    steps: list[StepRecord] = field(default_factory=list)
    completed: bool = False  # the agent called complete_task


class ReActCodeAgent:
    """Drives one task: prompt -> code -> engine -> observation, until completion or max_steps. Each step is
    the shared AgentStep; placement and the output cut come from `assembly_options` (AppWorld's defaults when
    None: memory in the first user message, outputs cut at MAX_OBSERVATION_CHARS)."""

    def __init__(self, client: ModelClient, strategy: Optional[Strategy], task_view: TaskView, ledger: Ledger,
                 counter: MemoryTokenCounter, *, max_steps: int = 40,
                 assembly_options: Optional[AssemblyOptions] = None):
        self.opts = assembly_options or AssemblyOptions(placement=DEFAULT_PLACEMENT,
                                                        max_observation_chars=MAX_OBSERVATION_CHARS)
        self.client, self.max_steps = client, max_steps
        self.step = AgentStep(client, strategy, task_view, ledger, counter, self.opts, tool_format="code")
        self.result = EpisodeResult()

    def run(self, supervisor: dict[str, str], instruction: str,
            execute: Callable[[str], tuple[str, bool]]) -> EpisodeResult:
        """`execute(code) -> (output, task_completed)` is the engine; it may raise (worker death), and then
        `self.result` still holds the steps taken so far."""
        result = self.result = EpisodeResult()
        shape = layout(supervisor, instruction, self.opts.placement, self.client.model)
        while len(result.steps) < self.max_steps:
            history = conversation(supervisor, instruction, result.steps)
            request, completion = self.step.take(len(result.steps), SYSTEM, history, shape)
            for call, answer in zip(self.step.exchange_messages[::2], self.step.exchanges):  # answered by memory
                result.steps.append(StepRecord(call["content"] or "", extract_code(call["content"]), answer.answer,
                                               memory=True))
            reply = completion.content or ""
            code = extract_code(reply)
            record = StepRecord(reply=reply, code=code, observation="")
            if self.opts.answer_mode == "rebuild" and answer_only(code) and any(t.code for t in result.steps):
                record = self._rebuild_answer(record, supervisor, instruction, request.assembled.delivery)
            if record.code is None:
                record.observation = "No ```python code block found in your reply. Reply with one code block."
                done = False
            else:
                output, done = execute(record.code)
                record.observation = truncate(output, self.opts.max_observation_chars)
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
            return rebuild_request(supervisor, instruction, turns, memory, placement=self.opts.placement,
                                   model=self.client.model, omitted=omitted)

        omitted, limit = 0, self.opts.limit
        if self.opts.context_policy == "priority_drop" and limit:  # the oldest outputs go first
            droppable = range(sum(1 for t in turns if t.code) - 1)  # the newest output always stays
            omitted = bisect.bisect_left(droppable, True, key=lambda k: self.step.measure(request(k)) <= limit)
        completion = self.step.answer(request(omitted), delivery)
        rebuilt = completion.content or ""
        code = extract_code(rebuilt)
        if not answer_only(code):
            return StepRecord(working.reply, working.code, "", rebuild_discarded=rebuilt)
        return StepRecord(rebuilt, code, "", working_reply=working.reply)
