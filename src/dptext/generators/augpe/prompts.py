"""The random API and the variation API of Aug-PE, as prompts.

A prompt holds only the document type, words of the released DP vocabulary (AugPE+Ṽ)
and earlier synthetic texts (post-processing of DP releases) — and the class name only
when the user opted in to the original "class topic in the clear" variant. Every prompt
carries its own sampling seed, so runs repeat and journal/cache keys are stable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.llm import Prompt, SamplingParams

SYSTEM = "You write realistic, self-contained documents."
VARIATIONS = ("mixed", "blank", "paraphrase")
BLANK = "_"


def prompt_seed(base: int, iteration: int, index: int) -> int:
    return (base * 1_000_003 + iteration * 7_919_993 + index * 101) % (2 ** 31 - 1)


def _topic(class_name: str | None) -> str:
    return f" about {class_name}" if class_name is not None else ""


def initial_prompt(document_type: str, words: Sequence[str], target_words: int,
                   params: SamplingParams, class_name: str | None = None) -> Prompt:
    """Random API: a fresh document from the document type (and random Ṽ words)."""
    text = f"Write a {document_type}{_topic(class_name)} of about {target_words} words."
    if words:
        text += " Use some of these words: " + ", ".join(words) + "."
    text += f"\n\nWrite only the {document_type} itself, with no title, introduction or comments."
    return Prompt.user(text, SYSTEM, params)


def mask_words(text: str, rate: float, rng: np.random.Generator) -> str:
    """``text`` with a fraction ``rate`` of its words blanked; runs of blanks merge into one."""
    words = text.split()
    if not words:
        return BLANK
    masked = rng.random(len(words)) < rate
    out: list[str] = []
    for w, m in zip(words, masked, strict=True):
        if not m:
            out.append(w)
        elif not out or out[-1] != BLANK:
            out.append(BLANK)
    return " ".join(out)


def variation_prompt(kind: str, parent: str, document_type: str, target_words: int,
                     params: SamplingParams, *, mask_rate: float, rng: np.random.Generator,
                     class_name: str | None = None) -> Prompt:
    """Variation API: fill-in-the-blanks rewriting of ``parent`` or a paraphrase of it."""
    topic = _topic(class_name)
    if kind == "blank":
        text = (f"Fill in the blanks ({BLANK}) in this {document_type}{topic} so that it "
                f"reads naturally, and write the full {document_type} with about "
                f"{target_words} words:\n\n{mask_words(parent, mask_rate, rng)}")
    elif kind == "paraphrase":
        text = (f"Rewrite this {document_type}{topic} in different words, keeping its "
                f"subject, in about {target_words} words:\n\n{parent}")
    else:
        raise ValueError(f"variation must be blank or paraphrase, got {kind!r}")
    text += f"\n\nWrite only the {document_type} itself, with no title, introduction or comments."
    return Prompt.user(text, SYSTEM, params)

