"""The privacy report of a run: rendered from its ledger, as JSON and as a terminal table.

Only released (noisy) quantities and public parameters appear here; exact class
sizes or anything else computed from the private corpus never do.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from dptext import __version__
from dptext.privacy import PrivacyLedger

ASSUMPTIONS = (
    "Neighbouring corpora differ by one whole document (add/remove).",
    "The public vocabulary, the embedding model and the LLM are public and fixed before the run.",
)
LABELS_FROM_DATA = ("The label set was read from the private data and is treated as public; "
                    "declare it with --labels if a label name could itself be sensitive.")


def report_path(out: str | Path) -> Path:
    """Where the JSON privacy report of output ``out`` goes: beside it."""
    out = Path(out)
    return out.with_name(out.stem + ".privacy.json")


def build_report(ledger: PrivacyLedger, *, command: str, parameters: dict[str, Any],
                 notes: list[str] | tuple[str, ...] = ()) -> dict[str, Any]:
    g = ledger.guarantee()
    return {
        "dptext_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "guarantee": {"epsilon": g.epsilon, "delta": g.delta, "method": g.method,
                      "summary": str(g)},
        "releases": [asdict(r) for r in ledger.releases],
        "parameters": parameters,
        "assumptions": [*ASSUMPTIONS, *notes],
    }


def write_report(report: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str))
    return path


def print_report(report: dict[str, Any], console: Console) -> None:
    table = Table(title="Privacy report: every release of this run", title_justify="left")
    for col in ("release", "mechanism", "sensitivity", "noise", "ε", "δ", "composition"):
        table.add_column(col, overflow="fold")
    for r in report["releases"]:
        noise = {"laplace": "Laplace b", "report-noisy-max": "exponential scale"}.get(
            r["mechanism"], "Gaussian σ")
        table.add_row(
            r["name"] + (f" [{r['partition']}]" if r.get("partition") else ""),
            r["mechanism"],
            f"{r['sensitivity_norm']} {r['sensitivity']:.4g}",
            f"{noise} = {r['noise_scale']:.4g} on {r['dimension']} values",
            f"{r['epsilon']:.4g}",
            f"{r['delta']:.3g}",
            ("parallel (disjoint documents)" if r.get("parallel_group") else "sequential")
            + (f"; {r['fold']} fold, parallel to the other fold" if r.get("fold") else ""),
        )
    console.print(table)
    g = report["guarantee"]
    console.print(f"[bold]Guarantee of this run:[/bold] {g['summary']} — {g['method']}")
    for note in report["assumptions"]:
        console.print(f"  [dim]• {note}[/dim]")
