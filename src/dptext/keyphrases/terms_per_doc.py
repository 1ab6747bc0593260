"""Private choice of S, the distinct public terms one document may add to the class × term
histogram (or the DP vocabulary histogram).

**Why this score.** With S, the histogram holds Σ_i min(m_i, S) document–term counts
(m_i: document i's distinct public terms), and its noise grows like its L2 sensitivity
√S. The chosen S maximises their ratio

    u(S) = Σ_i min(m_i, S) / √S

over a public grid: S = 80 pays for 80 terms on ten-word texts that have about five,
while a small S throws away most of a long document. On the development corpora the
exact maximiser sat where the measured whole-document accuracy peaked (Banking77: 4,
health tweets: 9 against a measured best of 8): docs/benchmarks.md, section
"terms-per-doc". Long documents want more than the grid's largest S (BBC News: 177),
but there accuracy stopped rising: S = 128 against 80 gave the same at ε ≥ 3 and less
at ε = 1 (0.43 against 0.56), where the larger S's noise keeps fewer terms above the
floor; so the grid stops at 80, the former fixed default.

**Release.** Report-noisy-max (``privacy.selection``) over the grid. Each document adds
the integer ⌊K · min(m, S) / √S⌋ (K = ``RESOLUTION``) to candidate S's score, at most
⌊K · √max(grid)⌋, and all candidates move in the same direction: under add/remove-one
document the scores have L∞ sensitivity ⌊K · √max(grid)⌋, monotone. Only the chosen S
is released; it is recorded in the ledger like any other release.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dptext.privacy import PrivacyLedger
from dptext.privacy.selection import select_noisy_max
from dptext.text.extract import PhraseExtractor

#: candidate S values: steps of about √2, up to the former fixed default 80
GRID: tuple[int, ...] = (2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 80)
RESOLUTION = 10  # K: the per-document scores are integers ⌊K · min(m, S) / √S⌋
TERMS_CHOICE_NAME = "terms per document"


def document_scores(m: np.ndarray, grid: Sequence[int] = GRID) -> np.ndarray:
    """(documents × candidates) int64: ⌊K · min(m_i, S) / √S⌋ for every S of ``grid``."""
    s = np.asarray(grid, dtype=np.float64)
    m = np.asarray(m, dtype=np.float64)[:, None]
    return np.floor(RESOLUTION * np.minimum(m, s) / np.sqrt(s)).astype(np.int64)


def score_sensitivity(grid: Sequence[int] = GRID) -> int:
    """The most one document adds to any candidate's score (m ≥ S at the largest S)."""
    return math.floor(RESOLUTION * math.sqrt(max(grid)))


@dataclass(frozen=True)
class TermCountScores:
    """Batch function (``dptext.compute.map_sum``): the candidates' scores summed over a
    batch of texts — each document's distinct public terms counted up to ``max(grid)``.
    A function of each document alone, so the batches' sums are the whole corpus's."""

    extractor: PhraseExtractor
    grid: tuple[int, ...] = GRID

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        firsts = self.extractor.extract_many(list(texts), max_terms=max(self.grid),
                                             distinct=True)
        m = np.fromiter((len(f) for f in firsts), dtype=np.int64, count=len(firsts))
        return document_scores(m, self.grid).sum(axis=0)


def choose_terms_per_doc(scores: Sequence[int], *, epsilon: float, ledger: PrivacyLedger,
                         grid: Sequence[int] = GRID) -> int:
    """The privately chosen S (one report-noisy-max release in ``ledger``) from the exact
    summed ``scores`` (private; one per candidate of ``grid``)."""
    if len(scores) != len(grid):
        raise ValueError(f"{len(scores)} scores for {len(grid)} candidates")
    sens = score_sensitivity(grid)
    pick = select_noisy_max(
        list(scores), sensitivity=sens, epsilon=epsilon, ledger=ledger,
        name=f"{TERMS_CHOICE_NAME} ({len(grid)} candidates)", fold=None,
        reason=(f"one document adds ⌊{RESOLUTION}·min(m, S)/√S⌋ ≤ {sens} to every "
                f"candidate S's score (m: its distinct public terms); candidates: "
                f"{', '.join(map(str, grid))}"))
    return int(grid[pick])
