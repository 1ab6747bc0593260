"""LLM errors. Messages never contain API keys or request headers."""

from __future__ import annotations


class LLMError(RuntimeError):
    """A call to an LLM backend failed and retrying will not help."""


class RetryableLLMError(LLMError):
    """Time-out, rate limit (429) or server error (5xx): worth retrying with back-off."""

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BackendSpecError(ValueError):
    """The ``--llm`` specification cannot be understood."""


class TemplateError(ValueError):
    """A user prompt template is invalid."""
