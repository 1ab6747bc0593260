"""How ``--help`` reads at 80 columns: every command's docstring paragraphs reflowed (one
line each, for rich to wrap where the terminal is full) and its options in the panels'
order (``options.PANELS``: those of a first run first). The Advanced panel, the options a
first run does not need, is left out of ``--help`` and shown by ``--help-all``."""

from __future__ import annotations

import functools
import inspect
from typing import Annotated

import typer
from typer.models import ParameterInfo

from dptext.cli.options import ADVANCED, LLM, PANELS


def _info(param: inspect.Parameter) -> ParameterInfo | None:
    infos = [x for x in getattr(param.annotation, "__metadata__", ())
             if isinstance(x, ParameterInfo)]
    if isinstance(param.default, ParameterInfo):
        infos.append(param.default)
    return next(iter(infos), None)


def _panel(param: inspect.Parameter) -> str | None:
    info = _info(param)
    return info.rich_help_panel if info else None


def _show_all(ctx: typer.Context, value: bool) -> None:
    """``--help-all``: the help with the hidden (Advanced) options shown."""
    if not value or ctx.resilient_parsing:
        return
    hidden = [p for p in ctx.command.params if getattr(p, "hidden", False)]
    for p in hidden:
        p.hidden = False
    try:
        typer.echo(ctx.get_help(), color=ctx.color)
    finally:
        for p in hidden:
            p.hidden = True
    raise typer.Exit()


HelpAll = Annotated[bool, typer.Option(
    "--help-all", is_eager=True, expose_value=False, callback=_show_all,
    help="Show every option, Advanced too, and exit.")]


def _with_help_all(callback, sig: inspect.Signature):
    """``callback`` with a ``--help-all`` option (typer passes it; the command does not
    take it)."""
    @functools.wraps(callback)
    def command(*args, help_all: bool = False, **kwargs):
        return callback(*args, **kwargs)

    extra = inspect.Parameter("help_all", inspect.Parameter.KEYWORD_ONLY,
                              annotation=HelpAll, default=False)
    command.__signature__ = sig.replace(parameters=[extra, *sig.parameters.values()])
    return command


def _rank(panel: str | None) -> float:
    """A panel's place: ``PANELS``' order; a method's own panel (Aug-PE, PATE) before LLM."""
    return PANELS.index(panel) if panel in PANELS else PANELS.index(LLM) - 0.5


def tidy_help(app: typer.Typer) -> None:
    """Reflow every command's help and order its options by panel (keyword-only, so that
    options without a default may follow those with one; typer passes them by name); hide
    the Advanced ones behind ``--help-all``."""
    for info in app.registered_commands:
        doc = info.help or inspect.getdoc(info.callback) or ""
        info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))
        sig = inspect.signature(info.callback, eval_str=True)
        params = sorted(sig.parameters.values(), key=lambda p: _rank(_panel(p)))
        sig = sig.replace(
            parameters=[p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params])
        advanced = [_info(p) for p in params if _panel(p) == ADVANCED]
        for option in advanced:
            option.hidden = True
        if advanced:
            info.callback = _with_help_all(info.callback, sig)
        else:
            info.callback.__signature__ = sig
