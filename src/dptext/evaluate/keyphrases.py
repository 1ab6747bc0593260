"""The keyphrase-only protocol of DP-KPS table 5: score a keyphrase file without an LLM.

The classifier is trained on the released phrase sequences themselves. Each real
test document (and, for the ceiling, each real training document) is turned into
the sequence of the first ``k`` distinct phrases it contains from the released
vocabulary — the set of phrases in the keyphrase file — so that training and test
inputs have the same form.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dptext.evaluate.data import Labelled


def release_vocabulary(keyphrases: Sequence[Sequence[str]]) -> list[str]:
    """The released vocabulary: every distinct (normalised) phrase in the keyphrase file."""
    from dptext.text import normalize_phrase

    terms = {normalize_phrase(p) for seq in keyphrases for p in seq}
    terms.discard("")
    return sorted(terms)


def sequence_length(keyphrases: Sequence[Sequence[str]]) -> int:
    """k: the median length of the released sequences (at least 1)."""
    return max(1, int(np.median([len(s) for s in keyphrases]))) if keyphrases else 1


def to_sequences(texts: Sequence[str], terms: Sequence[str], k: int,
                 sep: str = ", ") -> list[str]:
    """Each text as its first ``k`` distinct vocabulary phrases, joined by ``sep``.

    A text with none of the phrases becomes ``"(none)"`` (an embedder needs some text).
    """
    extractor = _extractor(terms)
    out = []
    for t in texts:
        idx = extractor.first_distinct(t, k)
        out.append(sep.join(terms[i] for i in idx) or "(none)")
    return out


def as_sequences(data: Labelled, terms: Sequence[str], k: int) -> Labelled:
    from dataclasses import replace

    return replace(data, texts=tuple(to_sequences(data.texts, terms, k)))


def _extractor(terms: Sequence[str]):
    from dptext.text import PhraseExtractor

    return PhraseExtractor(list(terms))
