"""Report writing: a study's section of docs/benchmarks.md, a README block, tables.

Each study owns the text between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``
and rewrites it with its results, the command that produced them, the commit and
the machine, so re-running one study never disturbs another's figures.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

from harness.provenance import ROOT, command_line, commit, machine

DOC = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
HEADER = """# Benchmarks

Figures written by the scripts in `benchmarks/`; each section says which command,
commit and machine produced it. Ratios are measured side by side in one run.
"""


def record(name: str, title: str, body: str, doc: Path | None = None) -> None:
    """Replace section ``name`` of docs/benchmarks.md with ``body`` and provenance."""
    doc = doc or DOC
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"<!-- bench:{name} -->\n## {title}\n\n"
               f"`{command_line()}` — commit {commit()}, {stamp}, {machine()}.\n\n"
               f"{body.strip()}\n<!-- /bench:{name} -->")
    text = doc.read_text() if doc.exists() else HEADER
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->",
                         re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else \
        text.rstrip() + "\n\n" + section + "\n"
    doc.parent.mkdir(parents=True, exist_ok=True)
    doc.write_text(text)
    print(f"wrote section {name!r} of {doc.relative_to(ROOT) if doc.is_relative_to(ROOT) else doc}")


def record_readme(name: str, body: str, readme: Path = README) -> None:
    """Replace the README's block ``name`` (between ``<!-- readme:NAME -->`` and its closing
    marker) with ``body``: a summary in the README is a copy of what the benchmark
    computed, never retyped by hand."""
    start, end = f"<!-- readme:{name} -->", f"<!-- /readme:{name} -->"
    text = readme.read_text()
    if start not in text or end not in text:
        raise SystemExit(f"{readme.name} has no block {start} … {end}: add both markers "
                         "around the summary this benchmark writes")
    head, rest = text.split(start, 1)
    readme.write_text(f"{head}{start}\n{body.strip()}\n{rest[rest.index(end):]}")
    print(f"wrote block {name!r} of {readme.name}")


def markdown_table(header: list[str], rows: list[list]) -> str:
    """A markdown table; floats with three decimals, anything else as ``str`` gives it;
    a pipe in a cell (``|Ṽ|``) escaped outside code spans, so it does not end the cell."""
    def fmt(v):
        return table_cell(f"{v:.3f}" if isinstance(v, float) else str(v))

    lines = ["| " + " | ".join(map(fmt, header)) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def table_cell(text: str) -> str:
    """``text`` inside a markdown table cell: each ``|`` outside a code span as ``\\|``,
    which MkDocs renders as a pipe (inside backticks it would show the backslash, and
    MkDocs keeps a pipe there inside its cell)."""
    parts = text.split("`")
    return "`".join(p.replace("|", "\\|") if i % 2 == 0 else p for i, p in enumerate(parts))
