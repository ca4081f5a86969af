"""Engine workers for AppWorld: one process per concurrent task slot, restarted when one dies.

The harness never imports AppWorld: it starts `worker.py` with the AppWorld venv's Python
and speaks JSON lines to it (the worker module says why). A worker that dies, hangs past its
deadline or answers garbage is killed and dropped; the episode that used it is recorded as an infra
error and the next episode gets a fresh worker. `close()` stops every worker (the runner calls it
at the end of a job, and an atexit hook covers an interrupted process).
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, cast

from harness.serving.faults import InfraError

WORKER_SCRIPT = Path(__file__).with_name("worker.py")
_PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ")  # model keys never reach agent-run code


class WorkerError(InfraError):
    """The engine process died, hung, or broke the protocol."""


class EngineError(RuntimeError):
    """The engine answered, with an error (bad task id, evaluation crash): the worker stays usable."""


class Worker:
    """One AppWorld process with its own scratch root (experiment outputs never touch the data root)."""

    def __init__(self, python: Path, data_dir: Path, cache_dir: Path):
        self.scratch = Path(tempfile.mkdtemp(prefix="memdeliv-appworld-"))
        (self.scratch / "data").symlink_to(data_dir.resolve(), target_is_directory=True)
        self.log_path = self.scratch / "worker.log"
        env = {k: os.environ[k] for k in _PASSED_ENV if k in os.environ}
        env.update(APPWORLD_ROOT=str(self.scratch), APPWORLD_CACHE=str(cache_dir.resolve()), PYTHONUNBUFFERED="1")
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen([str(python), str(WORKER_SCRIPT)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=log, cwd=self.scratch, env=env)
        self._stdin, self._stdout = cast(IO[bytes], self.proc.stdin), cast(IO[bytes], self.proc.stdout)  # PIPEs
        self._buffer = b""

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, op: str, timeout_s: float, **args: object) -> Any:
        if not self.alive:
            raise WorkerError(f"AppWorld worker {self.pid} is not running{self._log_tail()}")
        try:
            self._stdin.write((json.dumps({"op": op, **args}) + "\n").encode())
            self._stdin.flush()
            line = self._readline(timeout_s)
        except (BrokenPipeError, OSError) as exc:
            self.kill()
            raise WorkerError(f"AppWorld worker {self.pid} died during {op!r} ({exc}){self._log_tail()}") from None
        if line is None:
            self.kill()
            raise WorkerError(f"AppWorld worker {self.pid} gave no answer to {op!r} within {timeout_s:.0f} s; "
                              f"killed{self._log_tail()}")
        try:
            reply = json.loads(line)
        except json.JSONDecodeError:
            self.kill()
            raise WorkerError(f"AppWorld worker {self.pid} broke the protocol: {line[:200]!r}") from None
        if not reply.get("ok"):
            raise EngineError(f"{reply.get('error')}\n{reply.get('trace', '')}".strip())
        return reply.get("result")

    def _readline(self, timeout_s: float) -> str | None:
        """One reply line, or None at the deadline; EOF (the process died) raises OSError."""
        deadline = time.monotonic() + timeout_s
        fd = self._stdout.fileno()
        with selectors.DefaultSelector() as sel:
            sel.register(fd, selectors.EVENT_READ)
            while b"\n" not in self._buffer:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    return None
                chunk = os.read(fd, 1 << 16)
                if not chunk:
                    code = self.proc.wait(timeout=5)
                    raise OSError(f"exit code {code}")
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", errors="replace")

    def _log_tail(self, limit: int = 1500) -> str:
        try:
            text = self.log_path.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            return ""
        return f"\n--- worker log (tail) ---\n{text[-limit:]}" if text else ""

    def stop(self, grace_s: float = 5.0) -> None:
        if self.alive:
            try:
                self._stdin.write(b'{"op": "shutdown"}\n')
                self._stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(timeout=grace_s)
            except subprocess.TimeoutExpired:
                self.kill()
        self._cleanup()

    def kill(self) -> None:
        if self.alive:
            self.proc.send_signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def _cleanup(self) -> None:
        for stream in (self._stdin, self._stdout):
            try:
                stream.close()
            except OSError:
                pass
        shutil.rmtree(self.scratch, ignore_errors=True)


class WorkerPool:
    """Idle workers wait here between episodes; a thread takes one, or starts one, for each episode."""

    def __init__(self, python: Path, data_dir: Path, cache_dir: Path, start_timeout_s: float = 300.0):
        self.python, self.data_dir, self.cache_dir = python, data_dir, cache_dir
        self.start_timeout_s = start_timeout_s
        self._idle: list[Worker] = []
        self._all: list[Worker] = []
        self._lock = threading.Lock()
        self.started = 0  # workers started over the pool's life (restarts included)
        atexit.register(self.close)

    def _start(self) -> Worker:
        worker = Worker(self.python, self.data_dir, self.cache_dir)
        with self._lock:
            self._all.append(worker)
            self.started += 1
        try:
            worker.request("hello", self.start_timeout_s)
        except Exception:
            self._drop(worker)
            raise
        return worker

    def _drop(self, worker: Worker) -> None:
        worker.kill()
        worker.stop()
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)

    @contextmanager
    def lease(self) -> Iterator[Worker]:
        with self._lock:
            worker = self._idle.pop() if self._idle else None
        if worker is None or not worker.alive:
            if worker is not None:
                self._drop(worker)
            worker = self._start()
        try:
            yield worker
        finally:
            if worker.alive:
                with self._lock:
                    self._idle.append(worker)
            else:
                self._drop(worker)

    def pids(self) -> list[int]:
        with self._lock:
            return [w.pid for w in self._all if w.alive]

    def close(self) -> None:
        with self._lock:
            workers, self._all, self._idle = list(self._all), [], []
        threads = [threading.Thread(target=w.stop) for w in workers]  # each exit takes a moment: in parallel
        for t in threads:
            t.start()
        for t in threads:
            t.join()
