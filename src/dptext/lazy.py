"""What the registries hold: an entry named ``"package.module:attr"``, imported only when
it is used (the generators by name, ``generators.registry``; the LLM backends by scheme,
``llm.base``), so that importing dptext loads no generator or client it does not run."""

from __future__ import annotations

import importlib
from typing import Any


def load(target: str) -> Any:
    """The object ``target`` (``"package.module:attr"``) names."""
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)
