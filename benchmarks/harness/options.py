"""The options every study shares, built in one place.

``study_parser`` returns an ``argparse.ArgumentParser`` with the shared options a study
asks for; the study adds its own and calls ``parse_args`` as usual. List options take
comma lists, space lists or both (``--seeds 0,1,2``, ``--seeds 0 1 2``) and arrive as
lists of the option's type; ``--epsilons`` takes ``inf`` (or ``∞``) for the ε → ∞ limit.
Standard library only: it also runs on a bare GPU machine (``bench_llm_server.py``).
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable, Sequence
from pathlib import Path

from harness.provenance import bench_dir


def parse_eps(text: str) -> float:
    """``6``, ``inf`` or ``∞`` (ε → ∞) as a float."""
    return math.inf if text.strip() in ("inf", "∞") else float(text)


class _ListAction(argparse.Action):
    """Collects ``a,b c`` into ``[conv(a), conv(b), conv(c)]``."""

    def __init__(self, *args, convert: Callable = str, **kwargs):
        self.convert = convert
        super().__init__(*args, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        try:
            items = [self.convert(v) for text in values for v in text.split(",") if v]
        except ValueError as e:
            parser.error(f"{option_string}: {e}")
        setattr(namespace, self.dest, items)


def add_list(ap: argparse.ArgumentParser, *names: str, default: Sequence, convert=str,
             help: str = "") -> None:
    """A list option (see the module's docstring) with ``default`` as a list."""
    ap.add_argument(*names, nargs="+", action=_ListAction, convert=convert,
                    default=list(default), metavar=names[0].lstrip("-").upper().rstrip("S"),
                    help=f"{help + '; ' if help else ''}default: "
                         f"{','.join(map(str, default))}")


def study_parser(doc: str | None, *, corpora: Sequence[str] | None = None,
                 epsilons: Sequence[float] | None = None, seeds: Sequence[int] | None = None,
                 work_dir: str | None = None, store: bool = False, report: bool = False,
                 write: bool = True, check: bool | str = False) -> argparse.ArgumentParser:
    """The parser of a study: its docstring's first line as description, and each shared
    option whose argument is given (its default, or True):

    * ``corpora``: ``--corpora`` (also ``--datasets``), demo corpus names;
    * ``epsilons``: ``--epsilons`` (also ``--eps``), with ``inf`` for ε → ∞;
    * ``seeds``: ``--seeds``;
    * ``work_dir``: ``--work-dir``, default ``bench_dir(work_dir)`` (outside the repository);
    * ``store``: ``--resume PATH…``, result stores to carry on from (``harness.store``);
    * ``report``: ``--report``, render the stored results and run nothing;
    * ``write``: ``--write`` (also ``--record``), write the study's section of
      docs/benchmarks.md;
    * ``check``: ``--check``, a small fast run that exits non-zero on a failed expectation
      (a string: the study's own help for it).
    """
    ap = argparse.ArgumentParser(description=(doc or "").strip().split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    if corpora is not None:
        add_list(ap, "--corpora", "--datasets", default=corpora)
    if epsilons is not None:
        add_list(ap, "--epsilons", "--eps", default=epsilons, convert=parse_eps,
                 help="inf = ε → ∞")
    if seeds is not None:
        add_list(ap, "--seeds", default=seeds, convert=int)
    if work_dir is not None:
        ap.add_argument("--work-dir", type=Path, default=bench_dir(work_dir),
                        help="results, journals and caches (default: $DPTEXT_BENCH_DIR or "
                             f"~/.cache/dptext-bench, then {work_dir}/)")
    if store:
        ap.add_argument("--resume", type=Path, nargs="+", default=[], metavar="JSONL",
                        help="result stores to carry on from (read, never written): their "
                             "cells are skipped and reported")
    if report:
        ap.add_argument("--report", action="store_true",
                        help="only render the stored results; run nothing")
    if write:
        ap.add_argument("--write", "--record", action="store_true",
                        help="write the study's section of docs/benchmarks.md")
    if check:
        ap.add_argument("--check", action="store_true",
                        help=check if isinstance(check, str) else
                        "a small fast run; exits non-zero on a failed expectation")
    return ap
