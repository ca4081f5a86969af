"""Every command README.md and docs/*.md show in a code block, run as a reader types it, prints lines of at most 160
columns (analysis.fmt.WIDTH), error messages included; and what README.md, docs/robustness.md, docs/deciding.md and
docs/strategies.md quote of a command's output is what a fresh run prints.

The commands run in two sessions (tests/documented_session.py, which says how they are run and cut to size): this
file's, README.md and the pages before documented_session.PAGES_LATER, and tests/test_documented_outputs_later.py's,
those pages. A command is either run or named in NOT_RUN with the reason; one that is neither fails the test, as
does a rule that names no command (a stale reason). Beside the documented commands, the two refusals a reader meets
run too: two task sets (a copy of a run relabelled as tau2-bench v1.0.1's set, what `make tau2-data` would give; it
needs internet) and two runs holding the same episodes.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil

import doc_commands
import pytest
from conftest import read_records
from doc_commands import DocCommand
from documented_session import (COMMANDS, NOT_RUN, PAGES_LATER, QUOTES, Ran, Session, pages_with_commands,
                                printed_within_160_columns, quote, quoted_is_printed, run_pages, skip_reason)
from test_readme_quickstart import ROW, quoted_advice, quoted_table, success_of

pytestmark = pytest.mark.slow


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
    """The first session, and every runnable documented command's output of its pages by `file:line` (the refusals,
    and the quick start's `make table` and `make recommend` as README.md quotes them, by name)."""
    session, outputs = run_pages(tmp_path_factory, later=False)
    for r in refusals(session):
        outputs[r.where] = r
    for what, command in (("README table", quoted_table()[0]), ("README recommend", quoted_advice()[0])):
        outputs[what] = session.once(DocCommand("README.md:0", tuple(shlex.split(command))))
    return session, outputs


@pytest.fixture(scope="module")
def ran(session) -> dict[str, Ran]:
    return session[1]


def test_every_documented_command_is_run_or_named_with_its_reason():
    assert len(COMMANDS) > 80  # the extraction works: a broken parser must not pass everything
    for pattern, _ in NOT_RUN:
        assert any(re.search(pattern, " ".join(c.argv)) for c in COMMANDS), f"NOT_RUN names no command: {pattern}"
    assert sum(skip_reason(c) is None for c in COMMANDS) > 40


def test_the_two_sessions_share_out_every_page():
    """PAGES_LATER names pages that have runnable commands, and they come after the first session's pages in doc
    order (a page builds on the runs of the pages before it; README.md's quick start runs in the first)."""
    pages = pages_with_commands()
    assert set(PAGES_LATER) <= set(pages) and pages[0] == "README.md"
    assert pages[-len(PAGES_LATER):] == list(PAGES_LATER) and len(PAGES_LATER) < len(pages) - 1


def test_every_documented_command_prints_at_most_160_columns(ran):
    printed_within_160_columns(ran)
    assert sum(r.returncode == 2 for r in ran.values()) >= 2  # the refusals refused


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

# the quotes of this file's pages; tests/test_documented_outputs_later.py compares the others
MINE = [(page, marker) for page, marker in QUOTES if page not in PAGES_LATER]


def test_the_quote_markers_are_there():
    for page, marker in QUOTES:
        line, quoted = quote(page, marker)
        above = [c for c in COMMANDS if c.where.startswith(page + ":") and int(c.where.split(":")[1]) < line]
        assert len(quoted) >= 3 and above and skip_reason(above[-1]) is None, (page, marker)


@pytest.mark.parametrize("page, marker", MINE, ids=[f"{p}: {m[:30]}" for p, m in MINE])
def test_quoted_output_is_what_a_fresh_run_prints(ran, page, marker):
    quoted_is_printed(ran, page, marker)


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
