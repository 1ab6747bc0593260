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

The bound holds in floating point too: each document's contribution is computed on
its own (its windows' phases from per-term phase tables of the public vocabulary, so
no other document changes its rounding), averaged in float64, put on the 2⁻³⁰ grid
(OpenDP's noise grid) and clamped to the largest grid value ≤ √2; the contributions
are then summed exactly, as integers on that grid. Adding or removing a document
therefore moves every coordinate of the sum by its own clamped contribution and by
nothing else (exact while a class's sum stays below 2²³ ≈ 8·10⁶ per coordinate, i.e.
up to about six million documents per class).

``exact_sums`` works on a batch of documents and returns sums that add up across
batches; noise is added exactly once, in ``release_sketches``. ``release_corpus_sketches``
does the same from the documents' texts: ``SketchUnits`` batches (each document's
keyphrases found, its contribution computed and summed per class in grid units) run on
the current compute engine (``dptext.compute.map_sum``: local or Ray) with the phase
tables computed once, here, so every engine sums the same bits.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from dptext.kde.rff import FEATURE_BOUND, FourierFeatures
from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, release
from dptext.privacy.mechanisms import GRID_EXPONENT

ENSEMBLES = ("linear", "log")
BATCH_WINDOWS = 4096
GRID = 2.0 ** GRID_EXPONENT  # contributions lie on this grid, so their sums are exact
BOUND_UNITS = math.floor(FEATURE_BOUND / GRID)  # the largest grid multiple ≤ √2
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
    windows, weights, _ = _windows(sequences, blocks, max_windows)
    return windows, weights


def _windows(sequences: Sequence[np.ndarray], blocks: int, max_windows: int
             ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``document_windows`` and the document each window belongs to."""
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
    windows, weights, owners = [], [], []
    for start in range(max_windows):  # loop over window offsets, not documents
        has = n_windows > start
        if not has.any():
            break
        windows.append(padded[has, start:start + blocks])
        weights.append(1.0 / n_windows[has])
        owners.append(np.flatnonzero(has))
    if not windows:
        return (np.empty((0, blocks), dtype=np.int64), np.empty(0),
                np.empty(0, dtype=np.int64))
    return np.concatenate(windows), np.concatenate(weights), np.concatenate(owners)


def phase_tables(embeddings: np.ndarray, ff: FourierFeatures) -> list[np.ndarray]:
    """Per block position, the phase of every vocabulary term (|Ṽ|, I): public data only,
    computed once, so a window's phase never depends on which documents share its batch."""
    return [ff.block_phase(embeddings, b) for b in range(ff.blocks)]


def document_contributions(sequences: Sequence[np.ndarray], embeddings: np.ndarray,
                           ff: FourierFeatures, max_windows: int,
                           tables: list[np.ndarray] | None = None) -> np.ndarray:
    """Each document's contribution to a sketch (n, I), float64: the weighted mean of its
    windows' features, on the 2⁻³⁰ grid, clamped to [−√2, √2] (a document without
    keyphrases contributes zeros). A function of the document alone."""
    tables = phase_tables(embeddings, ff) if tables is None else tables
    windows, weights, owners = _windows(sequences, ff.blocks, max_windows)
    out = np.zeros((len(sequences), ff.features), dtype=np.float64)
    if len(windows):
        # a window's features, as in ``FourierFeatures.feature_values`` (float32: a fixed
        # function of the window), then averaged per document in float64
        phase = np.zeros((len(windows), ff.features), dtype=np.float32)
        for b in range(min(windows.shape[1], ff.blocks)):
            col = windows[:, b]
            present = col >= 0
            phase[present] += tables[b][col[present]]
        phase += ff.beta
        values = np.cos(phase, out=phase).astype(np.float64)
        values *= FEATURE_BOUND
        # windows come offset by offset, each offset's owners unique and increasing: add
        # one offset at a time, in order, so a document's sum never depends on the others
        cuts = [0, *(np.flatnonzero(np.diff(owners) <= 0) + 1).tolist(), len(owners)]
        for lo, hi in itertools.pairwise(cuts):
            out[owners[lo:hi]] += weights[lo:hi, None] * values[lo:hi]
    units = np.clip(np.rint(out / GRID), -BOUND_UNITS, BOUND_UNITS)
    return units * GRID


def exact_sums(sequences: Sequence[np.ndarray], embeddings: np.ndarray,
               features: Sequence[FourierFeatures], max_windows: int) -> list[np.ndarray]:
    """Σ over documents of each document's contribution (``document_contributions``), one
    per sketch, summed exactly (integers on the 2⁻³⁰ grid) and returned as float64."""
    sums = []
    per_batch = max(1, BATCH_WINDOWS // max(max_windows, 1))
    for ff in features:
        tables = phase_tables(embeddings, ff)
        total = np.zeros(ff.features, dtype=np.int64)
        for lo in range(0, len(sequences), per_batch):
            part = document_contributions(sequences[lo:lo + per_batch], embeddings, ff,
                                          max_windows, tables)
            total += np.rint(part / GRID).astype(np.int64).sum(axis=0)
        sums.append(total.astype(np.float64) * GRID)
    return sums


class SketchUnits:
    """Batch function (``dptext.compute.map_sum``) over ``(text, class id)`` pairs: per class,
    Σ of the documents' contributions to one sketch (``ff``), in units of the 2⁻³⁰ grid
    (int64, (classes, I)); class id −1: not counted. ``sequences_of`` maps texts to their
    keyphrase sequences (indices into Ṽ); ``tables``: the sketch's phase tables (public,
    computed once by the caller). A function of each document alone."""

    def __init__(self, sequences_of, n_classes: int, ff: FourierFeatures,
                 tables: list[np.ndarray], max_windows: int):
        self.sequences_of = sequences_of
        self.n_classes = n_classes
        self.ff = ff
        self.tables = tables
        self.max_windows = max_windows

    def __call__(self, batch: Sequence[tuple[str, int]]) -> np.ndarray:
        out = np.zeros((self.n_classes, self.ff.features), dtype=np.int64)
        ids = np.fromiter((c for _, c in batch), dtype=np.int64, count=len(batch))
        keep = np.flatnonzero(ids >= 0)
        if not keep.size:
            return out
        seqs = self.sequences_of([batch[i][0] for i in keep])
        ids = ids[keep]
        per = max(1, BATCH_WINDOWS // max(self.max_windows, 1))
        for lo in range(0, len(seqs), per):
            part = document_contributions(seqs[lo:lo + per], None, self.ff, self.max_windows,
                                          self.tables)
            np.add.at(out, ids[lo:lo + per], np.rint(part / GRID).astype(np.int64))
        return out


def corpus_sketch_sums(items: Sequence[tuple[str, int]], n_classes: int, sequences_of,
                       embeddings: np.ndarray, features: Sequence[FourierFeatures],
                       max_windows: int, batch_size: int = 2000) -> list[np.ndarray]:
    """Per class, the exact sums of every sketch concatenated (float64, as ``exact_sums``
    gives them), from ``(text, class id)`` pairs, on the current compute engine."""
    from dptext.compute import map_sum

    units = [map_sum(SketchUnits(sequences_of, n_classes, ff, phase_tables(embeddings, ff),
                                 max_windows), items, batch_size)
             for ff in features]
    return [np.concatenate([u[k].astype(np.float64) * GRID for u in units])
            for k in range(n_classes)]


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
    exact = {label: np.concatenate(exact_sums(seqs, embeddings, features, max_windows))
             for label, seqs in class_sequences.items()}
    return release_exact_sketches(exact, features, noise, ledger, fold=fold)


def release_corpus_sketches(items: Sequence[tuple[str, int]], labels: Sequence[Hashable],
                            sequences_of, embeddings: np.ndarray,
                            features: Sequence[FourierFeatures], noise: NoiseSpec,
                            ledger: PrivacyLedger, *, max_windows: int,
                            fold: str | None = None) -> ReleasedSketches:
    """``release_sketches`` from ``(text, class id)`` pairs (class id: index into ``labels``,
    −1 for none): the exact sums on the current compute engine, then the noise, once per
    class, here."""
    sums = corpus_sketch_sums(items, len(labels), sequences_of, embeddings, features,
                              max_windows)
    return release_exact_sketches(dict(zip(labels, sums, strict=True)), features, noise,
                                  ledger, fold=fold)


def release_exact_sketches(exact_by_class: dict[Hashable, np.ndarray],
                           features: Sequence[FourierFeatures], noise: NoiseSpec,
                           ledger: PrivacyLedger, *, fold: str | None = None
                           ) -> ReleasedSketches:
    """Release each class's exact (concatenated) sketch sums with noise, once."""
    sensitivity = sketch_sensitivity(features)
    sizes = [ff.features for ff in features]
    out = {}
    for label, exact in exact_by_class.items():
        noisy = release(exact, sensitivity, noise, ledger=ledger,
                        name="KDE sketch sums", partition=f"class={label}",
                        parallel_group=KDE_GROUP, fold=fold)
        out[label] = tuple(np.split(noisy.astype(np.float32), np.cumsum(sizes)[:-1]))
    return ReleasedSketches(features=tuple(features), sums=out)
