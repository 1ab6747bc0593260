"""Keyphrase models: how released statistics become per-class term distributions.

The DP-KPS engine makes at most two releases on the private corpus (see
``generators/kps.py``): the per-class term histogram (``kde/histogram.py``) and the
per-class RFF KDE sketches (``kde/sketch.py``). A *model* is pure post-processing of
those releases: it turns them into sampling weights over the released vocabulary Ṽ
for each class and draws keyphrase sequences from them, at no privacy cost. So many
models (and parameters) can be built from the same releases and one chosen privately
(``generators/kps_select.py``) without paying for each.

* ``kde`` — the paper's RFF KDE: clipped unigram scores of the class's sketch on the
  contrastive candidate set (or, with ``method="iterative"``, scored against each
  prefix, appendix B.2);
* ``histogram`` — the bandwidth-0 limit: weight c_k(t)·c_k(t)/Σ_j c_j(t) of the kept
  (above-floor) noisy counts, frequent in the class and specific to it;
* ``hybrid`` — the mixture λ·p_hist + (1 − λ)·p_kde of the two normalised weights:
  the histogram's precision where a class's cells rose above the noise, the KDE's
  smoothing where they did not (a class with no kept cell falls back to the KDE).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from dptext.kde.histogram import ReleasedHistogram
from dptext.kde.sampler import SamplingStats, sample_independent, sample_iterative
from dptext.kde.sketch import ReleasedSketches

MODELS = ("auto", "kde", "histogram", "hybrid")
# which releases a model family needs (what selecting among them has to pay for)
NEEDS = {"kde": ("histogram", "kde"), "histogram": ("histogram",),
         "hybrid": ("histogram", "kde"), "auto": ("histogram", "kde")}


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
    name: str = "histogram"

    def weights(self, label: Hashable) -> np.ndarray:
        return self.histogram.weights(label)

    def sample(self, label, n, length, rng, stats) -> np.ndarray:
        return _sample_weights(self.weights(label), n, length, rng, stats)


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
        return _sample_weights(self.weights(label), n, length, rng, stats)


def _sample_weights(weights: np.ndarray, n: int, length: int, rng: np.random.Generator,
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
    return model.name
