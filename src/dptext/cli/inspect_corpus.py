"""``dptext inspect``: show the curator their own private corpus's facts, on request.

A run prints released values only (its terminal may be logged: CI, ``docker run -t``,
``script``), so an input error that needs a private fact to be fixed (which rows are
empty, which labels are undeclared) says only that there is one. This command is the
deliberate way to see it: its only purpose is to show the curator their data, it makes no
release and charges nothing, and its output is as private as the corpus.
"""

from __future__ import annotations

from collections import Counter

from rich.console import Console
from rich.markup import escape

from dptext.cli import options as o
from dptext.cli.app import app

WARNING = ("PRIVATE: facts about your private corpus (exact counts, label values, rows). "
           "For your eyes only: do not paste this into a log, an issue or a release.")


@app.command()
def inspect(
    input: o.InputPath,
    text_column: o.TextColumn = "text",
    label_column: o.LabelColumn = None,
    label_sep: o.LabelSep = None,
    labels: o.Labels = None,
    format: o.Format = None,
    encoding: o.Encoding = "utf-8",
) -> None:
    """Show your private corpus's exact facts (releases nothing).

    Its size, bad rows, labels and undeclared labels: what the error messages of a run
    leave out. Releases nothing, charges nothing.
    """
    from dptext.corpus import PrivateValuesError, read_corpus

    out = Console()  # stdout, asked for: never the run's stream
    out.print(f"[bold red]{escape(WARNING)}[/bold red]", soft_wrap=True)

    def read(skip_invalid: bool):
        return read_corpus(input, text_column=text_column, label_column=label_column,
                           fmt=format, encoding=encoding, skip_invalid=skip_invalid,
                           label_sep=label_sep)

    with o.user_errors():
        declared = o.parse_labels(labels)
        try:
            corpus = read(False)
        except PrivateValuesError as e:
            out.print(escape(e.detail), soft_wrap=True)
            corpus = read(True)  # the usable rows, as --skip-invalid would keep them
            out.print("with --skip-invalid, these rows are dropped:")
    out.print(f"{corpus.source}: {len(corpus)} usable documents")
    if not corpus.labelled:
        return
    counts = Counter(corpus.labels) if corpus.labels is not None else \
        Counter(x for s in corpus.label_sets for x in s)
    out.print(f"{len(counts)} labels: " + ", ".join(
        f"{escape(repr(lab))} ({n})" for lab, n in sorted(counts.items())), soft_wrap=True)
    if declared is not None:
        undeclared = sorted(set(counts) - set(declared))
        out.print("labels not declared: " + (", ".join(escape(repr(x)) for x in undeclared)
                                             if undeclared else "none"), soft_wrap=True)
