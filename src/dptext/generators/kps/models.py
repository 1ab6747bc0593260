"""Keyphrase models: how released statistics become per-class term distributions.

The DP-KPS engine makes at most two releases on the private corpus (see
``generators/kps/``): the per-class term histogram (``keyphrases/histogram.py``) and the
per-class RFF KDE sketches (``kde/sketch.py``). A *model* is pure post-processing of
those releases: it turns them into sampling weights over the released vocabulary Ṽ
for each class and draws keyphrase sequences from them, at no privacy cost. So many
models (and parameters) can be built from the same releases and one chosen privately
(``generators/kps/selection.py``) without paying for each.

* ``kde`` — the paper's RFF KDE: clipped unigram scores of the class's sketch on the
  contrastive candidate set (or, with ``method="iterative"``, scored against each
  prefix, appendix B.2);
* ``histogram`` — the bandwidth-0 limit: weight c_k(t)·(c_k(t)/Σ_j c_j(t))^p of the kept
  (above-floor) noisy counts, frequent in the class and specific to it; the purity power
  p and the floor are parameters (p = 0: by class frequency alone);
* ``smoothed`` — the histogram smoothed through embedding neighbours: each kept
  count is spread over the term's nearest released terms with the Gaussian kernel
  exp(−‖e_t − e_u‖²/h²) (the KDE's smoothing, applied to the released histogram —
  no release of its own);
* ``hybrid`` — the mixture λ·p_hist + (1 − λ)·p_kde of the two normalised weights:
  the histogram's precision where a class's cells rose above the noise, the KDE's
  smoothing where they did not (a class with no kept cell falls back to the KDE).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np
from scipy import sparse

from dptext.kde.sampler import SamplingStats, sample_independent, sample_iterative
from dptext.kde.sketch import ReleasedSketches
from dptext.keyphrases.histogram import ReleasedHistogram

MODELS = ("auto", "kde", "histogram", "smoothed", "hybrid")
# which releases a model family needs (what selecting among them has to pay for)
NEEDS = {"kde": ("histogram", "kde"), "histogram": ("histogram",),
         "smoothed": ("histogram",), "hybrid": ("histogram", "kde"),
         "auto": ("histogram",)}


@runtime_checkable
class KeyphraseModel(Protocol):
    """Post-processing of released statistics into keyphrase sequences over Ṽ."""

    name: str

    def weights(self, label: Hashable) -> np.ndarray:
        """Non-negative sampling weight of every term of Ṽ for ``label``."""

    def sample(self, label: Hashable, n: int, length: int, rng: np.random.Generator,
               stats: SamplingStats) -> np.ndarray:
        """(n, length) indices into Ṽ, −1 where a sequence is shorter than ``length``."""


def _normalised(w: np.ndarray) -> np.ndarray:
    w = np.maximum(np.asarray(w, dtype=np.float64), 0.0)
    total = w.sum()
    return w / total if total > 0 else w


@dataclass(frozen=True)
class KdeModel:
    """The paper's RFF KDE (sampling as before this interface existed)."""

    sketches: ReleasedSketches
    unigram: dict
    candidates: dict
    embeddings: np.ndarray
    method: str = "independent"
    name: str = "kde"

    def weights(self, label: Hashable) -> np.ndarray:
        w = np.zeros(len(self.unigram[label]))
        cand = self.candidates[label]
        w[cand] = np.maximum(self.unigram[label][cand], 0.0)
        return w

    def sample(self, label, n, length, rng, stats) -> np.ndarray:
        cand = self.candidates[label]
        if self.method == "independent":
            pos = sample_independent(self.unigram[label][cand], n, length, rng, stats)
        else:
            pos = sample_iterative(self.sketches, label, self.embeddings, cand, n, length,
                                   rng, stats)
        return np.where(pos >= 0, cand[np.maximum(pos, 0)], -1)


@dataclass(frozen=True)
class HistogramModel:
    """The per-class DP term histogram (kept cells only)."""

    histogram: ReleasedHistogram
    power: float = 1.0  # the purity exponent p of ReleasedHistogram.weights
    false_cells: float | None = None  # its floor (ReleasedHistogram.kept); None: as released
    name: str = "histogram"

    def weights(self, label: Hashable) -> np.ndarray:
        return self.histogram.weights(label, self.power, self.false_cells)

    def sample(self, label, n, length, rng, stats) -> np.ndarray:
        return sample_weights(self.weights(label), n, length, rng, stats)


def neighbour_kernel(embeddings: np.ndarray, neighbours: int, bandwidth: float,
                     batch: int = 1024) -> sparse.csr_matrix:
    """(|Ṽ|, |Ṽ|) sparse kernel: row t holds exp(−‖e_t − e_u‖²/h²) for the ``neighbours``
    released terms u nearest to t (t itself included). Embeddings are unit-norm public
    terms; the loop is over row batches, not over data."""
    n = len(embeddings)
    k = min(neighbours, n)
    rows, cols, vals = [], [], []
    for lo in range(0, n, batch):
        sim = embeddings[lo:lo + batch] @ embeddings.T
        idx = np.argpartition(-sim, k - 1, axis=1)[:, :k]
        near = np.take_along_axis(sim, idx, axis=1)
        rows.append(np.repeat(np.arange(lo, lo + len(sim)), k))
        cols.append(idx.ravel())
        vals.append(np.exp(-np.maximum(2.0 - 2.0 * near, 0.0) / bandwidth**2).ravel())
    if not rows:
        return sparse.csr_matrix((n, n))
    return sparse.csr_matrix((np.concatenate(vals), (np.concatenate(rows),
                                                      np.concatenate(cols))), shape=(n, n))


@dataclass(frozen=True)
class SmoothedHistogramModel:
    """The histogram's kept counts spread over embedding neighbours, then weighted like
    the histogram: s_k(t) = Σ_u K(t, u)·c_k(u), weight s_k(t)·(s_k(t)/Σ_j s_j(t))^p."""

    histogram: ReleasedHistogram
    kernel: sparse.csr_matrix
    bandwidth: float
    power: float = 1.0
    false_cells: float | None = None  # the floor of the counts it spreads (as HistogramModel)
    name: str = "smoothed"

    def weights(self, label: Hashable) -> np.ndarray:
        counts = self.histogram.kept(self.false_cells)
        smoothed = np.asarray(self.kernel @ counts.T).T  # (classes, |Ṽ|)
        col = smoothed.sum(axis=0)
        s = smoothed[self.histogram.labels.index(label)]
        purity = np.divide(s, col, out=np.zeros_like(s), where=col > 0)
        return s * purity**self.power

    def sample(self, label, n, length, rng, stats) -> np.ndarray:
        return sample_weights(self.weights(label), n, length, rng, stats)


@dataclass(frozen=True)
class MixtureModel:
    """λ·p_hist + (1 − λ)·p_kde over Ṽ; a class without any kept histogram cell (or
    without positive KDE scores) uses the other part alone."""

    histogram: HistogramModel
    kde: KdeModel
    mix: float
    name: str = "hybrid"

    def weights(self, label: Hashable) -> np.ndarray:
        h = _normalised(self.histogram.weights(label))
        k = _normalised(self.kde.weights(label))
        if not h.any():
            return k
        if not k.any():
            return h
        return self.mix * h + (1.0 - self.mix) * k

    def sample(self, label, n, length, rng, stats) -> np.ndarray:
        return sample_weights(self.weights(label), n, length, rng, stats)


def sample_weights(weights: np.ndarray, n: int, length: int, rng: np.random.Generator,
                    stats: SamplingStats) -> np.ndarray:
    """``length`` distinct terms per sequence ∝ weights; with no positive weight the
    sequences are empty (not padded with noise terms)."""
    if not np.any(weights > 0):
        stats.short_sequences += n
        return np.full((n, length), -1, dtype=np.int64)
    return sample_independent(weights, n, length, rng, stats)


def describe(model: KeyphraseModel) -> str:
    """A short public description of a model and its parameters (for the report)."""
    if isinstance(model, MixtureModel):
        return f"hybrid (histogram weight {model.mix:g})"
    if isinstance(model, SmoothedHistogramModel):
        return f"smoothed histogram (bandwidth {model.bandwidth:g}, purity power {model.power:g})"
    if isinstance(model, HistogramModel):
        floor = model.histogram.false_cells if model.false_cells is None else model.false_cells
        return f"histogram (purity power {model.power:g}, floor at {floor:g} false cells)"
    return model.name
