"""The viewer on a large run: load time and page times for N episodes (docs/viewer.md states the result).

`python bench/viewer_scale.py [--records 10000] [--source RUN_DIR]` writes a generated run of N records into a
temporary folder: the source run's records repeated, each copy under its own trial number so every record is
its own episode. It times building the viewer's index (what `make view` does before it prints its URL) and
serving the list's pages: the first page, a strategy filter, a sort by tokens on a late page, a combined filter.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from analysis.viewer.app import create_app
from analysis.viewer.episodes import EpisodeIndex

SOURCE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "runs" / "oracle_retail"
PAGES = ("/", "/?strategy=full", "/?sort=tokens&desc=1&page=100", "/?success=false&error=none&tokens_min=10000")


def generate(source: Path, n: int, out: Path) -> None:
    rows = [json.loads(line) for line in (source / "results.jsonl").read_text().splitlines() if line.strip()]
    trials = 1 + max(int(r.get("trial", 0)) for r in rows)
    with (out / "results.jsonl").open("w") as f:
        for i in range(n):
            row = dict(rows[i % len(rows)])
            row["trial"] = (i // len(rows)) * trials + int(row.get("trial", 0))
            f.write(json.dumps(row) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--source", type=Path, default=SOURCE)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        generate(args.source, args.records, Path(tmp))
        started = time.perf_counter()
        index = EpisodeIndex([tmp])
        load_s = time.perf_counter() - started
        client = create_app([tmp], index).test_client()
        print(f"{len(index.frame)} episodes: index built in {load_s:.2f} s")
        for url in PAGES:
            started = time.perf_counter()
            reply = client.get(url)
            print(f"  {url}: HTTP {reply.status_code} in {1000 * (time.perf_counter() - started):.0f} ms")


if __name__ == "__main__":
    main()
