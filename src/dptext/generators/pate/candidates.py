"""The public generator: LLM prompts built from public or released objects only.

* With declared label names: "write a <document type> on the topic: <label>", the same
  number of prompts per label. Only the document type and the declared names reach the LLM.
* Without them: a few words drawn at random from the DP vocabulary (released by DP-KPS's
  vocabulary stage) per prompt, through the generate command's ``PromptBuilder``; the
  teachers' votes then assign the labels.

Prompts carry per-candidate sampling seeds derived from the run's public seed, so the same
configuration asks the same prompts (and a shared prompt cache answers them again).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dptext.llm import Prompt, PromptBuilder, SamplingParams
from dptext.llm.prompts import DEFAULT_SYSTEM

LABEL_TEMPLATE = ("Write a {document_type} on the topic: {label}.\n\n"
                  "Write only the {document_type} itself, with no title, introduction or "
                  "comments.")


@dataclass(frozen=True)
class Candidate:
    """One public candidate document; ``topic`` is the label it was prompted with (label
    mode) or None."""

    text: str
    topic: str | None
    fold: int

    def to_dict(self) -> dict:
        return {"text": self.text, "topic": self.topic, "fold": self.fold}


def _seed(base: int, index: int) -> int:
    return (base * 1_000_003 + index * 7_919) % (2 ** 31 - 1)


def label_prompts(document_type: str, labels: Sequence[str], per_label: int,
                  params: SamplingParams, seed: int) -> tuple[list[Prompt], list[str]]:
    """``per_label`` prompts for every label, and the label each was written for."""
    prompts, topics = [], []
    for j, label in enumerate(labels):
        user = LABEL_TEMPLATE.format(document_type=document_type, label=label)
        for k in range(per_label):
            p = SamplingParams(params.max_tokens, params.temperature, params.top_p,
                               _seed(seed, j * per_label + k), params.stop)
            prompts.append(Prompt.user(user, system=DEFAULT_SYSTEM, params=p))
            topics.append(label)
    return prompts, topics


def keyword_prompts(document_type: str, vocabulary: Sequence[str], n: int,
                    words_per_prompt: int, params: SamplingParams, seed: int
                    ) -> list[Prompt]:
    """``n`` prompts, each asking for a document with ``words_per_prompt`` random terms of
    the released vocabulary."""
    rng = np.random.default_rng(seed)  # public randomness over released terms
    builder = PromptBuilder(document_type, params=params)
    k = min(words_per_prompt, len(vocabulary))
    return [builder.build([vocabulary[i] for i in rng.choice(len(vocabulary), k, replace=False)],
                          _seed(seed, i)) for i in range(n)]
