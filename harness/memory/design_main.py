"""The command line a design's train builder shares (harness/memory/reasoning_bank.py, workflows.py,
cheatsheet.py): `--name NAME [options] -- RUN OVERRIDES`, the collection run, then the design's build; bad input
is one line and exit 2."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Optional

from foundation.terminal import wrap
from harness.memory.build import BuildError, collect, split_argv

Build = Callable[[Path, Path, argparse.Namespace], str]  # (collection run, artifact, args) -> the line to print


def builder_main(argv: list[str] | None, *, prog: str, doc: Optional[str], design: str, default_out: Path,
                 build: Build, model_help: str = "LiteLLM model for its calls (default: the run's)",
                 extra: Callable[[argparse.ArgumentParser], object] = lambda parser: None) -> int:
    ours, overrides = split_argv(argv)
    parser = argparse.ArgumentParser(prog=prog, description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--name", required=True, help="collection run = runs/memory/NAME")
    parser.add_argument("--model", help=model_help)
    extra(parser)
    parser.add_argument("--no-collect", action="store_true", help="use the stored run as it is")
    parser.add_argument("--runs-dir", default="runs")
    parser.add_argument("--out", help=f"artifact path (default runs/memory/NAME/{default_out})")
    args = parser.parse_args(ours)
    run_dir = Path(args.runs_dir) / "memory" / args.name
    try:
        if not args.no_collect:
            collect(args.name, overrides, args.runs_dir)
        line = build(run_dir, Path(args.out) if args.out else run_dir / default_out, args)
    except BuildError as exc:
        print(f"memdeliv: {design}: {exc}", file=sys.stderr)
        return 2
    print(wrap(line))
    return 0
