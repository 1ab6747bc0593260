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

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.measure import Measurement
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from dptext import __version__
from dptext.privacy import PrivacyLedger
from dptext.privacy.labels import LABEL_SET_NOTE

ASSUMPTIONS = (
    "Neighbouring corpora differ by one whole document (add/remove).",
    "The public vocabulary, the embedding model and the LLM are public and fixed before the run.",
)
#: the note of a run whose label set was not declared (it was released with DP)
LABELS_FROM_DATA = LABEL_SET_NOTE


def report_path(out: str | Path) -> Path:
    """Where the JSON privacy report of output ``out`` goes: beside it."""
    out = Path(out)
    return out.with_name(out.stem + ".privacy.json")


def build_report(ledger: PrivacyLedger, *, command: str, parameters: dict[str, Any],
                 notes: list[str] | tuple[str, ...] = (), budget=None) -> dict[str, Any]:
    """``budget``: the ``CorpusBudget`` this run was charged to (its key goes in the
    report: dataset id or content fingerprint — never the fingerprint itself)."""
    from dptext.compute import current_engine, engine_notes

    g = ledger.guarantee()
    report = {
        "dptext_version": __version__,
        "created": datetime.now(UTC).isoformat(timespec="seconds"),
        "command": command,
        "guarantee": {"epsilon": g.epsilon, "delta": g.delta, "method": g.method,
                      "summary": str(g)},
        "releases": [asdict(r) for r in ledger.releases],
        "parameters": parameters,
        "assumptions": [*ASSUMPTIONS, *notes, *engine_notes()],
        "engine": current_engine().describe(),
    }
    if budget is not None:
        add_budget(report, budget)
    return report


def add_budget(report: dict[str, Any], budget) -> dict[str, Any]:
    """Say in ``report`` which persistent ledger the run was charged to."""
    report["budget"] = budget.report_entry()
    return report


def mark_not_private(report: dict[str, Any], why: str) -> dict[str, Any]:
    """Say in ``report`` that its run had no DP guarantee (ε = ∞), first and loudly."""
    report["guarantee"] = {"epsilon": "inf", "delta": 1.0, "method": why, "summary": why}
    report["assumptions"].insert(0, why)
    return report


def write_report(report: dict[str, Any], path: str | Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str))
    return path


TITLE = "Privacy report: every release of this run"

_NOISE_SYMBOL = {"laplace": "b", "report-noisy-max": "b", "gaussian": "σ", "dp-sgd": "σ"}
_SHORT_MECHANISM = {"report-noisy-max": "noisy-max"}
_SHORT_FOLD = {"validation": "val"}
_COMPACT_LEGEND = ("comp.: seq = sequential; par ×n = parallel over n disjoint partitions; "
                   "fit / val = made on that fold of the documents only, parallel to the "
                   "other fold")


def print_report(report: dict[str, Any], console: Console) -> None:
    """The release table, the composed guarantee and the assumptions, on ``console``.

    The full table (one row per release, bordered, long labels) needs about 150 columns
    for a DP-KPS run. On a console too narrow for it (an 80-column terminal, CI) a
    compact table replaces it: short labels, no side borders, numbers never wrapped, and
    the releases of one parallel group that differ only in their partition on one row
    (the JSON report lists every release). Only the layout depends on the width.
    """
    releases = report["releases"]
    wide = _wide_table(releases)
    if Measurement.get(console, console.options.update_width(10_000), wide).maximum \
            <= console.width:
        console.print(wide)
    else:
        console.print(_compact_table(releases))
        console.print(Text(_COMPACT_LEGEND, style="dim"))
    g = report["guarantee"]
    line = Text.assemble(("Guarantee of this run:", "bold"), " ", g["summary"])
    if line.cell_len + cell_len(f" — {g['method']}") <= console.width:
        console.print(line.append(f" — {g['method']}"))
    else:  # the accountant on a line of its own rather than wrapped mid-phrase
        console.print(line)
        console.print(Padding(Text(f"by {g['method']}"), (0, 0, 0, 2)))
    notes = Table.grid(padding=(0, 1))  # bullets with a hanging indent when a note wraps
    notes.add_column(width=3, justify="right")
    notes.add_column(style="dim")
    for note in report["assumptions"]:
        notes.add_row("•", note)
    b = report.get("budget")
    if b:
        which = (f"dataset id {b['dataset_id']!r} ({b['source']})" if b["key"] == "dataset id"
                 else "content fingerprint")
        notes.add_row("•", f"Budget ledger: {which} — {b['meaning']}.")
    console.print(notes)


def _release_name(r: dict[str, Any]) -> Text:
    # Text, not markup: a partition such as "[class=business]" must print as written
    return Text(r["name"] + (f" [{r['partition']}]" if r.get("partition") else ""))


def _wide_table(releases: list[dict[str, Any]]) -> Table:
    table = Table(title=TITLE, title_justify="left")
    for col in ("release", "mechanism", "sensitivity", "noise", "ε", "δ", "composition"):
        table.add_column(col, overflow="fold")
    for r in releases:
        noise = {"laplace": "Laplace b", "report-noisy-max": "exponential scale"}.get(
            r["mechanism"], "Gaussian σ")
        table.add_row(
            _release_name(r),
            r["mechanism"],
            f"{r['sensitivity_norm']} {r['sensitivity']:.4g}",
            f"{noise} = {r['noise_scale']:.4g} on {r['dimension']} values",
            f"{r['epsilon']:.4g}",
            f"{r['delta']:.3g}",
            ("parallel (disjoint documents)" if r.get("parallel_group") else "sequential")
            + (f"; {r['fold']} fold, parallel to the other fold" if r.get("fold") else ""),
        )
    return table


def _compact_table(releases: list[dict[str, Any]]) -> Table:
    """Short labels, no side borders, numbers never wrapped: fits 80 columns."""
    table = Table(title=TITLE, title_justify="left", box=box.SIMPLE_HEAD, show_edge=False,
                  pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column("release", overflow="fold", min_width=12)
    for col in ("mech.", "sens.", "noise", "values", "ε", "δ", "comp."):
        table.add_column(col, no_wrap=True,
                         justify="right" if col in ("values", "ε", "δ") else "left")
    for r, n in _alike_partitions(releases):
        table.add_row(
            Text(r["name"]) if n > 1 else _release_name(r),
            _SHORT_MECHANISM.get(r["mechanism"], r["mechanism"]),
            f"{r['sensitivity_norm'].split()[0]} {r['sensitivity']:.4g}",
            f"{_NOISE_SYMBOL.get(r['mechanism'], '?')} {r['noise_scale']:.4g}",
            str(r["dimension"]),
            f"{r['epsilon']:.4g}",
            f"{r['delta']:.3g}",
            ((f"par ×{n}" if n > 1 else "par") if r.get("parallel_group") else "seq")
            + (f" {_SHORT_FOLD.get(f, f)}" if (f := (r.get("fold") or "").rsplit(": ", 1)[-1])
               else ""),
        )
    return table


def _alike_partitions(releases: list[dict[str, Any]]) -> list[tuple[dict[str, Any], int]]:
    """(release, n): runs of consecutive releases of one parallel group that print alike
    but for their partition, as their first release and how many there are."""
    def shown(r: dict[str, Any]) -> tuple:
        return (r["name"], r.get("parallel_group"), r["mechanism"], r["sensitivity_norm"],
                f"{r['sensitivity']:.4g}", f"{r['noise_scale']:.4g}", r["dimension"],
                f"{r['epsilon']:.4g}", f"{r['delta']:.3g}")

    runs: list[tuple[dict[str, Any], int]] = []
    for r in releases:
        if runs and r.get("parallel_group") and shown(runs[-1][0]) == shown(r):
            runs[-1] = (runs[-1][0], runs[-1][1] + 1)
        else:
            runs.append((r, 1))
    return runs
