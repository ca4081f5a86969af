"""Tables name the consolidation mode of the memory a row used (ALTK-Evolve's none | lossless | lossy), read from
the artifact's `_meta`; lossless, the default, adds nothing. Hand-made records, no sweep."""

from __future__ import annotations

import json

from analysis import load_records
from analysis.runs.load import family
from harness.runner.job import file_digest
from strategies import Guideline
from memory_kit.memory_file import save_memory


def test_each_consolidation_mode_is_its_own_row(tmp_path):
    rows = []
    for name, meta in {"lossy": {"consolidation": "lossy", "lossy_target": 8}, "kept": {"consolidation": "none"},
                       "lossless": {"consolidation": "lossless"}, "old": {"consolidation": "altk"}}.items():
        art = tmp_path / f"{name}.jsonl"
        save_memory(art, [Guideline(id="g1", text="Check the order first.")], {"kind": "learned", **meta})
        rows.append({"job": name, "task_id": "0", "success": True, "strategy": "full", "memory": str(art),
                     "memory_provenance": "held-out"})
    rows.append({"job": "base", "task_id": "0", "success": False, "strategy": "none", "memory": rows[0]["memory"],
                 "memory_provenance": None})  # none names the sweep's memory but does not use it
    rows.append({"job": "gone", "task_id": "0", "success": True, "strategy": "full",
                 "memory": str(tmp_path / "missing.jsonl"), "memory_provenance": "held-out"})
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    jobs = {r["job"]: {"memory": {"path": r["memory"], "sha256_16": file_digest(r["memory"])}} for r in rows}
    (run / "manifest.json").write_text(json.dumps({"jobs": jobs}))  # what the store records when a job starts
    labels = dict(zip(*load_records([run])[["job", "strategy"]].values.T))
    # three artifacts with the default consolidation: each its own row, told apart by its artifact id (the one
    # whose file was already gone when it ran recorded none: `mem unknown`)
    plain = {k: labels.pop(k) for k in ("lossless", "old", "gone")}
    assert labels == {"lossy": "full [lossy, target 8]", "kept": "full [no consolidation]", "base": "none"}
    assert len(set(plain.values())) == 3 and all(v.startswith("full [mem ") for v in plain.values())
    assert plain["gone"] == "full [mem unknown]"
    assert family(labels["lossy"]) == "full"
