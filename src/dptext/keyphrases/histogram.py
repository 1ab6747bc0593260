"""The per-class DP term histogram: one noisy release of the classes × terms count matrix.

Each document adds +1 to the cells of its first S distinct public vocabulary terms,
all in its own class's row. Under add/remove-one-document neighbours the whole
matrix moves by at most S cells of 1 each:

    L1 sensitivity S, L2 sensitivity √S   (the same as the DP vocabulary histogram)

whatever the number of classes, because a document touches one row only (in a
multi-label corpus, at most k rows: its labels capped at k; L1 k·S, L2 √(k·S)). The label
partition must be public (declared) or itself released: the rows are indexed by it.
The matrix is built sparse (scipy) from the documents' term indices and released
dense, once, through ``dptext.privacy.release``.

Everything after the release is post-processing: cells at or below the noise floor
(the level ≤ ``false_cells`` zero-count cells are expected to reach) are dropped;
row sums estimate class sizes, column sums a vocabulary; the kept columns are the
released vocabulary Ṽ. A higher floor can still be applied afterwards
(``ReleasedHistogram.kept``), so models with different floors share one release.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse

from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, release
from dptext.text.extract import PhraseExtractor

HISTOGRAM_NAME = "class × term histogram"


def class_term_counts(firsts: Sequence[np.ndarray], class_ids: np.ndarray, n_classes: int,
                      n_terms: int) -> sparse.csr_matrix:
    """Exact counts (n_classes × n_terms): row k, column t = documents of class k whose
    term list holds t. ``firsts`` must be distinct term indices per document (at most S
    each, by construction of the extractor); ``class_ids`` −1 drops a document."""
    lengths = np.fromiter((len(f) for f in firsts), dtype=np.int64, count=len(firsts))
    if lengths.sum() == 0:
        return sparse.csr_matrix((n_classes, n_terms), dtype=np.float64)
    cols = np.concatenate([np.asarray(f, dtype=np.int64) for f in firsts if len(f)])
    rows = np.repeat(np.asarray(class_ids, dtype=np.int64), lengths)
    keep = rows >= 0
    return sparse.csr_matrix((np.ones(int(keep.sum())), (rows[keep], cols[keep])),
                             shape=(n_classes, n_terms), dtype=np.float64)


def histogram_sensitivity(terms_per_doc: int, rows: int = 1) -> Sensitivity:
    """One document's reach: S cells of its class's row; in a multi-label corpus S cells
    in each of at most ``rows`` rows (its capped labels): L1 rows·S, L2 √(rows·S)."""
    s = terms_per_doc
    if rows > 1:
        return Sensitivity(l1=float(rows * s), l2=math.sqrt(rows * s),
                           reason=f"one document adds +1 to at most S={s} distinct terms in "
                                  f"each of at most {rows} rows (its labels, capped at "
                                  f"{rows})")
    return Sensitivity(l1=float(s), l2=math.sqrt(s),
                       reason=f"one document adds +1 to at most S={s} distinct terms, "
                              "all in its own class's row")


def noise_floor_of(noise_scale: float, mechanism: str, cells: int, false_cells: float) -> float:
    """Noisy count above which ≤ ``false_cells`` of ``cells`` zero-count cells lie."""
    from scipy import stats

    p = min(false_cells / cells, 1.0)
    if p >= 0.5:
        return -math.inf
    if mechanism == "laplace":  # P(X > t) = exp(-t/b) / 2
        return noise_scale * math.log(1.0 / (2.0 * p))
    return noise_scale * float(stats.norm.isf(p))


@dataclass(frozen=True)
class ReleasedHistogram:
    """The kept (above-floor) cells of the released class × term histogram.

    ``terms``: the released vocabulary Ṽ, columns with at least one kept cell, by
    decreasing kept mass (at most ``max_terms``); ``counts``: (classes, |Ṽ|) noisy
    counts, 0 where a cell was at or below ``floor`` (the floor of ``false_cells``
    expected false cells among ``cells``); ``row_sums``: each class's noisy row sum over
    every public term (an estimate of S × class size).
    """

    labels: tuple[Hashable, ...]
    terms: tuple[str, ...]
    counts: np.ndarray
    row_sums: np.ndarray
    floor: float
    noise_scale: float
    mechanism: str = "gaussian"
    cells: int = 0
    false_cells: float = math.inf

    def kept(self, false_cells: float | None = None) -> np.ndarray:
        """The counts with the cells at or below the floor of ``false_cells`` expected
        false cells zeroed (None: as released). Only a floor at least as high as the
        release's can be applied: the cells below it were not kept."""
        if false_cells is None or false_cells == self.false_cells:
            return self.counts
        if false_cells > self.false_cells:
            raise ValueError(f"a floor of {false_cells:g} expected false cells is below the "
                             f"released one ({self.false_cells:g})")
        floor = noise_floor_of(self.noise_scale, self.mechanism, self.cells, false_cells)
        return np.where(self.counts > floor, self.counts, 0.0)

    def weights(self, label: Hashable, power: float = 1.0,
                false_cells: float | None = None) -> np.ndarray:
        """Sampling weight of every term for ``label``: c_k(t) · (c_k(t) / Σ_j c_j(t))^p —
        frequent in the class and specific to it; a larger ``power`` p favours specific
        terms more, p = 0 samples by class frequency alone (post-processing); cells
        below the floor of ``false_cells`` (``kept``) count 0."""
        counts = np.maximum(self.kept(false_cells), 0.0)  # a floor of −∞ keeps negatives
        k = self.labels.index(label)
        col = counts.sum(axis=0)
        c = counts[k]
        purity = np.divide(c, col, out=np.zeros_like(c), where=col > 0)
        return c * purity**power


@dataclass(frozen=True)
class ClassTermCounts:
    """Batch function (``dptext.compute.map_sum``): the exact class × term counts of a batch
    of ``(text, class id)`` pairs, as an int64 sparse matrix — each document's first
    ``terms_per_doc`` distinct public terms, in its class's row (class id −1: not
    counted). A function of each document alone, so the batches' sums are the counts of
    the whole corpus whatever the engine or the batching."""

    extractor: PhraseExtractor
    terms_per_doc: int
    n_classes: int

    def __call__(self, batch: Sequence[tuple[str, int]]) -> sparse.csr_matrix:
        texts = [text for text, _ in batch]
        ids = np.fromiter((c for _, c in batch), dtype=np.int64, count=len(batch))
        firsts = self.extractor.extract_many(texts, max_terms=self.terms_per_doc,
                                             distinct=True)
        if any(len(f) > self.terms_per_doc for f in firsts):
            raise ValueError("a document contributes more than terms_per_doc terms")
        counts = class_term_counts(firsts, ids, self.n_classes, len(self.extractor))
        return counts.astype(np.int64)


def release_histogram(firsts: Sequence[np.ndarray], class_ids: np.ndarray,
                      labels: Sequence[Hashable], public_terms: Sequence[str],
                      noise: NoiseSpec, ledger: PrivacyLedger, *, terms_per_doc: int,
                      false_cells: float, max_terms: int, fold: str | None = None
                      ) -> ReleasedHistogram:
    """Release the class × term histogram once and keep the cells above the floor."""
    if any(len(f) > terms_per_doc for f in firsts):
        raise ValueError("a document contributes more than terms_per_doc terms")
    exact = class_term_counts(firsts, class_ids, len(labels), len(public_terms))
    return release_counts(exact, labels, public_terms, noise, ledger,
                          terms_per_doc=terms_per_doc, false_cells=false_cells,
                          max_terms=max_terms, fold=fold)


def release_counts(exact: sparse.spmatrix, labels: Sequence[Hashable],
                   public_terms: Sequence[str], noise: NoiseSpec, ledger: PrivacyLedger, *,
                   terms_per_doc: int, false_cells: float, max_terms: int,
                   fold: str | None = None, rows: int = 1) -> ReleasedHistogram:
    """``release_histogram`` from the exact counts (e.g. summed by ``ClassTermCounts``
    batches): one release, then the cells above the floor. ``rows``: the most rows one
    document adds to (a multi-label corpus: its capped labels)."""
    noisy = release(exact.toarray().astype(np.float64),
                    histogram_sensitivity(terms_per_doc, rows),
                    noise,
                    ledger=ledger, name=f"{HISTOGRAM_NAME} ({len(public_terms)} public terms)",
                    fold=fold)
    rec = ledger.releases[-1]
    floor = noise_floor_of(rec.noise_scale, rec.mechanism, noisy.size, false_cells)
    kept = np.where(noisy > floor, noisy, 0.0)
    mass = kept.sum(axis=0)
    order = np.argsort(-mass, kind="stable")
    order = order[mass[order] > 0][:max_terms]
    return ReleasedHistogram(labels=tuple(labels),
                             terms=tuple(public_terms[i] for i in order),
                             counts=kept[:, order], row_sums=noisy.sum(axis=1),
                             floor=floor, noise_scale=rec.noise_scale,
                             mechanism=rec.mechanism, cells=noisy.size,
                             false_cells=false_cells)
