"""Write a benchmark's results into its own section of docs/benchmarks.md.

Each benchmark owns the text between ``<!-- bench:NAME -->`` and ``<!-- /bench:NAME -->``
and rewrites it with its results, the command that produced them, the commit and
the machine, so re-running one benchmark never disturbs another's figures.
"""

from __future__ import annotations

import os
import platform
import re
import shlex
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "benchmarks.md"
README = ROOT / "README.md"
HEADER = """# Benchmarks

Figures written by the scripts in `benchmarks/`; each section says which command,
commit and machine produced it. Ratios are measured side by side in one run.
"""


def bench_dir(name: str = "") -> Path:
    """Where benchmark results, caches and peers' environments live: ``$DPTEXT_BENCH_DIR``
    or ``~/.cache/dptext-bench`` (outside the repository), then ``name``."""
    root = Path(os.environ.get("DPTEXT_BENCH_DIR", Path.home() / ".cache" / "dptext-bench"))
    return root / name if name else root


def commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src", "benchmarks"],
                               cwd=ROOT, capture_output=True, text=True).stdout.strip()
        return sha + ("+uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu() -> str:
    """``N cores, model name``: what a result row says it was computed on."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores, {model}"


def machine() -> str:
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{cpu()}, Python {platform.python_version()}{load}"


def command_line() -> str:
    """This process's command, with the script's path relative to the repository and the
    home folder written ``~`` (no path of this machine reaches the repository)."""
    home = os.path.expanduser("~")
    args = [os.path.relpath(sys.argv[0], ROOT),
            *(a.replace(home + os.sep, "~" + os.sep) for a in sys.argv[1:])]
    tilde = "~" + os.sep  # left unquoted, so that a shell still expands it
    return "python " + " ".join(tilde + shlex.quote(a[2:]) if a.startswith(tilde)
                                else shlex.quote(a) for a in args)


def record(name: str, title: str, body: str) -> None:
    """Replace section ``name`` of docs/benchmarks.md with ``body`` and provenance."""
    command = command_line()
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    section = (f"<!-- bench:{name} -->\n## {title}\n\n"
               f"`{command}` — commit {commit()}, {stamp}, {machine()}.\n\n"
               f"{body.strip()}\n<!-- /bench:{name} -->")
    text = DOC.read_text() if DOC.exists() else HEADER
    pattern = re.compile(rf"<!-- bench:{re.escape(name)} -->.*?<!-- /bench:{re.escape(name)} -->",
                         re.S)
    text = pattern.sub(lambda _: section, text) if pattern.search(text) else \
        text.rstrip() + "\n\n" + section + "\n"
    DOC.parent.mkdir(parents=True, exist_ok=True)
    DOC.write_text(text)
    print(f"wrote section {name!r} of {DOC.relative_to(ROOT)}")


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
    def fmt(v):
        return f"{v:.3f}" if isinstance(v, float) else str(v)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)
