"""`python -m analysis.viewer RUN_DIR... [--port N]` (`make view RUNS=... [RUNS2=...]`): serve the viewer.

Binds 127.0.0.1 only. The port: --port when given, else 8765 (the port `make report`'s links name) when it is
free, else any free port; the URL is printed. Bad input (no run, no records): one line, exit 2.
"""

from __future__ import annotations

import socket
import sys
import time

from werkzeug.serving import make_server

from analysis import fmt
from analysis.runs.load import RunsOverlap
from analysis.runs.named import runs_named
from analysis.viewer.app import create_app
from analysis.viewer.episodes import EpisodeIndex

HOST = "127.0.0.1"
DEFAULT_PORT = 8765  # analysis/report.py VIEWER_URL


def free_port(preferred: int) -> int:
    with socket.socket() as s:
        try:
            s.bind((HOST, preferred))
            return preferred
        except OSError:
            s.bind((HOST, 0))
            return s.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    parser = fmt.CommandParser("view", prog="python -m analysis.viewer", description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="*", help="run directories (or folders holding them)")
    parser.add_argument("--port", type=int, default=None, help=f"port on {HOST} (default {DEFAULT_PORT} if free)")
    args = parser.parse_args(argv)
    if not runs_named("view", args.runs):
        return 2
    started = time.perf_counter()
    try:
        index = EpisodeIndex(args.runs)
    except (FileNotFoundError, ValueError, RunsOverlap) as exc:
        fmt.refuse("view", exc)
        return 2
    for line in index.warnings:
        print(f"warning: {line}", file=sys.stderr)
    port = args.port if args.port is not None else free_port(DEFAULT_PORT)
    try:
        server = make_server(HOST, port, create_app(args.runs, index), threaded=True)
    except OSError as exc:
        fmt.refuse("view", f"cannot listen on {HOST}:{port} ({exc})")
        return 2
    print(f"{len(index.frame)} episodes loaded in {time.perf_counter() - started:.1f} s", flush=True)
    print(f"viewer: http://{HOST}:{server.port}/  (Ctrl-C stops it)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
