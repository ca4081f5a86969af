"""The viewer's Flask app: list, episode, compare, and the run directories' own files (and nothing else).

Flask because it is already locked, synchronous (the pages are reads of local files), ships a test client, and
renders Jinja2 templates with autoescaping on: every string from a run is escaped before it reaches the page.
"""

from __future__ import annotations

import math
from pathlib import Path
from urllib.parse import urlencode

from flask import Flask, abort, render_template, request, send_file
from jinja2 import UndefinedError

from analysis.viewer import compare, memory, trajectory
from analysis.viewer.episodes import (
    CHOICES,
    NO_ERROR,
    RANGES,
    SORTS,
    BadQuery,
    EpisodeIndex,
)


def create_app(runs: list[str | Path], index: EpisodeIndex | None = None) -> Flask:
    index = index or EpisodeIndex(runs)
    run_dirs = sorted({Path(p).resolve() for p in index.frame["run_dir"]})
    memory_roots = (Path.cwd(), *run_dirs)
    app = Flask(__name__)
    app.url_map.merge_slashes = False  # `/runs/0//etc/passwd` is refused below, not redirected
    app.config["INDEX"] = index
    app.jinja_env.globals.update(choices=CHOICES, ranges=RANGES, sorts=SORTS, no_error=NO_ERROR)

    @app.template_filter("num")
    def num(value, digits: int = 0) -> str:
        """A figure with thousands separators; '-' where a record lacks it (absent, null, nan, not a number)."""
        try:
            number = float(value)
        except (TypeError, ValueError, UndefinedError):
            return "-"
        return "-" if math.isnan(number) else f"{number:,.{digits}f}"

    @app.template_global()
    def url_with(**changes) -> str:
        """The current list URL with some parameters replaced (None removes one)."""
        params = {k: v for k, v in request.args.lists()}
        for k, v in changes.items():
            if v is None:
                params.pop(k, None)
            else:
                params[k] = [str(v)]
        return "?" + urlencode(params, doseq=True)

    @app.errorhandler(BadQuery)
    def bad_query(exc):
        return render_template("error.html", message=str(exc)), 400

    @app.get("/")
    def episode_list():
        query = {k: v for k, v in request.args.lists()}
        page = index.page(query)
        return render_template("list.html", page=page, query=query, total=len(index.frame),
                               warnings=index.warnings, runs=[str(r) for r in index.runs])

    def episode(eid: int) -> dict:
        record = index.record(eid)
        if record is None:
            abort(404, f"no episode {eid}")
        conversation = trajectory.load(record.get("run_dir", ""), record.get("trajectory"))
        steps = memory.acting(memory.steps(record))
        mem_file = memory.readable_memory(record.get("memory"), memory_roots)
        texts = memory.guidelines(mem_file) if mem_file else {}
        return {"id": eid, "record": record, "conversation": conversation, "steps": steps, "texts": texts,
                "memory_file": str(mem_file) if mem_file else None,
                "draws": trajectory.simulated_draws(conversation),
                "run_index": run_dirs.index(Path(record["run_dir"]).resolve())}

    @app.get("/episode/<int:eid>")
    def episode_page(eid: int):
        ep = episode(eid)
        others = index.same_episode(eid).to_dict("records")
        return render_template("episode.html", ep=ep, others=others)

    @app.get("/compare")
    def compare_page():
        try:
            a, b = int(request.args["a"]), int(request.args["b"])
        except (KeyError, ValueError):
            raise BadQuery("compare needs two episode ids: /compare?a=<id>&b=<id>") from None
        ea, eb = episode(a), episode(b)
        turns_a = ea["conversation"].step_turns if ea["conversation"] else {}
        turns_b = eb["conversation"].step_turns if eb["conversation"] else {}
        rows = compare.align(turns_a, turns_b, ea["steps"], eb["steps"])
        only_a, only_b = compare.delivered_difference(ea["steps"], eb["steps"])
        return render_template("compare.html", a=ea, b=eb, rows=rows, divergence=compare.first_divergence(rows),
                               only_a=only_a, only_b=only_b)

    @app.get("/runs/<int:run>/<path:relative>")
    def run_file(run: int, relative: str):
        """A file of a given run directory; any path that leaves it (`..`, a link out) is refused."""
        if not 0 <= run < len(run_dirs):
            abort(404)
        path = trajectory.inside(run_dirs[run], relative)
        if path is None:
            abort(403, "outside the run directories")
        if not path.is_file():
            abort(404)
        return send_file(path, mimetype="application/json" if path.suffix in (".json", ".jsonl") else None)

    return app
