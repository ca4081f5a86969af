"""Every command README.md and docs/*.md show in a code block, run as a reader types it, prints lines of at most 160
columns (analysis.fmt.WIDTH), error messages included; and what docs/robustness.md and docs/deciding.md quote of
a command's output is what a fresh run prints.

The commands (tests/doc_commands.py: fenced and indented blocks, `make ...` and lines that start Python) run in
doc order in one fresh copy of the checkout (tests/test_readme_quickstart.py's copy, environments linked), so that
a later step finds what an earlier one wrote under runs/. To keep the whole module to a few minutes:
- sizes are cut where the command lets a reader choose them: LIMIT / benchmark.limit above SMALL to SMALL, TRIALS /
  benchmark.trials above 2 to 2; the commands whose output a doc quotes run as written (QUOTED);
- RUN / run_name gets the doc's name in front (`README-sim-strong`), and one is given where the doc leaves the
  Makefile's timestamp, so that two pages' runs never share a folder; `runs/<name>` in a later command is the run
  made under that name, and a run no block here makes (`runs/<run>`, `runs/pilot`, one of a command not run) is
  the latest made one (`RUNS="runs/a runs/b"`: the latest two);
- `make` runs with -s: its echo of each recipe line is the command itself, not output.
A command is either run or named in NOT_RUN with the reason; one that is neither fails the test, as does a rule
that names no command (a stale reason). Beside the documented commands, the two refusals a reader meets run too:
two task sets (a copy of a run relabelled as tau2-bench v1.0.1's set, what `make tau2-data` would give; it needs
internet) and two runs holding the same episodes.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from dataclasses import dataclass
from pathlib import Path

import doc_commands
import pytest
from conftest import HUNG_S, SAMPLE_MEMORY, read_records
from doc_commands import DocCommand
from test_readme_quickstart import ROW, fresh_copy, quoted_advice, quoted_table, stale_setup_parts, success_of

from analysis.fmt import WIDTH

pytestmark = pytest.mark.slow

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


def refusals(session: Session) -> list[Ran]:
    """Two task sets, and two runs holding the same episodes, as `make table` refuses them."""
    source = session.root / session.made["oracle-demo"]
    copy = source.with_name("copy-of-oracle-demo")
    shutil.copytree(source, copy)
    relabelled = source.with_name("v101-oracle-demo")
    relabelled.mkdir()
    rows = [json.loads(line) for line in (source / "results.jsonl").read_text().splitlines() if line.strip()]
    rows = [r | {"task_set": {**r["task_set"], "tasks_sha256": "1f" * 32, "known_as": "tau2-bench v1.0.1 retail",
                              "source": str(session.root / ".cache/tau2-data/v1.0.1/data/tau2/domains/retail")}}
            for r in rows if r["strategy"] == "full"]
    (relabelled / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    runs = {"two task sets": [source, relabelled], "the same episodes twice": [source, copy]}
    return [session.run(["make", "table", f"RUNS={' '.join(map(str, pair))}"], what) for what, pair in runs.items()]


@pytest.fixture(scope="module")
def session(tmp_path_factory) -> tuple[Session, dict[str, Ran]]:
    """The session, and every runnable documented command's output by `file:line` (the refusals, and the quick
    start's `make table` and `make recommend` as README.md quotes them, by name)."""
    here = stale_setup_parts(doc_commands.REPO)
    if here:
        message = f"documented outputs NOT CHECKED: `make setup` is not up to date here ({', '.join(here)})"
        warnings.warn(message, stacklevel=2)
        pytest.skip(message)
    root = fresh_copy(tmp_path_factory.mktemp("docs") / "memdeliv")
    assert not stale_setup_parts(root), "the copy must see this checkout's setup state (modification times kept)"
    session = Session(root, {}, [])
    outputs: dict[str, Ran] = {}
    seen: dict[tuple[str, ...], Ran] = {}

    def once(cmd: DocCommand) -> Ran:  # `make simulated-memory` on several pages, README's recommend: run once
        argv = session.prepared(cmd)
        if tuple(argv) not in seen:
            seen[tuple(argv)] = session.run(argv, cmd.where)
        return seen[tuple(argv)]

    for cmd in COMMANDS:  # README.md first: the pages build on its runs
        if skip_reason(cmd) is None:
            outputs[str(cmd)] = once(cmd)
    for r in refusals(session):
        outputs[r.where] = r
    for what, command in (("README table", quoted_table()[0]), ("README recommend", quoted_advice()[0])):
        outputs[what] = once(DocCommand("README.md:0", tuple(shlex.split(command))))
    return session, outputs


@pytest.fixture(scope="module")
def ran(session) -> dict[str, Ran]:
    return session[1]


def test_every_documented_command_is_run_or_named_with_its_reason():
    assert len(COMMANDS) > 80  # the extraction works: a broken parser must not pass everything
    for pattern, _ in NOT_RUN:
        assert any(re.search(pattern, " ".join(c.argv)) for c in COMMANDS), f"NOT_RUN names no command: {pattern}"
    assert sum(skip_reason(c) is None for c in COMMANDS) > 40


def test_every_documented_command_prints_at_most_160_columns(ran):
    too_wide, failed = [], []
    for r in {id(r): r for r in ran.values()}.values():
        lines = r.output.splitlines()
        if r.returncode not in (0, 2) or "Traceback" in r.output:
            failed.append(f"{r.where}: {r.command}: exit {r.returncode}\n{r.output[-1500:]}")
        too_wide += [f"{r.where}: {r.command}\n  {len(line)}: {line[:150]}..." for line in lines if len(line) > WIDTH]
    assert not failed, "\n".join(failed)
    assert not too_wide, "\n".join(too_wide)
    assert sum(r.returncode == 2 for r in ran.values()) >= 2  # the refusals refused


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
# Every other block that shows what a command printed, and why no fresh run here compares it. A quoted block that is
# neither here, nor in QUOTES, nor README.md's quick start fails test_every_quoted_output_is_compared: a quote no
# test compares goes stale unseen (docs/strategies.md's table did).
NOT_COMPARED = (
    ("docs/controls.md", "make tables RUNS=runs/sim-controls", "two sweeps of 800 episodes each at the quoted size; "
     "tests/test_controls.py holds each printed CI to its planted value over 20 seeded draws of the same size"),
    ("docs/controls.md", "The small profile, whose long block hurts", "the same, for the small profile"),
    ("docs/cost.md", "and prints (header trimmed)", "a plan of a hosted model's prices (`make plan` runs here at "
     "a small size; tests/test_plan.py holds its figures)"),
    ("docs/cost.md", "The job then ends with a line such as", "a hosted model's budget stop: needs a key "
     "(tests/test_budget.py prints the same line on a scripted model)"),
    ("docs/cost.md", "job and the projected total", "a hosted model's progress line: needs a key "
     "(tests/test_progress.py)"),
    ("docs/deciding.md", "**What it saves, and what it costs**", "bench/sequential.py's 200 seeds per case (minutes); "
     "tests/test_sequential_calibration.py asserts the same on 40"),
    ("docs/deciding.md", "The strong profile (`make sweep MODEL=simulated", "a sweep named in prose, not run here at "
     "its size (320 episodes); tests/test_sequential_calibration.py holds the strong profile's decision"),
    ("docs/memory-tools.md", "list says it for the episodes a filter matches", "printed by tests/test_on_demand.py's "
     "scripted run, which asserts these lines"),
    ("docs/deciding.md", "the second run holding `full` only", "rows of two runs made by hand with different memory "
     "artifacts (tests/test_cell_identity.py holds the labels)"),
    ("docs/local-model.md", "a reply is either a plain message", "the format the model is asked to write, not an "
     "output"),
    ("docs/store.md", "each after the model's usual retries, the job stops", "a closed port's stop line "
     "(tests/test_unreachable_provider.py prints it)"),
)


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


def test_the_quote_markers_are_there():
    for page, marker in QUOTES:
        line, quoted = quote(page, marker)
        above = [c for c in COMMANDS if c.where.startswith(page + ":") and int(c.where.split(":")[1]) < line]
        assert len(quoted) >= 3 and above and skip_reason(above[-1]) is None, (page, marker)


@pytest.mark.parametrize("page, marker", QUOTES, ids=[f"{p}: {m[:30]}" for p, m in QUOTES])
def test_quoted_output_is_what_a_fresh_run_prints(ran, page, marker):
    line, quoted = quote(page, marker)
    command = [c for c in COMMANDS if c.where.startswith(page + ":") and int(c.where.split(":")[1]) < line][-1]
    r = ran[str(command)]
    printed = r.output.splitlines()
    missing = doc_commands.unquoted(quoted, printed + without_first_column(printed))
    assert not missing, f"{page}:{line}: quoted, not printed by `{r.command}`:\n" + "\n".join(missing) + \
        "\n--- printed:\n" + r.output[-6000:]


def test_readme_quickstart_prints_what_it_quotes(session):
    """README.md's quick start (tests/test_readme_quickstart.py reads it): the quoted table rows and `make recommend`
    lines are printed exactly, and what the README promises shows: the planted effect (strong: full beats none;
    small: full loses to none), the oracle solves every task, and recommend's decision is the planted truth."""
    docs, ran = session
    table, advice = ran["README table"], ran["README recommend"]
    assert table.returncode == 0 and advice.returncode == 0, table.output[-2000:] + advice.output[-2000:]
    quoted_rows = quoted_table()[1]
    printed_rows = [line.rstrip() for line in table.output.splitlines() if ROW.match(line)]
    assert success_of(printed_rows) == success_of(quoted_rows), "README.md's quoted table is stale (success)"
    assert printed_rows == quoted_rows, "README.md's quoted table is stale:\n" + "\n".join(printed_rows)

    printed = [line.rstrip() for line in advice.output.splitlines()]
    said = {line.split(":")[0]: line for line in printed if line.startswith(("Observed success", "Recommended: "))}
    for line in quoted_advice()[1]:
        if line.startswith(("Observed success", "Recommended: ")):
            key = line.split(":")[0]
            assert said.get(key, "").startswith(line.removesuffix("(...)")), f"README: {line}\nprinted: {said.get(key)}"
        else:  # as printed, or cut short with (...)
            assert not doc_commands.unquoted([line], printed), f"README's line is not printed:\n{line}\n{advice.output}"

    rates = {}
    for name in ("sim-strong", "sim-small", "oracle-demo"):
        records = read_records(docs.root / docs.made[name])
        for strategy in {r["strategy"] for r in records}:
            mine = [r for r in records if r["strategy"] == strategy and r.get("error") != "infra"]
            rates[name, strategy] = sum(r["success"] for r in mine) / len(mine)
    assert rates["sim-strong", "full"] > rates["sim-strong", "none"]
    assert rates["sim-small", "full"] < rates["sim-small", "none"]
    assert rates["oracle-demo", "none"] == 1.0
    # the planted truth at margin 5: full is 14 points above core_retrieval and 31 above none
    assert "SIMULATED" in advice.output and "Recommended: full" in advice.output, advice.output
    assert not re.search(r"Recommended: (none|core_retrieval)\b", advice.output)


def quoted_blocks() -> list[tuple[str, int]]:
    """(page, line) of every block in README.md and docs/ that shows output: a fenced block with no language
    whose lines are not commands, and an indented block of prose pages that follows a line ending in ':' and
    holds no command."""
    found = []
    for path in doc_commands.DOCS[:-1]:  # strategies/README.md shows code, no output
        page, lines = str(path.relative_to(doc_commands.REPO)), path.read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("```"):
                end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
                body = [line for line in lines[i + 1:end] if line.strip()]
                if lines[i].strip() == "```" and body and not all(_is_command(line) for line in body):
                    found.append((page, i + 1))
                i = end + 1
                continue
            if lines[i].startswith("    ") and lines[i].strip() and i and not lines[i - 1].strip():
                before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
                end = next((j for j in range(i, len(lines)) if lines[j].strip() and not lines[j].startswith("    ")),
                           len(lines))
                body = [line for line in lines[i:end] if line.strip()]
                if before.rstrip().endswith(":") and not before.lstrip().startswith(("-", "*", "1", "2", "3", "4")) \
                        and not any(_is_command(line.strip()) for line in body):
                    found.append((page, i + 1))
                i = end
                continue
            i += 1
    return found


def _is_command(line: str) -> bool:
    return bool(re.match(r"^\s*(make |\.venv|python|\[|#|[A-Z_]+=\S* +(make|\.venv))", line))


def _block_after(page: str, marker: str) -> int:
    """The line of the first quoted block after the marker's line (as `quote` reads it)."""
    lines = (doc_commands.REPO / page).read_text(encoding="utf-8").splitlines()
    at = next((i + 1 for i, line in enumerate(lines) if marker in line), None)
    assert at is not None, f"{page}: no line holds {marker!r}"
    return min((line for where, line in quoted_blocks() if where == page and line > at), default=0)


def test_every_quoted_output_is_compared_or_named_with_its_reason():
    readme = doc_commands.REPO / "README.md"
    text = readme.read_text(encoding="utf-8").splitlines()
    quickstart = {("README.md", i + 1) for i, line in enumerate(text) if line == "```" and i + 1 < len(text)
                  and (text[i + 1].startswith(("Rates:", "Observed success")))}
    compared = {(page, _block_after(page, marker)) for page, marker in QUOTES} | quickstart
    exempt = {(page, _block_after(page, marker)) for page, marker, _ in NOT_COMPARED}
    assert len(quickstart) == 2 and not compared & exempt
    blocks = quoted_blocks()
    assert len(blocks) >= 15  # the finder works: a broken one must not pass everything
    unregistered = [f"{page}:{line}" for page, line in blocks if (page, line) not in compared | exempt]
    assert not unregistered, ("quoted output that no test compares with a fresh run: add it to QUOTES (and its run "
                              "to QUOTED) or to NOT_COMPARED with the reason:\n" + "\n".join(unregistered))
    stale = sorted((compared | exempt) - set(blocks))
    assert not stale, f"QUOTES / NOT_COMPARED name no quoted block: {stale}"
