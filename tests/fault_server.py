"""FAKE OpenAI chat-completions provider for tests: a real HTTP server on 127.0.0.1 that injects faults.

It plays both sides of a τ² episode from the tasks' gold actions (the scripted oracle's logic, as a
server): the simulated user opens with a ticket naming its task, which is how the agent's requests,
which carry nothing task-specific, are matched to a script. Requests are answered in arrival order from
`schedule`: each entry is a fault kind for one request, and once the schedule is used up every request
gets a valid reply. Kinds:

  429       rate limited, with `Retry-After: <retry_after>`
  500, 503  server errors
  stall     no answer until the client's timeout has passed (the thread waits on an event, so it ends
            promptly on stop())
  malformed a 200 whose body is not JSON
  empty     a 200 with an empty choice list
  echo500   a 500 whose body echoes the request's Authorization header (a provider that leaks the key)
  400filter, 400reject        a 400 from a content filter / a 400 refusing the request for another reason
  400overflow-<provider>      a 400 with that provider's over-length message (anthropic, vllm, gemini, bedrock,
                              bedrock-tokens, llamacpp), as the provider words it
  401, 404  a bad key / a model that does not exist

`default` is the kind served once the schedule is used up ("ok"; a test may set it on a running server).

A strategy's own calls (a learner's judge, extractor, curator, inducer; ACE's Reflector and Curator) are told apart
by their system prompt (`learner_reply`, tests/learner_replies.py) and served from `learner_schedule` (then
`learner_default`) instead, so a test can fail the learner's calls and none of the agent's.
"""

from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from harness.scripted.oracle import _agent_turn, _user_turn

# 400 bodies in each provider's own shape and words (what LiteLLM passes on in the error's message)
BODIES_400 = {
    "400filter": {"error": {"message": "The response was filtered due to the prompt triggering Azure OpenAI's "
                            "content management policy. Please modify your prompt and retry.", "type": None,
                            "param": "prompt", "code": "content_filter", "status": 400}},
    "400reject": {"error": {"message": "Invalid parameter: messages with role 'tool' must be a response to a "
                            "preceding message with 'tool_calls'.", "type": "invalid_request_error",
                            "param": "messages", "code": None}},
    "400overflow-anthropic": {"type": "error", "error": {
        "type": "invalid_request_error", "message": "prompt is too long: 208310 tokens > 200000 maximum"}},
    "400overflow-vllm": {"object": "error", "message": "This model's maximum context length is 8192 tokens. However, "
                         "you requested 9100 tokens (8844 in the messages, 256 in the completion). Please reduce "
                         "the length of the messages or completion.", "type": "BadRequestError", "param": None,
                         "code": 400},
    "400overflow-gemini": {"error": {"code": 400, "status": "INVALID_ARGUMENT", "message": "The input token count "
                                     "(1234567) exceeds the maximum number of tokens allowed (1048576)."}},
    "400overflow-bedrock": {"message": "Input is too long for requested model."},
    "400overflow-bedrock-tokens": {"message": "Too many input tokens. Max input tokens: 8192, request input token "
                                              "count: 9100"},
    "400overflow-llamacpp": {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 9100,
                                       "n_ctx": 8192, "message": "the request exceeds the available context size, "
                                                                 "try increasing it"}},
}
STATUS_BODIES = {
    "401": {"error": {"message": "Incorrect API key provided.", "type": "invalid_request_error",
                      "code": "invalid_api_key"}},
    "404": {"error": {"message": "The model `fault-agent` does not exist or you do not have access to it.",
                      "type": "invalid_request_error", "code": "model_not_found"}},
}
FAULTS = ("429", "500", "503", "stall", "malformed", "empty", "echo500", *BODIES_400, *STATUS_BODIES)
_TICKET = re.compile(r"\(ticket ([^)]+)\)")


class FaultServer:
    def __init__(self, scripts: dict[str, dict[str, Any]], scenarios: dict[str, str], schedule: list[str] = (),
                 retry_after: float = 1.0, stall_s: float = 5.0, port: int = 0,
                 learner_reply: Any = None, learner_schedule: list[str] = ()):
        """scripts: task id -> oracle script; scenarios: task id -> the user scenario text (in the user's prompt);
        port: 0 = any free one; learner_reply: (system, prompt) -> the reply text of a strategy's own call, None
        for any other request."""
        self.scripts, self.scenarios = scripts, scenarios
        self.schedule = list(schedule)
        self.learner_reply = learner_reply
        self.learner_schedule = list(learner_schedule)
        self.learner_default = "ok"
        self.retry_after, self.stall_s = retry_after, stall_s
        self.default = "ok"  # served once the schedule is used up
        self.log: list[dict[str, Any]] = []  # one entry per request: at, kind, role (agent | user)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
                server._handle(self, body)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fault-server", daemon=True)

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def __enter__(self) -> "FaultServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def stop(self) -> None:
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def injected(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for entry in self.log:
            if entry["kind"] != "ok":
                out[entry["kind"]] = out.get(entry["kind"], 0) + 1
        return out

    # --- one request ------------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        learner = self._learner_text(body)
        with self._lock:
            if learner is not None:
                kind = self.learner_schedule.pop(0) if self.learner_schedule else self.learner_default
            else:
                kind = self.schedule.pop(0) if self.schedule else self.default
            self.log.append({"at": time.monotonic(), "kind": kind, "auth": h.headers.get("authorization", ""),
                             "role": "learner" if learner is not None else self._role(body)})
        if learner is not None and kind == "ok":
            return _send(h, 200, _text_reply(body, learner))
        if kind == "429":
            return _send(h, 429, {"error": {"message": "rate limited", "type": "rate_limit_error"}},
                         {"Retry-After": f"{self.retry_after:g}"})
        if kind in ("500", "503"):
            return _send(h, int(kind), {"error": {"message": "upstream trouble", "type": "server_error"}})
        if kind == "echo500":
            auth = h.headers.get("authorization", "")
            key = auth.split(" ", 1)[-1]
            return _send(h, 500, {"error": {"message": f"request auth was {auth} (key {key})", "type": "server_error"}})
        if kind == "stall":
            self._stop.wait(self.stall_s)
            return _send(h, 200, self._reply(body))  # too late: the client has given up (a broken pipe is fine)
        if kind == "malformed":
            return _send_raw(h, 200, b'{"id": "x", "choices": [{"message": ')
        if kind == "empty":
            return _send(h, 200, {**_envelope(body), "choices": []})
        if kind in BODIES_400:
            return _send(h, 400, BODIES_400[kind])
        if kind in STATUS_BODIES:
            return _send(h, int(kind), STATUS_BODIES[kind])
        return _send(h, 200, self._reply(body))

    def _learner_text(self, body: dict[str, Any]) -> str | None:
        if self.learner_reply is None:
            return None
        messages = body.get("messages") or []
        system = next((str(m.get("content") or "") for m in messages if m.get("role") == "system"), "")
        return self.learner_reply(system, str(messages[-1].get("content") or "") if messages else "")

    def _user_task(self, body: dict[str, Any]) -> str | None:
        """The task id when the request is the simulated user's (its system prompt holds the scenario), else None."""
        messages = body.get("messages") or []
        system = str(messages[0].get("content") or "") if messages else ""
        return next((tid for tid, text in self.scenarios.items() if text and text in system), None)

    def _role(self, body: dict[str, Any]) -> str:
        return "agent" if self._user_task(body) is None else "user"

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        messages = body.get("messages") or []
        user_task = self._user_task(body)
        if user_task is not None:  # the simulated user: open with the ticket, then as the oracle's user
            script = {**self.scripts[user_task], "opening": f"Hi, I need help with a request (ticket {user_task})."}
            message = {"role": "assistant", "content": _user_turn(messages, script)}
        else:  # the agent: its conversation holds the user's ticket
            first = " ".join(str(m.get("content") or "") for m in messages if m.get("role") == "user")
            match = _TICKET.search(first)
            script = self.scripts[match.group(1)] if match else {"gold_calls": [], "final_message": "?"}
            message = _agent_turn(messages, script)
        text = message.get("content") or json.dumps(message.get("tool_calls"))
        prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4 + 1
        return {**_envelope(body), "choices": [{"index": 0, "message": message,
                                                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                "usage": {"prompt_tokens": prompt, "completion_tokens": len(text) // 4 + 1,
                          "total_tokens": prompt + len(text) // 4 + 1}}


def _text_reply(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {**_envelope(body), "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                                            "finish_reason": "stop"}]}


def _envelope(body: dict[str, Any]) -> dict[str, Any]:
    return {"id": "chatcmpl-fault", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "fault"),
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _send(h: BaseHTTPRequestHandler, status: int, doc: dict[str, Any], headers: dict[str, str] | None = None) -> None:
    _send_raw(h, status, json.dumps(doc).encode(), headers)


def _send_raw(h: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
    try:
        h.send_response(status)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def scripts_for(cfg: Any) -> tuple[dict[str, dict[str, Any]], dict[str, str]]:
    """The oracle scripts and user scenarios of a config's tasks (what the server plays from)."""
    from harness import benchmarks

    bench = benchmarks.create(cfg.benchmark)
    tasks = bench.tasks()
    return ({t.id: bench.oracle_script(t) for t in tasks}, {t.id: str(t.user_scenario) for t in tasks})
