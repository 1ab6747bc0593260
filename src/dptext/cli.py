"""Command-line interface: a thin layer over the Python API."""

from __future__ import annotations

import typer

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Synthetic text corpora with a document-level DP guarantee.")


@app.command()
def version() -> None:
    """Print the dptext version."""
    from dptext import __version__

    typer.echo(__version__)


def main() -> None:
    app()
