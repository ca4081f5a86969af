"""Provider prompt caching, engaged and priced: cache reads and writes from the provider's own usage block.

Two FAKE providers on 127.0.0.1 (stdlib http.server): an Anthropic-compatible /v1/messages that reports
`cache_read_input_tokens` / `cache_creation_input_tokens`, and an OpenAI-compatible /chat/completions that
reports `prompt_tokens_details.cached_tokens`. Each keeps the request bodies it received.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import litellm
import pytest

from harness import assembly
from harness.ledger import Ledger
from harness.serving.model_client import ModelClient

ANTHROPIC_MODEL = "anthropic/claude-sonnet-4-5"
OPENAI_MODEL = "openai/gpt-4o"
READ, WRITE, FRESH, OUT = 3000, 1200, 40, 20  # Anthropic: input_tokens excludes both cache figures
OA_PROMPT, OA_CACHED = 5000, 4096


class FakeProvider(BaseHTTPRequestHandler):
    bodies: list = []

    def log_message(self, *args):  # keep test output clean
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).bodies.append({"path": self.path, "body": body})
        if self.path.endswith("/messages"):
            reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
                     "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn", "stop_sequence": None,
                     "usage": {"input_tokens": FRESH, "output_tokens": OUT, "cache_read_input_tokens": READ,
                               "cache_creation_input_tokens": WRITE}}
        else:
            reply = {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                     "choices": [{"index": 0, "finish_reason": "stop",
                                  "message": {"role": "assistant", "content": "ok"}}],
                     "usage": {"prompt_tokens": OA_PROMPT, "completion_tokens": OUT,
                               "total_tokens": OA_PROMPT + OUT,
                               "prompt_tokens_details": {"cached_tokens": OA_CACHED}}}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def server():
    FakeProvider.bodies = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FakeProvider)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def test_anthropic_cache_reads_and_writes_are_recorded_marked_and_priced(server):
    messages = [{"role": "system", "content": "POLICY\n<learned_guidelines>...</learned_guidelines>"},
                {"role": "user", "content": "hi"}]
    marked = assembly.cache_marks(messages, "after_policy", ANTHROPIC_MODEL)
    client = ModelClient(ANTHROPIC_MODEL, {"api_base": server, "api_key": "sk-test", "max_tokens": 64},
                         max_retries=0)
    usage = client.complete(marked).usage
    sent = FakeProvider.bodies[-1]
    assert sent["path"].endswith("/v1/messages")
    system = sent["body"]["system"]
    assert isinstance(system, list) and system[-1]["cache_control"] == {"type": "ephemeral"}
    assert usage.cached_tokens == READ and usage.cache_write_tokens == WRITE
    info = litellm.get_model_info(ANTHROPIC_MODEL)
    assert info["cache_read_input_token_cost"] < info["input_cost_per_token"] < info["cache_creation_input_token_cost"]
    expected = (FRESH * info["input_cost_per_token"] + READ * info["cache_read_input_token_cost"]
                + WRITE * info["cache_creation_input_token_cost"] + OUT * info["output_cost_per_token"])
    assert usage.cost_usd == pytest.approx(expected, rel=1e-6)
    ledger = Ledger()
    ledger.add_agent_step(usage, 0, [])
    ledger.add_agent_step(usage, 0, [])
    totals = ledger.record_fields()
    assert totals["usage"]["agent"]["cached"] == 2 * READ and totals["cache_write_tokens"] == 2 * WRITE
    assert totals["step_usage"][0]["cache_write_tokens"] == WRITE


def test_openai_cached_tokens_are_recorded_and_priced_at_the_cache_rate(server):
    client = ModelClient(OPENAI_MODEL, {"api_base": server, "api_key": "sk-test"}, max_retries=0)
    usage = client.complete([{"role": "system", "content": "POLICY"}, {"role": "user", "content": "hi"}]).usage
    assert "cache_control" not in json.dumps(FakeProvider.bodies[-1]["body"])  # nothing to mark for OpenAI
    assert usage.prompt_tokens == OA_PROMPT and usage.cached_tokens == OA_CACHED and not usage.cache_write_tokens
    info = litellm.get_model_info(OPENAI_MODEL)
    expected = ((OA_PROMPT - OA_CACHED) * info["input_cost_per_token"]
                + OA_CACHED * info["cache_read_input_token_cost"] + OUT * info["output_cost_per_token"])
    assert usage.cost_usd == pytest.approx(expected, rel=1e-6)
