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
    from dptext.evaluate._shared import tokenize

    terms = {" ".join(tokenize(p)) for seq in keyphrases for p in seq}
    terms.discard("")
    return sorted(terms)


def sequence_length(keyphrases: Sequence[Sequence[str]]) -> int:
    """k: the median length of the released sequences (at least 1)."""
    return max(1, int(np.median([len(s) for s in keyphrases]))) if keyphrases else 1


def to_sequences(texts: Sequence[str], terms: Sequence[str], k: int) -> list[str]:
    """Each text as its first ``k`` distinct vocabulary phrases, joined by ', '."""
    extractor = _extractor(terms)
    out = []
    for t in texts:
        idx = extractor.first_distinct(t, k)
        out.append(", ".join(terms[i] for i in idx))
    return out


def as_sequences(data: Labelled, terms: Sequence[str], k: int) -> Labelled:
    from dataclasses import replace

    return replace(data, texts=tuple(to_sequences(data.texts, terms, k)))


def _extractor(terms: Sequence[str]):
    try:
        from dptext.text.extract import PhraseExtractor
    except ImportError:  # TEMPORARY until dptext.text lands on main; then this goes.
        return _InterimExtractor(terms)
    return PhraseExtractor(list(terms))


class _InterimExtractor:
    """Leftmost-longest whole-token matching (the contract of ``dptext.text``)."""

    def __init__(self, terms: Sequence[str]):
        self.index = {tuple(t.split()): i for i, t in enumerate(terms)}
        self.maxlen = max((len(k) for k in self.index), default=1)

    def first_distinct(self, text: str, k: int) -> np.ndarray:
        from dptext.evaluate._shared import tokenize

        toks = tokenize(text)
        seen: dict[int, None] = {}
        i = 0
        while i < len(toks) and len(seen) < k:
            for n in range(min(self.maxlen, len(toks) - i), 0, -1):
                j = self.index.get(tuple(toks[i:i + n]))
                if j is not None:
                    seen.setdefault(j, None)
                    i += n
                    break
            else:
                i += 1
        return np.fromiter(seen, dtype=np.int32, count=len(seen))
