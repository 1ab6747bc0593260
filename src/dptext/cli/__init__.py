"""Command-line interface: a thin layer over the Python API.

Each command group lives in its own module and registers itself on ``app``.
"""

from dptext.cli import (  # noqa: F401  (register the commands)
    audit,
    augpe,
    budget,
    dpft,
    evaluate,
    generate,
    inspect_corpus,
    keyphrases,
    pate,
)
from dptext.cli.app import app
from dptext.cli.layout import tidy_help

tidy_help(app)


def main() -> None:
    app()


__all__ = ["app", "main"]
