"""Fidelity (how close synthetic is to real) and diversity (how varied synthetic is).

* Fréchet distance between the Gaussian fits of real and synthetic sentence
  embeddings (FID applied to text embeddings); as a yardstick the same distance
  between real training and real test documents when the private corpus is given.
* Type-token ratio (per document, averaged), distinct-n (unique n-grams / all
  n-grams over the corpus) and self-similarity (mean pairwise cosine similarity of
  the embeddings; high = repetitive).
* A 2-D t-SNE map of real and synthetic embeddings (DP-KPS figure 5).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from dptext.evaluate._shared import tokenize


def _psd_sqrt(c: np.ndarray) -> np.ndarray:
    w, v = np.linalg.eigh(c)
    return (v * np.sqrt(np.clip(w, 0, None))) @ v.T


def frechet_distance(x: np.ndarray, y: np.ndarray) -> float:
    """``||mu_x - mu_y||^2 + Tr(C_x + C_y - 2 (C_x C_y)^{1/2})`` of two samples (rows).

    Tr((C_x C_y)^{1/2}) is computed as the sum of the square roots of the eigenvalues
    of the symmetric PSD matrix C_x^{1/2} C_y C_x^{1/2} (same spectrum, numerically
    stable even for the rank-deficient covariances of small samples).
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    mu_x, mu_y = x.mean(axis=0), y.mean(axis=0)
    c_x = np.atleast_2d(np.cov(x, rowvar=False))
    c_y = np.atleast_2d(np.cov(y, rowvar=False))
    s = _psd_sqrt(c_x)
    tr_covmean = float(np.sqrt(np.clip(np.linalg.eigvalsh(s @ c_y @ s), 0, None)).sum())
    diff = mu_x - mu_y
    return float(max(diff @ diff + np.trace(c_x) + np.trace(c_y) - 2 * tr_covmean, 0.0))


def type_token_ratio(texts: Sequence[str]) -> float:
    """Mean over documents of (distinct tokens / tokens)."""
    ratios = [len(set(t)) / len(t) for t in map(tokenize, texts) if t]
    return float(np.mean(ratios)) if ratios else 0.0


def distinct_n(texts: Sequence[str], n: int) -> float:
    """Distinct n-grams / all n-grams over the whole corpus (Li et al. 2016)."""
    counts: Counter = Counter()
    for t in map(tokenize, texts):
        counts.update(zip(*(t[i:] for i in range(n)), strict=False))
    total = sum(counts.values())
    return len(counts) / total if total else 0.0


def self_similarity(emb: np.ndarray, max_docs: int = 1000, seed: int = 0) -> float:
    """Mean cosine similarity between distinct pairs of (unit-norm) embeddings."""
    if len(emb) < 2:
        return float("nan")
    if len(emb) > max_docs:
        emb = emb[np.random.default_rng(seed).choice(len(emb), max_docs, replace=False)]
    sims = emb @ emb.T
    n = len(emb)
    return float((sims.sum() - np.trace(sims)) / (n * (n - 1)))


def diversity(texts: Sequence[str], emb: np.ndarray, seed: int = 0) -> dict:
    return {
        "type_token_ratio": type_token_ratio(texts),
        **{f"distinct_{n}": distinct_n(texts, n) for n in (1, 2, 3)},
        "self_similarity": self_similarity(emb, seed=seed),
        "mean_tokens": float(np.mean([len(tokenize(t)) for t in texts])) if texts else 0.0,
    }


def embedding_map(real: np.ndarray, synth: np.ndarray, max_points: int, seed: int = 0) -> dict:
    """t-SNE coordinates of (a sample of) real and synthetic embeddings."""
    from sklearn.manifold import TSNE

    rng = np.random.default_rng(seed)
    half = max_points // 2
    ri = rng.choice(len(real), min(half, len(real)), replace=False)
    si = rng.choice(len(synth), min(half, len(synth)), replace=False)
    x = np.vstack([real[ri], synth[si]])
    if len(x) < 5:
        return {}
    perplexity = float(min(30, max(2, (len(x) - 1) // 3)))
    xy = TSNE(n_components=2, perplexity=perplexity, init="pca", random_state=seed,
              metric="cosine").fit_transform(x)
    return {"real": np.round(xy[: len(ri)], 3).tolist(),
            "synthetic": np.round(xy[len(ri):], 3).tolist(),
            "real_index": ri.tolist(), "synthetic_index": si.tolist()}


def _label_counts(labels) -> dict:
    c: Counter = Counter()
    for lab in labels or ():
        c.update(lab if isinstance(lab, tuple) else (lab,))
    return dict(sorted(c.items()))


def fidelity_and_diversity(synthetic, test, embed, map_points: int = 800, seed: int = 0,
                           reference=None) -> dict:
    e_syn, e_test = embed(synthetic.texts), embed(test.texts)
    out: dict = {"frechet_distance": frechet_distance(e_test, e_syn)}
    if reference is not None:
        out["frechet_reference"] = frechet_distance(e_test, embed(reference.texts))
    out["centroid_cosine"] = float(
        e_syn.mean(0) @ e_test.mean(0)
        / (np.linalg.norm(e_syn.mean(0)) * np.linalg.norm(e_test.mean(0)) + 1e-12))
    out["diversity"] = {"synthetic": diversity(synthetic.texts, e_syn, seed),
                        "real_test": diversity(test.texts, e_test, seed)}
    out["label_counts"] = {"synthetic": _label_counts(synthetic.labels),
                           "real_test": _label_counts(test.labels)}
    if map_points > 0:
        out["map"] = embedding_map(e_test, e_syn, map_points, seed)
    return out
