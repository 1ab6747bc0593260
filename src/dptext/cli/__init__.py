"""Command-line interface: a thin layer over the Python API.

Each command group lives in its own module and registers itself on ``app``.
"""

from dptext.cli import evaluate as _evaluate  # noqa: F401  (registers evaluate, filter)
from dptext.cli import keyphrases  # noqa: F401  (registers the command)
from dptext.cli.app import app


def main() -> None:
    app()


__all__ = ["app", "main"]
