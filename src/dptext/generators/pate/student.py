"""The student discriminator and the label-distribution tutor's selection.

Both are post-processing of released values only: the student sees public candidate
embeddings and the noisy argmax of the teachers' votes; the tutor's counts come from the
noisy label histogram. Neither touches the private corpus.
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression


def student_scores(x_queried: np.ndarray, noisy_votes: np.ndarray,
                   x_candidates: np.ndarray) -> np.ndarray:
    """Train the student on (candidate, noisy argmax) pairs and return its class
    probabilities for every candidate, ``(n_candidates, C + 1)`` (last column: public)."""
    n_out = noisy_votes.shape[1]
    targets = np.argmax(noisy_votes, axis=1)
    out = np.zeros((x_candidates.shape[0], n_out))
    present = np.unique(targets)
    if present.size == 1:  # every answer agreed: the student can only repeat it
        out[:, present[0]] = 1.0
        return out
    clf = LogisticRegression(C=1.0, solver="newton-cg", max_iter=300).fit(x_queried, targets)
    out[:, clf.classes_] = clf.predict_proba(x_candidates)
    return out


def tutor_counts(noisy_histogram: np.ndarray, total: int) -> np.ndarray:
    """Documents per class in proportion to the noisy label histogram (negative noisy
    counts clipped to 0; largest remainders round to exactly ``total``)."""
    h = np.clip(np.asarray(noisy_histogram, dtype=np.float64), 0.0, None)
    if h.sum() <= 0:
        h = np.ones_like(h)
    share = h / h.sum() * total
    counts = np.floor(share).astype(np.int64)
    extra = total - int(counts.sum())
    counts[np.argsort(-(share - counts), kind="stable")[:extra]] += 1
    return counts


def select(scores: np.ndarray, eligible: np.ndarray, counts: np.ndarray
           ) -> list[tuple[int, int]]:
    """(candidate, class) pairs: highest student score first, each candidate used once,
    at most ``counts[c]`` per class. ``scores``/``eligible``: ``(n_candidates, C)``."""
    flat = np.flatnonzero(eligible.ravel())
    order = flat[np.argsort(-scores.ravel()[flat], kind="stable")]
    n_classes = scores.shape[1]
    left = np.asarray(counts, dtype=np.int64).copy()
    used = np.zeros(scores.shape[0], dtype=bool)
    out: list[tuple[int, int]] = []
    for k in order:
        i, c = divmod(int(k), n_classes)
        if left[c] > 0 and not used[i]:
            used[i] = True
            left[c] -= 1
            out.append((i, c))
            if not left.any():
                break
    return out
