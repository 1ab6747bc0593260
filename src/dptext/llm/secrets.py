"""API keys: read from the environment (or a key file named by ``<VAR>_FILE``), never
printed. ``Secret`` hides its value from repr/str so it cannot leak into logs, journals,
reports or exception messages by accident."""

from __future__ import annotations

import os
from pathlib import Path

from dptext.llm.errors import LLMError


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('****')"

    __str__ = __repr__

    def __reduce__(self):  # never pickle a key into a journal or a cache
        raise TypeError("Secret cannot be pickled")


def secret_from_env(var: str, required: bool = True) -> Secret | None:
    """Key from ``$VAR``, else from the file named by ``$VAR_FILE``."""
    value = os.environ.get(var)
    if not value and os.environ.get(f"{var}_FILE"):
        path = Path(os.environ[f"{var}_FILE"]).expanduser()
        try:
            value = path.read_text(encoding="utf-8").strip()
        except OSError as e:
            raise LLMError(f"cannot read the key file named by ${var}_FILE: {e.strerror}") from None
    if not value:
        if required:
            raise LLMError(f"no API key: set the environment variable {var} "
                           f"(or {var}_FILE to a file holding the key)")
        return None
    return Secret(value.strip())


def redact(text: str, *secrets: Secret | None) -> str:
    for s in secrets:
        if s is not None and s.reveal():
            text = text.replace(s.reveal(), "****")
    return text
