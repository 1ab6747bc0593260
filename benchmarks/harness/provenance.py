"""Where a result came from: the repository, the commit, the tree of ``src/``, the machine
and the command, written so that no path of the machine reaches the repository."""

from __future__ import annotations

import os
import platform
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def bench_dir(name: str = "") -> Path:
    """Where benchmark results, caches and peers' environments live: ``$DPTEXT_BENCH_DIR``
    or ``~/.cache/dptext-bench`` (outside the repository), then ``name``."""
    root = Path(os.environ.get("DPTEXT_BENCH_DIR", Path.home() / ".cache" / "dptext-bench"))
    return root / name if name else root


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True).stdout.strip()


def commit() -> str:
    """The short hash of HEAD, ``+uncommitted changes`` where src/ or benchmarks/ differ."""
    try:
        dirty = _git("status", "--porcelain", "--", "src", "benchmarks")
        return _git("rev-parse", "--short", "HEAD") + ("+uncommitted changes" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def src_tree() -> str:
    """The git tree of ``src/``: results are keyed by the code that produced them."""
    try:
        return _git("rev-parse", "--short", "HEAD:src")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


@cache
def first_commit_with_src(tree: str) -> str:
    """The oldest commit in this branch's history whose ``src/`` is ``tree`` (or the tree)."""
    try:
        commits = _git("rev-list", "--reverse", "HEAD").split()
        trees = _git("rev-parse", *(f"{c}:src" for c in commits)).split()
    except (OSError, subprocess.CalledProcessError):
        return f"src tree {tree}"
    for c, t in zip(commits, trees, strict=False):
        if t.startswith(tree):
            return f"src/ as at commit {c[:7]}"
    return f"src tree {tree}"


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
