"""Coreference scores: MUC, B³, CEAF-e, their mean (the CoNLL F1) and mention F1.

The standard definitions (Pradhan et al. 2014, "Scoring Coreference Partitions of
Predicted Mentions: A Reference Implementation"), with predicted mentions allowed to
differ from the key's. Each document yields numerators and denominators; they are
summed over the documents before dividing (micro-averaging, as the reference scorer).
A mention is any hashable key (dptext scores head tokens).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

Clusters = Sequence[Sequence[Hashable]]


def _overlaps(key: Clusters, response: Clusters) -> np.ndarray:
    """``|K_i ∩ R_j|`` for every key cluster i and response cluster j."""
    where = {m: j for j, r in enumerate(response) for m in r}
    out = np.zeros((len(key), len(response)))
    for i, k in enumerate(key):
        for m in k:
            if m in where:
                out[i, where[m]] += 1
    return out


def muc_counts(key: Clusters, response: Clusters) -> tuple[float, float]:
    """Σ (|K| − |partitions of K by the response|) and Σ (|K| − 1); mentions the response
    lacks are partitions of their own."""
    ov = _overlaps(key, response)
    sizes = np.array([len(k) for k in key], dtype=float)
    parts = (ov > 0).sum(axis=1) + (sizes - ov.sum(axis=1))
    return float((sizes - parts).sum()), float((sizes - 1).clip(min=0).sum())


def b3_counts(key: Clusters, response: Clusters) -> tuple[float, float]:
    """Σ_K Σ_R |K ∩ R|² / |K| and Σ |K| (recall; swap the arguments for precision)."""
    ov = _overlaps(key, response)
    sizes = np.array([len(k) for k in key], dtype=float)
    if not len(sizes):
        return 0.0, 0.0
    return float(((ov ** 2).sum(axis=1) / sizes).sum()), float(sizes.sum())


def ceafe_similarity(key: Clusters, response: Clusters) -> float:
    """Σ φ4 over the best one-to-one alignment, φ4(K, R) = 2 |K ∩ R| / (|K| + |R|)."""
    if not key or not response:
        return 0.0
    ov = _overlaps(key, response)
    sk = np.array([len(k) for k in key], dtype=float)[:, None]
    sr = np.array([len(r) for r in response], dtype=float)[None, :]
    phi = 2 * ov / (sk + sr)
    rows, cols = linear_sum_assignment(phi, maximize=True)
    return float(phi[rows, cols].sum())


def _prf(num_r: float, den_r: float, num_p: float, den_p: float) -> dict:
    r = num_r / den_r if den_r else 0.0
    p = num_p / den_p if den_p else 0.0
    return {"precision": float(p), "recall": float(r),
            "f1": float(2 * p * r / (p + r)) if p + r else 0.0}


def score(keys: Sequence[Clusters], responses: Sequence[Clusters]) -> dict:
    """MUC, B³, CEAF-e (precision, recall, F1), ``conll_f1`` (mean of the three F1s) and
    ``mentions`` (mention detection) over paired documents."""
    if len(keys) != len(responses):
        raise ValueError("one response per key document")
    tot = np.zeros((4, 4))  # rows: muc, b3, ceafe, mentions; cols: num_r, den_r, num_p, den_p
    for key, resp in zip(keys, responses, strict=True):
        key = [list(k) for k in key if len(k)]
        resp = [list(r) for r in resp if len(r)]
        tot[0] += (*muc_counts(key, resp), *muc_counts(resp, key))
        tot[1] += (*b3_counts(key, resp), *b3_counts(resp, key))
        sim = ceafe_similarity(key, resp)
        tot[2] += (sim, len(key), sim, len(resp))
        km, rm = {m for k in key for m in k}, {m for r in resp for m in r}
        tot[3] += (len(km & rm), len(km), len(km & rm), len(rm))
    out = {name: _prf(*row) for name, row in zip(("muc", "b3", "ceafe", "mentions"), tot,
                                                 strict=True)}
    out["conll_f1"] = float(np.mean([out[m]["f1"] for m in ("muc", "b3", "ceafe")]))
    return out
