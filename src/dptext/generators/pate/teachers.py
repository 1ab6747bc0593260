"""PATE teachers and their GNMax vote aggregation.

Every teacher is a (C+1)-way classifier on sentence embeddings: the private documents of
its own shard (classes 0 … C−1, their labels) against public LLM candidates (class C,
"public"). Teachers are fitted twice, once per candidate fold: the teachers that answer
the queries of fold f took their negatives from the *other* fold only, so no teacher is
asked about a text it was trained on as "public". Both fittings use the same shards and
answer disjoint queries, so each answered query still sees one document in one teacher
(sensitivity √2 per query, see ``plan.vote_sensitivity``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import LogisticRegression

from dptext.generators.pate.plan import vote_sensitivity
from dptext.privacy import NoiseSpec, PrivacyLedger, release

VOTES_RELEASE = "GNMax teacher votes"


def _teacher_predictions(x_private: np.ndarray, y_private: np.ndarray, x_negative: np.ndarray,
                         x_query: np.ndarray, n_classes: int) -> np.ndarray:
    """One teacher's class (0 … C, C = public) for every query."""
    if x_private.shape[0] == 0:  # an empty shard knows nothing private: it votes "public"
        return np.full(x_query.shape[0], n_classes, dtype=np.int64)
    x = np.vstack([x_private, x_negative])
    y = np.concatenate([y_private, np.full(x_negative.shape[0], n_classes)])
    if np.unique(y).size < 2:  # no negatives
        return np.full(x_query.shape[0], int(y[0]), dtype=np.int64)
    clf = LogisticRegression(C=10.0, class_weight="balanced", solver="newton-cg",
                             max_iter=300)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(x, y)
    return clf.predict(x_query).astype(np.int64)


def teacher_votes(x_private: np.ndarray, y_private: np.ndarray, shards: np.ndarray,
                  n_teachers: int, x_candidates: np.ndarray, folds: np.ndarray,
                  queried: np.ndarray, n_classes: int, progress=None) -> np.ndarray:
    """Exact vote histograms, ``(len(queried), n_classes + 1)``: row q counts the teachers
    voting each class (the last is "public") for candidate ``queried[q]``."""
    step = progress or (lambda done, total: None)
    votes = np.zeros((queried.size, n_classes + 1), dtype=np.float64)
    order = [np.flatnonzero(shards == m) for m in range(n_teachers)]
    total = 2 * n_teachers
    for f in (0, 1):
        rows = np.flatnonzero(folds[queried] == f)
        if rows.size == 0:
            step((f + 1) * n_teachers, total)
            continue
        x_neg = x_candidates[folds != f]
        x_q = x_candidates[queried[rows]]
        for m, idx in enumerate(order):
            pred = _teacher_predictions(x_private[idx], y_private[idx], x_neg, x_q, n_classes)
            np.add.at(votes, (rows, pred), 1.0)
            step(f * n_teachers + m + 1, total)
    return votes


def gnmax(votes: np.ndarray, noise: NoiseSpec, ledger: PrivacyLedger) -> np.ndarray:
    """Release the vote histograms with Gaussian noise (one release for all answered
    queries, sensitivity √(2Q)); the student learns only from their noisy argmax."""
    q = votes.shape[0]
    return release(votes, vote_sensitivity(q), noise, ledger=ledger,
                   name=f"{VOTES_RELEASE} ({q} queries)")
