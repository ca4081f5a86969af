"""The viewer on a large run: load time and page times for N episodes (docs/viewer.md states the result).

`python bench/viewer_scale.py [--records 10000] [--source RUN_DIR]` writes a generated run of N records into a
temporary folder: the source run's records repeated, each copy under its own trial number so every record is
its own episode. It times building the viewer's index (what `make view` does before it prints its URL) and
serving the list's pages: the first page, a strategy filter, a sort by tokens on a late page, a combined filter.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from analysis.viewer.app import create_app
from analysis.viewer.episodes import EpisodeIndex
from harness.row import RESULTS, read_rows
from harness.store import RunStore

SOURCE = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "runs" / "oracle_retail"
PAGES = ("/", "/?strategy=full", "/?sort=tokens&desc=1&page=100", "/?success=false&error=none&tokens_min=10000")


def generate(source: Path, n: int, out: Path) -> None:
    rows = [row for _, row in read_rows(source / RESULTS)]  # the harness's one reader of results.jsonl
    trials = 1 + max(row.episode[1] for row in rows)
    copies = ((i // len(rows), rows[i % len(rows)]) for i in range(n))
    RunStore(out).append_many((replace(row, trial=copy * trials + row.episode[1]) for copy, row in copies))


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
