"""DP-KDE sketches: per-class sums of random Fourier features, released once with noise.

A document is a sequence of indices into the released vocabulary Ṽ (its keyphrases
in order of appearance). For a sketch over ``blocks`` positions, each document
contributes ONE vector: the average of f(window) over its windows of ``blocks``
consecutive keyphrases (at most ``max_windows`` of them, sliding from the start; a
document shorter than the sketch gives one zero-padded window; a document without
keyphrases gives nothing). Every coordinate of that vector lies in [−√2, √2], so
under add/remove-one-document neighbours the concatenation of a class's m
sketches (I features each) moves by at most √2 per coordinate:

    L1 sensitivity √2·m·I   (Laplace, pure ε, the paper's mechanism)
    L2 sensitivity √(2·m·I) (Gaussian, (ε, δ): far less noise when m·I is large)

We release the *sum* over documents, not the mean, so the class size stays private
(sampling normalises scores, so the 1/n factor does not matter). Classes hold
disjoint documents: their sketches compose in parallel.

``exact_sums`` works on a batch of documents and returns sums that add up across
batches; noise is added exactly once, in ``release_sketches``.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from dptext.kde.rff import FEATURE_BOUND, FourierFeatures
from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, release

ENSEMBLES = ("linear", "log")
BATCH_WINDOWS = 4096
KDE_GROUP = "KDE sketches (one set per class, disjoint documents)"


def ensemble_blocks(method: str, length: int, ensemble: str = "log") -> tuple[int, ...]:
    """Sketch sizes (in keyphrases) that a sequence-generation method needs.

    independent: one sketch over single keyphrases. iterative + linear ensemble:
    one sketch per prefix length 1..L. iterative + log ensemble (appendix B.2):
    sketches over 1, 2, 4, … keyphrases (the last capped at L), so that a prefix is
    zero-padded by at most half of the sketch it queries.
    """
    if length < 1:
        raise ValueError("length must be >= 1")
    if method == "independent":
        return (1,)
    if ensemble == "linear":
        return tuple(range(1, length + 1))
    if ensemble == "log":
        return tuple(sorted({min(2**j, length) for j in range(math.ceil(math.log2(length)) + 1)}))
    raise ValueError(f"ensemble must be one of {ENSEMBLES}, got {ensemble!r}")


def sketch_for_prefix(blocks: Sequence[int], prefix_length: int) -> int:
    """Index of the smallest sketch that holds a prefix of ``prefix_length`` keyphrases."""
    for j, b in enumerate(blocks):
        if b >= prefix_length:
            return j
    raise ValueError(f"no sketch holds {prefix_length} keyphrases (sketches: {list(blocks)})")


def document_windows(sequences: Sequence[np.ndarray], blocks: int,
                     max_windows: int) -> tuple[np.ndarray, np.ndarray]:
    """Windows (nw, blocks) of term indices (−1 = padding) and each window's weight.

    A document's windows have weights summing to 1 (or it has none), which is what
    bounds its contribution to √2 per feature.
    """
    lengths = np.fromiter((len(s) for s in sequences), dtype=np.int64, count=len(sequences))
    width = max(int(lengths.max(initial=0)), blocks) + max_windows
    padded = np.full((len(sequences), width), -1, dtype=np.int64)
    if lengths.sum():
        rows = np.repeat(np.arange(len(sequences)), lengths)
        cols = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        padded[rows, cols] = np.concatenate([np.asarray(s, dtype=np.int64) for s in sequences
                                             if len(s)])
    n_windows = np.where(lengths >= blocks, np.minimum(lengths - blocks + 1, max_windows),
                         (lengths > 0).astype(np.int64))
    windows, weights = [], []
    for start in range(max_windows):  # loop over window offsets, not documents
        has = n_windows > start
        if not has.any():
            break
        windows.append(padded[has, start:start + blocks])
        weights.append(1.0 / n_windows[has])
    if not windows:
        return np.empty((0, blocks), dtype=np.int64), np.empty(0)
    return np.concatenate(windows), np.concatenate(weights)


def exact_sums(sequences: Sequence[np.ndarray], embeddings: np.ndarray,
               features: Sequence[FourierFeatures], max_windows: int) -> list[np.ndarray]:
    """Σ over documents of each document's averaged feature vector, one per sketch."""
    sums = []
    for ff in features:
        windows, weights = document_windows(sequences, ff.blocks, max_windows)
        if ff.blocks == 1:
            sums.append(_single_term_sums(windows[:, 0], weights, embeddings, ff))
            continue
        total = np.zeros(ff.features, dtype=np.float64)
        for lo in range(0, len(windows), BATCH_WINDOWS):
            w = windows[lo:lo + BATCH_WINDOWS]
            values = ff.feature_values(ff.sequence_phase(embeddings, w))
            total += weights[lo:lo + BATCH_WINDOWS].astype(np.float32) @ values
        sums.append(total)
    return sums


def _single_term_sums(terms: np.ndarray, weights: np.ndarray, embeddings: np.ndarray,
                      ff: FourierFeatures) -> np.ndarray:
    """The same sum for one-keyphrase windows, regrouped by term: Σ_w weight_w·f(term_w)
    = Σ_t (Σ of t's window weights)·f(t), so each term's features are computed once
    (|Ṽ|·d·I flops instead of windows·d·I). Each document's weights still sum to 1."""
    per_term = np.bincount(terms, weights=weights, minlength=len(embeddings))
    used = np.flatnonzero(per_term)
    total = np.zeros(ff.features, dtype=np.float64)
    for lo in range(0, len(used), BATCH_WINDOWS):
        idx = used[lo:lo + BATCH_WINDOWS]
        values = ff.feature_values(ff.block_phase(embeddings[idx], 0))
        total += per_term[idx] @ values.astype(np.float64)
    return total


def sketch_sensitivity(features: Sequence[FourierFeatures]) -> Sensitivity:
    total = sum(ff.features for ff in features)
    return Sensitivity(
        l1=FEATURE_BOUND * total,
        l2=math.sqrt(FEATURE_BOUND**2 * total),
        reason=(f"one document adds one averaged feature vector (|f| ≤ √2 per coordinate) to "
                f"each of its class's {len(features)} sketch(es), {total} coordinates in all"),
    )


@dataclass(frozen=True)
class ReleasedSketches:
    """Noisy per-class sketch sums and their (public) random features."""

    features: tuple[FourierFeatures, ...]
    sums: dict[Hashable, tuple[np.ndarray, ...]]

    @property
    def blocks(self) -> tuple[int, ...]:
        return tuple(ff.blocks for ff in self.features)


def release_sketches(
    class_sequences: dict[Hashable, Sequence[np.ndarray]],
    embeddings: np.ndarray,
    features: Sequence[FourierFeatures],
    noise: NoiseSpec,
    ledger: PrivacyLedger,
    *,
    max_windows: int,
    fold: str | None = None,
) -> ReleasedSketches:
    """Build each class's exact sketch sums and release them with noise, once."""
    sensitivity = sketch_sensitivity(features)
    sizes = [ff.features for ff in features]
    out = {}
    for label, seqs in class_sequences.items():
        exact = np.concatenate(exact_sums(seqs, embeddings, features, max_windows))
        noisy = release(exact, sensitivity, noise, ledger=ledger,
                        name="KDE sketch sums", partition=f"class={label}",
                        parallel_group=KDE_GROUP, fold=fold)
        out[label] = tuple(np.split(noisy.astype(np.float32), np.cumsum(sizes)[:-1]))
    return ReleasedSketches(features=tuple(features), sums=out)
