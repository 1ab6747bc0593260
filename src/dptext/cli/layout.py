"""How ``--help`` reads at 80 columns: every command's docstring paragraphs reflowed (one
line each, for rich to wrap where the terminal is full) and its options in the panels'
order (``options.PANELS``: those of a first run first, Advanced last)."""

from __future__ import annotations

import inspect

import typer
from typer.models import ParameterInfo

from dptext.cli.options import LLM, PANELS


def _panel(param: inspect.Parameter) -> str | None:
    infos = [x for x in getattr(param.annotation, "__metadata__", ())
             if isinstance(x, ParameterInfo)]
    if isinstance(param.default, ParameterInfo):
        infos.append(param.default)
    return next((i.rich_help_panel for i in infos), None)


def _rank(panel: str | None) -> float:
    """A panel's place: ``PANELS``' order; a method's own panel (Aug-PE, PATE) before LLM."""
    return PANELS.index(panel) if panel in PANELS else PANELS.index(LLM) - 0.5


def tidy_help(app: typer.Typer) -> None:
    """Reflow every command's help and order its options by panel (keyword-only, so that
    options without a default may follow those with one; typer passes them by name)."""
    for info in app.registered_commands:
        doc = info.help or inspect.getdoc(info.callback) or ""
        info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
        sig = inspect.signature(info.callback, eval_str=True)
        params = sorted(sig.parameters.values(), key=lambda p: _rank(_panel(p)))
        info.callback.__signature__ = sig.replace(
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
