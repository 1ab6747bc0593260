"""A backend for tests: records every prompt it sees and answers deterministically.

By default the answer is a short document that uses the keyphrases listed in the prompt
(lines after "keyphrases"/"terms"), so coverage checks and clean-up can be exercised.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from dptext.llm.errors import RetryableLLMError
from dptext.llm.types import Completion, Prompt


def _default_answer(prompt: Prompt) -> str:
    last = prompt.messages[-1].content
    terms = [ln[2:].strip() for ln in last.splitlines() if ln.startswith("- ")]
    body = " ".join(f"The note mentions {t}." for t in terms) or "An empty note."
    return "Sure, here is the document:\n\n" + body


class RecordingBackend:
    """Keeps ``prompts`` (every prompt received, in order). ``fail_first`` makes the first
    N calls raise a retryable error (to test retries); ``answer`` overrides the reply."""

    max_concurrency = 4

    def __init__(self, answer: Callable[[Prompt], str] | None = None, fail_first: int = 0,
                 identity: str = "recording") -> None:
        self.answer = answer or _default_answer
        self.fail_first = fail_first
        self.identity = identity
        self.prompts: list[Prompt] = []
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        with self._lock:
            self.calls += 1
            if self.calls <= self.fail_first:
                raise RetryableLLMError("HTTP 429 (simulated)", retry_after=0.0)
            self.prompts.extend(prompts)
        out = []
        for p in prompts:
            text = self.answer(p)
            out.append(Completion(text, "stop", len(p.text().split()), len(text.split())))
        return out

    def close(self) -> None:
        pass


def from_spec(rest: str, **options) -> RecordingBackend:
    return RecordingBackend(identity=f"recording:{rest}" if rest else "recording")
