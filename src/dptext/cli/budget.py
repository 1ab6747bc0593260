"""``dptext budget``: what has been spent on a corpus, over all runs."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from dptext.cli import options as o
from dptext.cli.app import app


@app.command()
def budget(
    input: o.InputPath,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
    skip_invalid: o.SkipInvalid = False,
    dataset_id: o.DatasetId = None,
) -> None:
    """Show the privacy spent on a corpus over all runs.

    Every run recorded in the ledger of the corpus (or of its named dataset).
    """
    from dptext.corpus import read_corpus
    from dptext.privacy.budget import open_budget

    with o.user_errors():
        corpus = read_corpus(input, text_column=text_column, label_column=label_column,
                             fmt=format, encoding=encoding, skip_invalid=skip_invalid)
        b = open_budget(corpus, dataset_id=dataset_id, input=input)
    key = f"dataset {b.dataset_id!r}" if b.dataset_id is not None else f"ledger {b.name}"
    table = Table(title=f"Privacy ledger of {input} ({key})", title_justify="left")
    # fits 80 columns: numbers and times never wrap, a long command folds
    table.add_column("run", no_wrap=True)
    table.add_column("command", overflow="fold")
    table.add_column("created (UTC)", no_wrap=True)
    table.add_column("guarantee", no_wrap=True)
    table.add_column("overrun")
    for r in b.runs:
        g = r["guarantee"]
        table.add_row(r["run_id"][:8], r["command"], r["created"][:16].replace("T", " "),
                      f"ε = {g['epsilon']:.4g}, δ = {g['delta']:.3g}",
                      "yes" if r["overrun"] else "")
    out = Console()
    out.print(table)
    total = f" of a total ε = {b.total:g} ({b.total_source})" if b.total is not None else \
        " (no total budget set)"
    out.print(f"spent: {b.spent()}{total}")
    out.print(f"ledger key: {b.describe()}")
