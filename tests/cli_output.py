"""Reading CLI output in tests: what it says, not how it was laid out."""

from __future__ import annotations


def said(output: str) -> str:
    """``output`` with every run of whitespace (line breaks included) made one space.

    rich wraps a long line at a space wherever the terminal width falls, so a phrase of
    several words is checked in ``said(result.output)``, never in ``result.output``.
    """
    return " ".join(output.split())
