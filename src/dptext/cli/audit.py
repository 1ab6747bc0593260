"""``dptext audit``: empirical privacy audits of every generator's releases."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from dptext.cli.app import app, console


@app.command()
def audit(
    only: Annotated[str | None, typer.Option(
        help="Comma-separated audits to run (default: all): laplace, gaussian, vocabulary, "
        "vocabulary-gaussian, labels, kde, kde-gaussian, dpkps, dpkps-independent, "
        "dpkps-iterative, histogram, selection, label-set, augpe, pate, pate-tutor, "
        "dpsgd.")] = None,
    runs: Annotated[float, typer.Option(
        help="Multiplier on every audit's number of runs (1: the fast default, a few "
        "minutes; 10: ten times more samples and tighter bounds).")] = 1.0,
    broken: Annotated[str, typer.Option(
        help="none, or a negative control that every row must then flag: half-noise "
        "(mechanisms add half the noise they claim) or unbounded (one document counts "
        "twice, or DP-SGD skips clipping).")] = "none",
    confidence: Annotated[float, typer.Option(
        help="Confidence of each row's verdict (Clopper-Pearson, Bonferroni).")] = 0.95,
    out: Annotated[Path | None, typer.Option("--out", "-o",
                                             help="Write the table as JSON here.")] = None,
) -> None:
    """Audit the privacy claims: lower bounds on ε.

    Each row runs a mechanism many times on a corpus and on the corpus plus one
    adversarial document and reports the largest ε the outputs prove (with the given
    confidence) and the hockey-stick divergence at the claimed ε (dp-auditorium
    style). Exit code 1 when a claim is refuted (or, with --broken, when a broken
    variant is not caught).
    """
    from dptext.audits import AUDITS, run_audits
    from dptext.cli.options import user_errors

    with user_errors():
        which = AUDITS if only is None else tuple(s.strip() for s in only.split(",") if s.strip())
        if not 0 < confidence < 1:
            raise ValueError(f"--confidence must be in (0, 1), got {confidence!r}")
        started = time.perf_counter()
        with console.status("auditing") as status:
            def step(name: str) -> None:
                status.update(f"auditing {name} ({time.perf_counter() - started:.0f} s)")

            rows = run_audits(which, scale=runs, broken=broken, confidence=confidence,
                              progress=step)
    title = "Privacy audit" + (f" — negative control: {broken}" if broken != "none" else "")
    table = Table(title=title, title_justify="left")
    for col in ("mechanism", "claimed ε", "δ", "ε lower bound", "hockey-stick at ε",
                "samples/side", "verdict"):
        table.add_column(col, overflow="fold")
    for r in rows:
        verdict = "[red]REFUTED[/red]" if r.violation else "[green]consistent[/green]"
        table.add_row(r.name, f"{r.claimed_epsilon:.3g}", f"{r.claimed_delta:.3g}",
                      f"{r.epsilon_lower_bound:.3f}", f"{r.hockey_stick:+.4f}",
                      str(r.samples_per_side), verdict)
    # the table is the command's output: stdout, wide enough when piped
    Console(width=None if sys.stdout.isatty() else 150).print(table)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"broken": broken, "confidence": confidence, "runs": runs,
                                   "rows": [r.to_dict() for r in rows]}, indent=2))
        console.print(f"audit written to {out}")
    refuted = [r.name for r in rows if r.violation]
    if broken == "none" and refuted:
        console.print(f"[bold red]privacy claims refuted:[/bold red] {', '.join(refuted)}")
        raise typer.Exit(1)
    missed = [r.name for r in rows if not r.violation]
    if broken != "none" and missed:
        console.print(f"[bold red]the audit missed the broken variant in:[/bold red] "
                      f"{', '.join(missed)}")
        raise typer.Exit(1)
    console.print("audit ok: " + ("no claim refuted" if broken == "none"
                                  else f"every {broken} variant was caught"))
