"""The document stage of DP-KPS: one LLM document per released keyphrase sequence.

Takes any objects with ``.label`` and ``.keyphrases`` (``KeyphraseSequence`` from
``dptext.generators.kps``, duck-typed so that this layer never imports the layers that
hold private data). The label is attached to the output, never put in the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from dptext.llm.base import LLMBackend
from dptext.llm.journal import Journal, PromptCache
from dptext.llm.prompts import PromptBuilder, clean_completion, keyphrase_coverage
from dptext.llm.runner import RetryPolicy, RunStats, run_prompts


class SeedSequence(Protocol):
    @property
    def label(self) -> str | None: ...

    @property
    def keyphrases(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class SyntheticDocument:
    text: str
    label: str | None
    keyphrases: tuple[str, ...]
    coverage: float  # fraction of seed keyphrases found in the text
    attempts: int

    def to_dict(self) -> dict:
        return {"text": self.text, "label": self.label, "keyphrases": list(self.keyphrases)}


@dataclass
class DocumentOptions:
    clean: bool = True
    min_coverage: float | None = None  # e.g. 0.5: retry when fewer than half the terms appear
    max_attempts: int = 3              # total attempts per sequence when min_coverage is set
    concurrency: int = 4
    seed: int = 0                      # per-sequence LLM sampling seeds derive from it
    progress: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)


def _seed(base: int, index: int, attempt: int) -> int:
    return (base * 1_000_003 + index * 101 + attempt * 7_919_993) % (2 ** 31 - 1)


def generate_documents(sequences: Sequence[SeedSequence], backend: LLMBackend,
                       builder: PromptBuilder, options: DocumentOptions | None = None,
                       journal: Journal | None = None, cache: PromptCache | None = None,
                       stats: RunStats | None = None) -> list[SyntheticDocument]:
    opts = options or DocumentOptions()
    stats = stats if stats is not None else RunStats()
    n = len(sequences)
    best: list[tuple[float, str] | None] = [None] * n
    attempts = [0] * n
    pending = list(range(n))
    rounds = opts.max_attempts if opts.min_coverage is not None else 1
    for attempt in range(rounds):
        if not pending:
            break
        prompts = [builder.build(sequences[i].keyphrases, _seed(opts.seed, i, attempt))
                   for i in pending]
        desc = "documents" if attempt == 0 else f"retry {attempt} (low coverage)"
        comps = run_prompts(backend, prompts, journal, cache, opts.concurrency, opts.retry,
                            opts.progress, desc, stats)
        still = []
        for i, c in zip(pending, comps, strict=True):
            attempts[i] += 1
            truncated = True if c.finish_reason == "length" else None
            text = clean_completion(c.text, truncated) if opts.clean else c.text
            found, total = keyphrase_coverage(text, sequences[i].keyphrases)
            cov = found / total if total else 1.0
            if best[i] is None or cov > best[i][0]:
                best[i] = (cov, text)
            if opts.min_coverage is not None and cov < opts.min_coverage:
                still.append(i)
        pending = still
    out = []
    for i, s in enumerate(sequences):
        cov, text = best[i]  # type: ignore[misc]
        out.append(SyntheticDocument(text, s.label, tuple(s.keyphrases), cov, attempts[i]))
    return out
