"""The Typer application and helpers shared by the command modules."""

from __future__ import annotations

import inspect

import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Synthetic text corpora with a document-level differential-privacy "
                       "guarantee.")
console = Console(stderr=True)


def reflow_help(typer_app: typer.Typer) -> None:
    """Every command's help as its docstring's paragraphs, each one line: rich wraps them
    at the terminal's width, where the docstring's own line breaks (at 100 columns of
    source) would break a sentence in the middle of an 80-column line."""
    for info in typer_app.registered_commands:
        doc = info.help or inspect.getdoc(info.callback) or ""
        info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))


@app.callback()
def _root() -> None:
    """dptext: DP synthetic text."""


@app.command()
def version() -> None:
    """Print the dptext version."""
    from dptext import __version__

    typer.echo(__version__)
