"""The documented commands' session: every command README.md and docs/*.md show in a code block (tests/doc_commands.py:
fenced and indented blocks, `make ...` and lines that start Python), run as a reader types it, in doc order, in a
fresh copy of the checkout (tests/test_readme_quickstart.py's copy, environments linked), so that a later step finds
what an earlier one wrote under runs/. Two test files each run one session over their own pages (`PAGES_LATER`), so
that `make test`'s workers (whole files each, --dist loadfile) run the two halves side by side: the first,
tests/test_documented_outputs.py, README.md and the pages before the cut; the second,
tests/test_documented_outputs_later.py, the rest. To keep each to a few minutes:
- sizes are cut where the command lets a reader choose them: LIMIT / benchmark.limit above SMALL to SMALL, TRIALS /
  benchmark.trials above 2 to 2; the commands whose output a doc quotes run as written (QUOTED);
- RUN / run_name gets the doc's name in front (`README-sim-strong`), and one is given where the doc leaves the
  Makefile's timestamp, so that two pages' runs never share a folder; `runs/<name>` in a later command is the run
  made under that name, and a run no block here makes (`runs/<run>`, `runs/pilot`, one of a command not run) is
  the latest made one (`RUNS="runs/a runs/b"`: the latest two);
- `make` runs with -s: its echo of each recipe line is the command itself, not output.
A command is either run or named in NOT_RUN with the reason.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import shlex
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import doc_commands
import pytest
from conftest import HUNG_S, SAMPLE_MEMORY
from doc_commands import DocCommand
from test_readme_quickstart import fresh_copy, stale_setup_parts

from analysis.fmt import WIDTH

COMMANDS = doc_commands.block_commands()
SMALL = 3
# what docs/robustness.md quotes from these commands' output: they run at the documented size
# and README.md's quick start, whose quoted table and recommendation test_readme_quickstart_prints_what_it_quotes holds
QUOTED = ("RUN=sim-harm", "RUN=sim-aa", "RUN=sim-strong-2", "RUN=sim-strong", "RUN=sim-small", "RUN=field",
          "RUN=orders", "docs/deciding.md:RUN=seq-small")  # page: only that page's command (README's is cut)
NOT_RUN: tuple[tuple[str, str], ...] = (
    (r"^make (setup|test|lock|clean-venv)$", "builds, tests or removes the environment (make test runs this file)"),
    (r"MODEL=openai/|REFLECTOR=openai/|model=litellm|\+experiment=ibm_tau2 memory=<",
     "needs an API key: a hosted model"),
    (r"^make sweep$|MODEL=local|\+experiment=assembly memory=",
     "the local llama.cpp model (the default model): minutes per episode (tests/test_local_model.py)"),
    (r"^make (appworld-data|tau2-data)|benchmark\.data_dir=\.cache/tau2-data|BENCH=appworld",
     "needs internet: AppWorld's or tau2-bench's data"),
    (r"^make view ", "starts the viewer, a server that runs until stopped (tests/test_viewer.py)"),
    (r"^make bench|python bench/", "a timing benchmark: minutes to hours (docs/performance.md)"),
    (r"^make selfcheck$", "plays every τ² task with the oracle, minutes (tests/test_selfcheck.py)"),
    (r"executor=ray|hydra/launcher=", "starts Ray or a Hydra launcher (tests/test_ray_executor.py, test_launchers.py)"),
)


def skip_reason(cmd: DocCommand) -> str | None:
    line = " ".join(cmd.argv)
    return next((why for pattern, why in NOT_RUN if re.search(pattern, line)), None)


@dataclass
class Ran:
    command: str  # as run
    where: str
    returncode: int
    output: str  # stdout and stderr


def _cut(key: str, value: str, quoted: bool) -> str:
    if quoted or not value.isdigit():
        return value
    if key in ("LIMIT", "benchmark.limit"):
        return str(min(int(value), SMALL))
    return str(min(int(value), 2)) if key in ("TRIALS", "benchmark.trials") else value


class Session:
    """The copy and the runs made in it (name as documented -> folder)."""

    def __init__(self, root: Path, made: dict[str, str], mine: list[str]):
        self.root, self.made, self.mine = root, made, mine  # made: name -> folder; mine: the folders, in order
        self.seen: dict[tuple[str, ...], Ran] = {}

    def once(self, cmd: DocCommand) -> Ran:
        """The command run (`make simulated-memory` on several pages, README's recommend: run once)."""
        argv = self.prepared(cmd)
        if tuple(argv) not in self.seen:
            self.seen[tuple(argv)] = self.run(argv, cmd.where)
        return self.seen[tuple(argv)]

    def run_ref(self, text: str, latest: int = 0) -> str:
        """`runs/<name>...` -> the folder made under that name, or the `latest`-th most recent one."""
        def sub(m: re.Match) -> str:
            name = m.group(1)
            if name in self.made:
                return self.made[name]
            return self.mine[-1 - latest] if len(self.mine) > latest else m.group(0)
        return re.sub(r"runs/(?!memory/)([^/\s\"']+)", sub, text, count=1)

    def prepared(self, cmd: DocCommand) -> list[str]:
        stem = Path(cmd.where.split(":")[0]).stem
        line = cmd.where.split(":")[1]
        page = cmd.where.split(":")[0]
        quoted = any(q.removeprefix(f"{page}:") in cmd.argv for q in QUOTED)
        out, named, optional = [], None, False
        for word in cmd.argv:
            if word.startswith("[") and (word.endswith("...]") or not word.endswith("]")):
                optional = not word.endswith("]")  # `[MODEL=...]`, `[--memory PATH]`: an optional part left out
                continue
            if optional:
                optional = not word.endswith("]")
                continue
            key, sep, value = word.strip("[]").partition("=")
            if not sep:
                out.append(self.run_ref(key) if key.startswith("runs/") else key)
                continue
            if key in ("RUN", "run_name"):
                named, value = value, f"{stem}-{value}"
            elif key in ("LIMIT", "TRIALS", "benchmark.limit", "benchmark.trials"):
                value = _cut(key, value, quoted)
            elif key in ("MEMORY", "memory") and "path/to/" in value:
                value = str(SAMPLE_MEMORY)
            elif key in ("RUNS", "PILOT", "FILE", "FROM"):  # `RUNS="runs/a runs/b"`: two different runs
                value = " ".join(self.run_ref(v, i) for i, v in enumerate(value.split()))
            out.append(f"{key}={value}")
        makes_run = out[:2] in (["make", "sweep"], ["make", "aa"]) or "harness.run" in out
        if makes_run and named is None:
            named = f"{line}"
            out.append(f"RUN={stem}-{line}" if out[0] == "make" else f"run_name={stem}-{line}")
        if named is not None:  # a sweep's, or make import-tau2's RUN=
            self.made[named] = f"runs/{stem}-{named}"
            self.mine.append(self.made[named])
        return out

    def run(self, argv: list[str], where: str) -> Ran:
        """A command as a shell runs it; one whose every line (`make -n`) is `python -m harness.run`, an analysis
        module or an echo runs in this process instead, from the copy (the same code, as `python -m` runs it; it
        saves an interpreter, LiteLLM and pandas per command: minutes over the module)."""
        lines = in_process_lines(argv, self.root)
        if lines is not None:
            return self.in_process(argv, lines, where)
        if argv[0] == "make":
            argv = ["make", "-s", *argv[1:]]
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        done = subprocess.run(shlex.join(argv), shell=True, cwd=self.root, env=env, capture_output=True, text=True,
                              timeout=HUNG_S)
        return Ran(shlex.join(argv), where, done.returncode, done.stdout + done.stderr)

    def in_process(self, argv: list[str], lines: list[list[str]], where: str) -> Ran:
        printed = io.StringIO()
        here, environ, args = os.getcwd(), dict(os.environ), sys.argv
        os.chdir(self.root)  # the paths are the copy's
        for key in [k for k in os.environ if k.endswith("_API_KEY")]:  # as the shell's environment above
            del os.environ[key]
        if argv[0] == "make":  # what make puts in its recipes' environment
            os.environ.update(doc_commands.make_exports())
        try:
            code = _mains(lines, printed)
        finally:
            os.chdir(here)
            os.environ.clear()
            os.environ.update(environ)
            sys.argv = args
        return Ran(shlex.join(argv), where, code, printed.getvalue())


# modules run in this process: ones that start no child process printing to this process's stdout (the memory
# builders run their collection through harness.run's entry in their own process)
IN_PROCESS = re.compile(r"^(harness\.run|harness\.waves|harness\.memory\..+|harness\.import_tau2|analysis\..+)$")


def _mains(lines: list[list[str]], printed: io.StringIO) -> int:
    code = 0
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        for words in lines:
            if words[0] == "echo":
                print(" ".join(words[1:]))
                continue
            try:
                code = _main(words[2], words[3:])
            except SystemExit as exc:  # argparse, or a main that exits
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if code:
                break
    return code


def _main(module: str, args: list[str]) -> int:
    """What `python -m module args` runs: the module's main (harness.run's hands Hydra its arguments in sys.argv)."""
    sys.argv = [module, *args]
    return importlib.import_module(module).main(args) or 0


def in_process_lines(argv: list[str], root: Path) -> list[list[str]] | None:
    """The lines a command runs (a make target's, from `make -n`) when each is `python -m` of a module IN_PROCESS
    or an echo; None when it runs anything else."""
    if argv[0] == "make":
        shown = subprocess.run(["make", "-n", "-s", "--no-print-directory", "-o", "setup", *argv[1:]], cwd=root,
                               capture_output=True, text=True, timeout=HUNG_S, check=False)
        if shown.returncode:
            return None
        joined = re.sub(r"\\\n\s*", " ", shown.stdout)  # a recipe line continued
        try:
            lines = [shlex.split(line) for line in joined.splitlines() if line.strip()]
        except ValueError:  # a shell script (make plan)
            return None
    else:
        lines = [argv]
    python = [w for w in lines if w[0] != "echo"]
    ok = all(len(w) > 2 and w[0].endswith("python") and w[1] == "-m" and IN_PROCESS.match(w[2]) for w in python)
    return lines if python and ok else None


# A quoted output: the block after these words (fenced or indented) quotes the output of the last command of the
# page's code blocks above them, run in the session above (at the documented size: QUOTED). Not compared here:
# robustness.md's measured robustness table (its sweep is 1,040 episodes, half an hour on 2 shared cores; the
# shape it shows is held by tests/test_robustness.py), and deciding.md's table of `make table` rows of two runs
# with different memory artifacts (made by hand, tests/test_cell_identity.py holds the labels).
QUOTES = (("docs/robustness.md", "As `make tables` prints it (model column left out"),
          ("docs/robustness.md", "`make aa` prints, with each seed's and the pair's task flip rate"),
          ("docs/deciding.md", "`make recommend` prints (measured, the commands above; the banner"),
          ("docs/deciding.md", "Today the same two oracle tasks print"),
          ("docs/strategies.md", "That sweep (run `field`"),
          ("docs/strategies.md", "this printed, under the strategies table (whose `tasks×k` reads 20×3"),
          ("docs/deciding.md", "**The acceptance runs** (measured, the commands above"))
def quote(page: str, marker: str) -> tuple[int, list[str]]:
    """(line of the marker, the quoted lines) of the first code block after the marker."""
    lines = (doc_commands.REPO / page).read_text(encoding="utf-8").splitlines()
    at = next(i for i, line in enumerate(lines) if marker in line)
    start = next(i for i in range(at + 1, len(lines)) if lines[i].startswith(("```", "    ")))
    if lines[start].startswith("```"):
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
        return at + 1, lines[start + 1:end]
    end = next((i for i in range(start, len(lines)) if lines[i].strip() and not lines[i].startswith("    ")),
               len(lines))
    return at + 1, [line[4:] for line in lines[start:end]]


def without_first_column(printed: list[str]) -> list[str]:
    """Every line of a plain table (header, dashes, rows) also without its first column ('model column left out')."""
    out = []
    for i in range(len(printed) - 1):
        if re.match(r"^-+  -", printed[i + 1]):
            cut = len(printed[i + 1].split("  ")[0]) + 2
            out += [row[cut:] for row in printed[i:] if row.strip()][:200]
    return out


# The second session's pages: the pages from docs/robustness.md on (doc order), whose commands took 205 of the 482
# CPU seconds of all of them (2026-12-07); the pages before them, the README's quick start first, run in the first.
# Each page's `runs/<run>` names a run of its own page, made in the same session.
PAGES_LATER = ("docs/robustness.md", "docs/running.md", "docs/simulated-world.md", "docs/strategies.md",
               "docs/tau2-files.md", "docs/viewer.md", "strategies/README.md")


def pages_with_commands() -> list[str]:
    return list(dict.fromkeys(c.where.split(":")[0] for c in COMMANDS if skip_reason(c) is None))


def run_pages(tmp_path_factory: pytest.TempPathFactory, later: bool) -> tuple[Session, dict[str, Ran]]:
    """A fresh copy of the checkout and, in doc order, every runnable documented command of the first session's
    pages (`later`: the second's) run in it; each command's output by `file:line: argv` (str(DocCommand))."""
    here = stale_setup_parts(doc_commands.REPO)
    if here:
        message = f"documented outputs NOT CHECKED: `make setup` is not up to date here ({', '.join(here)})"
        warnings.warn(message, stacklevel=2)
        pytest.skip(message)
    root = fresh_copy(tmp_path_factory.mktemp("docs") / "memdeliv")
    assert not stale_setup_parts(root), "the copy must see this checkout's setup state (modification times kept)"
    session = Session(root, {}, [])
    outputs = {str(cmd): session.once(cmd) for cmd in COMMANDS  # in doc order: a page builds on those before it
               if skip_reason(cmd) is None and (cmd.where.split(":")[0] in PAGES_LATER) == later}
    return session, outputs


def printed_within_160_columns(ran: dict[str, Ran]) -> None:
    """Every command exited 0 or 2 (a refusal) with no traceback, and printed no line over WIDTH columns."""
    too_wide, failed = [], []
    for r in {id(r): r for r in ran.values()}.values():
        lines = r.output.splitlines()
        if r.returncode not in (0, 2) or "Traceback" in r.output:
            failed.append(f"{r.where}: {r.command}: exit {r.returncode}\n{r.output[-1500:]}")
        too_wide += [f"{r.where}: {r.command}\n  {len(line)}: {line[:150]}..." for line in lines if len(line) > WIDTH]
    assert not failed, "\n".join(failed)
    assert not too_wide, "\n".join(too_wide)


def quoted_is_printed(ran: dict[str, Ran], page: str, marker: str) -> None:
    """The block after the marker quotes what the last command of the page's code blocks above it printed."""
    line, quoted = quote(page, marker)
    command = [c for c in COMMANDS if c.where.startswith(page + ":") and int(c.where.split(":")[1]) < line][-1]
    r = ran[str(command)]
    printed = r.output.splitlines()
    missing = doc_commands.unquoted(quoted, printed + without_first_column(printed))
    assert not missing, f"{page}:{line}: quoted, not printed by `{r.command}`:\n" + "\n".join(missing) + \
        "\n--- printed:\n" + r.output[-6000:]
