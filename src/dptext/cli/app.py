"""The Typer application and helpers shared by the command modules."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Synthetic text corpora with a document-level differential-privacy "
                       "guarantee.")
console = Console(stderr=True)


@app.callback()
def _root() -> None:
    """dptext: DP synthetic text."""


@app.command()
def version() -> None:
    """Print the dptext version."""
    from dptext import __version__

    typer.echo(__version__)
