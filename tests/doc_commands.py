"""The commands the docs tell a user to type, extracted from README.md, docs/*.md and strategies/README.md.

Code blocks (fenced or indented) and inline `code` spans (one may run over a line break, as Markdown allows); a
line ending in a backslash continues; `a && b` is two commands; `# ...` is a comment. A command is a `make` line or
a `python -m harness.run` line; `python_commands()` lists every line that starts a Python interpreter (`python -m
...`, `python some/script.py`). The Makefile is read for its targets and the variables it uses, and `make -n`
prints the exact harness.run line a make command runs.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from conftest import HUNG_S

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "strategies" / "README.md"]
_FENCE = re.compile(r"^```.*?$(.*?)^```", re.DOTALL | re.MULTILINE)
_INLINE = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)  # a span closes on as many backticks
_INTERPRETER = re.compile(r"^(?:\S*/)?python(?:3(?:\.\d+)?)?$")
_ENV_ASSIGNMENT = re.compile(r"^[A-Z_][A-Z0-9_]*=")
_TARGET = re.compile(r"^([A-Za-z0-9_.\-]+(?:\s+[A-Za-z0-9_.\-]+)*)\s*:(?!=)", re.MULTILINE)
_VAR_USE = re.compile(r"\$[({]([A-Za-z_][A-Za-z0-9_]*)")
_HARNESS_RUN = re.compile(r"(?:^|\s)(?:\S*python3?)\s+-m\s+harness\.run\b")
_WAVES = re.compile(r"(?:^|\s)(?:\S*python3?)\s+-m\s+harness\.waves\b")


@dataclass(frozen=True)
class DocCommand:
    where: str  # file:line
    argv: tuple[str, ...]

    @property
    def is_make(self) -> bool:
        return self.argv[0] == "make"

    def __str__(self) -> str:
        return f"{self.where}: {' '.join(self.argv)}"


def _code_lines(text: str, inline: bool = True) -> list[tuple[int, str]]:
    """(line number, text) of every code line: fenced and indented blocks, then (`inline`) inline spans of prose."""
    out: list[tuple[int, str]] = []
    fenced: set[int] = set()
    for m in _FENCE.finditer(text):
        first = text.count("\n", 0, m.start(1)) + 1
        for i, line in enumerate(m.group(1).split("\n")):
            out.append((first + i, line))
            fenced.add(first + i)
        fenced.add(first - 1)
        fenced.add(first + m.group(1).count("\n"))
    prose: list[str] = []
    for n, line in enumerate(text.split("\n"), 1):
        if n in fenced:
            line = ""
        elif line.startswith("    ") and line.strip():
            out.append((n, line))
            line = ""
        prose.append(line)
    if not inline:
        return out
    joined = "\n".join(prose)
    for paragraph in re.finditer(r"(?:^.*\S.*$\n?)+", joined, re.MULTILINE):
        first = joined.count("\n", 0, paragraph.start()) + 1
        for m in _INLINE.finditer(paragraph.group(0)):
            if len(m.group(1)) == 1:  # ``` in prose names a fence, it is no command
                n = first + paragraph.group(0).count("\n", 0, m.start())
                out.append((n, " ".join(m.group(2).split())))
    return out


def _joined(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for n, line in lines:
        if pending is not None:
            n, line = pending[0], pending[1] + " " + line.strip()
        if line.rstrip().endswith("\\"):
            pending = (n, line.rstrip()[:-1])
            continue
        pending = None
        out.append((n, line))
    return out


def _parts(inline: bool = True, docs: list[Path] = DOCS) -> list[tuple[str, list[str]]]:
    """(file:line, words) of every command the docs show (`inline`: in prose spans too): `a && b` is two."""
    found = []
    for path in docs:
        for n, line in _joined(_code_lines(path.read_text(encoding="utf-8"), inline)):
            line = re.sub(r"<[^<>]*>", lambda m: m.group(0).replace(" ", "_"), line)  # `<model or config>`
            try:
                words = shlex.split(line, comments=True)
            except ValueError:  # an unbalanced quote in prose
                continue
            parts: list[list[str]] = [[]]
            for w in words:
                if w in ("&&", ";", "||"):
                    parts.append([])
                else:
                    parts[-1].append(w)
            found += [(f"{path.relative_to(REPO)}:{n}", part) for part in parts]
    return found


def commands() -> list[DocCommand]:
    found = []
    for where, part in _parts():
        part = [w.strip("[]") for w in part if w]  # `[MODEL=...]`: an optional argument
        if part and part[0] == "make" and len(part) > 1:
            found.append(DocCommand(where, tuple(part)))
        elif _HARNESS_RUN.search(" ".join(part)):
            at = part.index("harness.run")
            found.append(DocCommand(where, ("harness.run", *part[at + 1:])))
    return found


def block_commands(docs: list[Path] = DOCS) -> list[DocCommand]:
    """The commands of code blocks (fenced or indented), as typed: `make ...` lines and lines that start Python
    (after `VAR=value` assignments, which are kept); comments dropped."""
    found = []
    for where, part in _parts(inline=False, docs=docs):
        words = [w for w in part if w]
        body = list(words)
        while body and _ENV_ASSIGNMENT.match(body[0]):
            body = body[1:]
        if len(body) > 1 and (body[0] == "make" or _INTERPRETER.match(body[0])):
            found.append(DocCommand(where, tuple(words)))
    return found


def python_commands() -> list[DocCommand]:
    """Every command that starts a Python interpreter (after `VAR=value` assignments): `python -m module ...` or
    `python path/to/script.py ...`; argv from the interpreter on. A word inside `$(...)` counts too."""
    found = []
    for where, part in _parts():
        part = [w.lstrip("$(").rstrip(")") for w in part]
        while part and _ENV_ASSIGNMENT.match(part[0]):
            part = part[1:]
        if len(part) > 1 and _INTERPRETER.match(part[0]) and (part[1] == "-m" or part[1].endswith(".py")):
            found.append(DocCommand(where, tuple(part)))
    return found


def makefile() -> tuple[set[str], set[str]]:
    """(targets, variables the Makefile uses) of the repository's Makefile."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    targets = {t for m in _TARGET.finditer(text) for t in m.group(1).split() if not t.startswith(".")}
    return targets, set(_VAR_USE.findall(text))


def make_exports() -> dict[str, str]:
    """What the Makefile exports to its recipes' environment (`export NAME := value`)."""
    text = (REPO / "Makefile").read_text(encoding="utf-8")
    return dict(_EXPORT.findall(text))


_EXPORT = re.compile(r"^export\s+(\w+)\s*:?=\s*(.*?)\s*$", re.M)


def make_split(cmd: DocCommand) -> tuple[list[str], dict[str, str]]:
    """(targets, VAR=value assignments) of a make command."""
    targets, assigned = [], {}
    for word in cmd.argv[1:]:
        if "=" in word:
            key, value = word.split("=", 1)
            assigned[key] = value
        elif not word.startswith("-") and word not in ELIDED:
            targets += word.split("|")  # `make table|tables|report`: any of them
    return targets, assigned


ELIDED = ("...", "…")  # "and the rest of your command": `make ... POOL=1`, `harness.run -m ... executor=ray`


def harness_run_argv(cmd: DocCommand, cwd: Path) -> list[str]:
    """The harness.run arguments `make -n` shows for a make command (nothing is run; `setup` is not remade)."""
    args = [a for a in cmd.argv[1:] if a not in ELIDED]
    proc = subprocess.run(["make", "-n", "--no-print-directory", "-o", "setup", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=HUNG_S, check=False)
    assert proc.returncode == 0, f"{cmd}: make -n failed: {proc.stderr.strip()}"
    for line in proc.stdout.splitlines():
        if _HARNESS_RUN.search(line):
            words = shlex.split(line)
            return words[words.index("harness.run") + 1:]
        if _WAVES.search(line):  # a sequential sweep (UNTIL=decided): its waves check the sweep as harness.run -m
            words = shlex.split(line)
            return ["-m", *words[words.index("harness.waves") + 1:]]
    raise AssertionError(f"{cmd}: `make -n` shows no harness.run line:\n{proc.stdout}")


ELLIPSES = ("(...)", "...", "…")  # a quoted line cut short: what precedes it must start a printed line


def unquoted(quoted: list[str], printed: list[str]) -> list[str]:
    """The quoted lines a command's printed lines do not hold: each quoted line is printed as it stands, or, ending in
    an ellipsis, starts a printed line (trailing spaces never count)."""
    printed = [line.rstrip() for line in printed]
    missing = []
    for line in (q.rstrip() for q in quoted if q.strip()):
        cut = next((line.removesuffix(e).rstrip() for e in ELLIPSES if line.endswith(e)), None)
        if not (any(p.startswith(cut) for p in printed) if cut is not None else line in printed):
            missing.append(line)
    return missing
