"""Sampling keyphrase sequences from released KDE sketches (pure post-processing).

Score of a candidate term w after a prefix P, for one class's noisy sketch sum F̃:

    score(P, w) = Σ_k F̃_k · √2 cos(a_k(P) + b_k(w))
                = √2 · [F̃∘cos a(P), −F̃∘sin a(P)] · [cos b(w), sin b(w)]

with a = prefix phase + β and b = candidate phase. For S prefixes and |C| candidates
this is ONE (S × 2I)·(2I × |C|) matrix product per step — 4·S·|C|·I flops — instead
of S·|C| evaluations of an (i·d)-dimensional kernel. Noisy scores can be negative:
they are clipped at zero; a row with no positive score falls back to the uniform
distribution over its allowed candidates (and is counted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dptext.kde.rff import SQRT2, FourierFeatures
from dptext.kde.sketch import ReleasedSketches, sketch_for_prefix

SAMPLING = ("proportional", "contrastive")


@dataclass
class SamplingStats:
    """What sampling had to do beyond the plain rule (non-private diagnostics)."""

    draws: int = 0
    uniform_fallbacks: int = 0
    short_sequences: int = 0
    per_step_fallbacks: list[int] = field(default_factory=list)


def score_matrix(ff: FourierFeatures, noisy_sum: np.ndarray, prefix_phase: np.ndarray,
                 candidate_phase: np.ndarray) -> np.ndarray:
    """Noisy KDE scores (S, |C|) of every candidate after every prefix."""
    a = prefix_phase + ff.beta
    left = np.concatenate([noisy_sum * np.cos(a), -noisy_sum * np.sin(a)], axis=1)
    right = np.concatenate([np.cos(candidate_phase), np.sin(candidate_phase)], axis=1)
    return SQRT2 * (left @ right.T)


def unigram_scores(sketches: ReleasedSketches, embeddings: np.ndarray) -> dict:
    """Per-class noisy scores of every term on its own (from the 1-keyphrase sketch)."""
    j = sketch_for_prefix(sketches.blocks, 1)
    ff = sketches.features[j]
    phase = ff.block_phase(embeddings, 0)
    zero = np.zeros((1, ff.features), dtype=np.float32)
    return {c: score_matrix(ff, sums[j], zero, phase)[0] for c, sums in sketches.sums.items()}


def candidate_sets(unigram: dict, sampling: str, keep: float, min_keep: int = 1) -> dict:
    """Candidate term indices per class.

    proportional: every term. contrastive: the ``keep`` fraction of terms whose
    clipped score for the class is highest relative to the term's mean clipped score
    over all classes, but at least ``min_keep`` (post-processing of released
    sketches: no privacy cost).
    """
    classes = list(unigram)
    n_terms = len(next(iter(unigram.values())))
    if sampling == "proportional" or len(classes) < 2:
        return {c: np.arange(n_terms) for c in classes}
    if sampling != "contrastive":
        raise ValueError(f"sampling must be one of {SAMPLING}, got {sampling!r}")
    clipped = np.maximum(np.stack([unigram[c] for c in classes]), 0.0)
    mean = clipped.mean(axis=0)
    ratio = np.divide(clipped, mean, out=np.zeros_like(clipped), where=mean > 0)
    k = min(n_terms, max(1, min_keep, round(keep * n_terms)))
    out = {}
    for i, c in enumerate(classes):
        order = np.argsort(-ratio[i], kind="stable")[:k]
        chosen = order[clipped[i, order] > 0]
        out[c] = np.sort(chosen if chosen.size else order)
    return out


def _draw_rows(weights: np.ndarray, allowed: np.ndarray, rng: np.random.Generator,
               stats: SamplingStats) -> np.ndarray:
    """One index per row, ∝ clipped weights among allowed columns; uniform if none > 0."""
    w = np.where(allowed, np.maximum(weights, 0.0), 0.0)
    total = w.sum(axis=1)
    dead = total <= 0
    if dead.any():
        w[dead] = allowed[dead]
        total[dead] = w[dead].sum(axis=1)
        stats.uniform_fallbacks += int(dead.sum())
    stats.per_step_fallbacks.append(int(dead.sum()))
    stats.draws += len(w)
    cdf = np.cumsum(w, axis=1)
    u = rng.random(len(w)) * total
    idx = (cdf < u[:, None]).sum(axis=1)
    return np.minimum(idx, w.shape[1] - 1)


def sample_independent(scores: np.ndarray, n: int, length: int,
                       rng: np.random.Generator, stats: SamplingStats) -> np.ndarray:
    """(n, length) candidate positions: ``length`` distinct draws ∝ clipped scores.

    Sampling without replacement by the Gumbel-top-k trick, vectorised over rows.
    """
    p = np.maximum(scores, 0.0)
    if p.sum() <= 0:
        p = np.ones_like(p)
        stats.uniform_fallbacks += n
    stats.draws += n * length
    positive = int((p > 0).sum())
    with np.errstate(divide="ignore"):
        # non-private randomness: sampling from already-released scores (post-processing)
        keys = np.log(p)[None, :] + rng.gumbel(size=(n, p.size))
    take = min(length, positive)
    order = np.argsort(-keys, axis=1)[:, :take]
    if take < length:
        stats.short_sequences += n
        order = np.concatenate([order, np.full((n, length - take), -1)], axis=1)
    return order


def sample_iterative(sketches: ReleasedSketches, label, embeddings: np.ndarray,
                     candidates: np.ndarray, n: int, length: int,
                     rng: np.random.Generator, stats: SamplingStats,
                     batch: int = 1024) -> np.ndarray:
    """(n, length) candidate positions, each step scored against its prefix.

    Step i queries the smallest sketch holding i keyphrases, with the prefix
    zero-padded (appendix B.2); terms already in the sequence are not drawn again.
    """
    cand_emb = embeddings[candidates]
    out = np.empty((n, length), dtype=np.int64)
    for lo in range(0, n, batch):
        m = min(batch, n - lo)
        seq = np.empty((m, 0), dtype=np.int64)  # positions into ``candidates``
        current, prefix = -1, None
        for i in range(1, length + 1):
            j = sketch_for_prefix(sketches.blocks, i)
            ff = sketches.features[j]
            if j != current:  # a new sketch: project the whole prefix once
                current, prefix = j, ff.sequence_phase(cand_emb, seq)
            elif seq.shape[1]:  # same sketch: add the newest block only
                prefix = prefix + ff.block_phase(cand_emb[seq[:, -1]], seq.shape[1] - 1)
            scores = score_matrix(ff, sketches.sums[label][j], prefix,
                                  ff.block_phase(cand_emb, i - 1))
            allowed = np.ones_like(scores, dtype=bool)
            if seq.shape[1]:
                allowed[np.arange(m)[:, None], seq] = False
            if not allowed.any(axis=1).all():  # fewer candidates than the length
                stats.short_sequences += m
                out[lo:lo + m] = np.concatenate([seq, np.full((m, length - seq.shape[1]), -1)],
                                                axis=1)
                break
            seq = np.concatenate([seq, _draw_rows(scores, allowed, rng, stats)[:, None]], axis=1)
        else:
            out[lo:lo + m] = seq
    return out
