"""The document stage of DP-KPS: one LLM document per released keyphrase sequence.

Takes any objects with ``.label`` and ``.keyphrases``, and optionally ``.form`` (the form
drawn with the sequence, in plain words) (``KeyphraseSequence`` from
``dptext.generators.kps``, duck-typed so that this layer never imports the layers that
hold private data). The label is attached to the output, never put in the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from dptext.llm.base import LLMBackend
from dptext.llm.checked import DocumentOptions, complete_checked, derive_seed
from dptext.llm.journal import Journal, PromptCache
from dptext.llm.prompts import PromptBuilder
from dptext.llm.runner import RunStats


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


def first_attempt_seed(opts: DocumentOptions, index: int) -> int:
    """The sampling seed of sequence ``index``'s first prompt."""
    return derive_seed(opts.seed, index, 0)


def generate_documents(sequences: Sequence[SeedSequence], backend: LLMBackend,
                       builder: PromptBuilder, options: DocumentOptions | None = None,
                       journal: Journal | None = None, cache: PromptCache | None = None,
                       stats: RunStats | None = None) -> list[SyntheticDocument]:
    """One document per sequence, under ``dptext.llm.checked``'s checks: an answer with a
    repetition loop or a refusal, or (with ``min_coverage``) too few of its keyphrases, is
    asked again with a new sampling seed; ``stats`` counts each case."""
    opts = options or DocumentOptions()
    terms = [s.keyphrases for s in sequences]
    forms = [getattr(s, "form", None) for s in sequences]
    texts = complete_checked(
        lambda i, attempt: builder.build(terms[i], derive_seed(opts.seed, i, attempt),
                                         forms[i]),
        len(sequences), backend, opts, journal, cache, stats, keyphrases=terms)
    return [SyntheticDocument(t.text, s.label, tuple(s.keyphrases), t.coverage, t.attempts)
            for t, s in zip(texts, sequences, strict=True)]
