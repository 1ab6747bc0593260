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


class TeacherVotes:
    """Batch function (``dptext.compute.map_sum``) over teachers: for a batch of
    ``(x_private, y_private)`` shards, one per teacher, the int64 votes
    ``(len(queried), n_classes + 1)`` of those teachers, each fitted once per candidate
    fold and answering that fold's queried candidates (``_teacher_predictions``).

    Public parameters only: the candidates' embeddings, their folds, the queried
    candidates, the number of classes and ``embedder``. ``embedder=None``: a shard's
    documents come embedded (the local engine embeds the corpus once, on the driver);
    otherwise they are texts, embedded here (``private_vectors``: by name, loaded once per
    worker process, no cache) — on Ray a worker receives its teachers' texts and labels and
    the driver never embeds the private corpus. The noise is added afterwards, on the
    driver, by ``gnmax``.
    """

    def __init__(self, x_candidates: np.ndarray, folds: np.ndarray, queried: np.ndarray,
                 n_classes: int, embedder=None):
        self.x_candidates = np.asarray(x_candidates)
        self.folds = np.asarray(folds)
        self.queried = np.asarray(queried)
        self.n_classes = int(n_classes)
        self.embedder = embedder

    def _shard(self, docs, labels) -> tuple[np.ndarray, np.ndarray]:
        if self.embedder is None:
            return np.asarray(docs), np.asarray(labels)
        from dptext.embed import private_vectors

        return private_vectors(self.embedder, list(docs)).astype(np.float64), \
            np.asarray(labels)

    def __call__(self, batch) -> np.ndarray:
        votes = np.zeros((self.queried.size, self.n_classes + 1), dtype=np.int64)
        shards = [self._shard(docs, labels) for docs, labels in batch]  # embedded once
        for f in (0, 1):
            rows = np.flatnonzero(self.folds[self.queried] == f)
            if rows.size == 0 or not shards:
                continue
            x_neg = self.x_candidates[self.folds != f]
            x_q = self.x_candidates[self.queried[rows]]
            for x_private, y_private in shards:
                pred = _teacher_predictions(x_private, y_private, x_neg, x_q, self.n_classes)
                np.add.at(votes, (rows, pred), 1)
        return votes


def teacher_votes(x_private: np.ndarray, y_private: np.ndarray, shards: np.ndarray,
                  n_teachers: int, x_candidates: np.ndarray, folds: np.ndarray,
                  queried: np.ndarray, n_classes: int, progress=None,
                  batch_size: int = 1, embedder=None) -> np.ndarray:
    """Exact vote histograms, ``(len(queried), n_classes + 1)`` (float64, the counts
    ``gnmax`` releases): row q counts the teachers voting each class (the last is
    "public") for candidate ``queried[q]``.

    A ``map_sum`` of ``TeacherVotes`` over the teachers (``batch_size`` teachers per
    batch: one Ray task each) on the current compute engine. ``x_private``: the private
    documents' embeddings, or (with ``embedder``) their texts, embedded by each teacher's
    task. ``progress(done, total)`` counts teacher fittings (two per teacher): on the
    local engine those done, on Ray those handed to the cluster (and all of them at the
    end)."""
    from dptext.compute import map_sum

    step = progress or (lambda done, total: None)
    total = 2 * n_teachers

    def shards_of_teachers():
        for m in range(n_teachers):
            if m and m % batch_size == 0:  # local engine: the batches before m are done
                step(2 * m, total)
            idx = np.flatnonzero(shards == m)
            yield x_private[idx], y_private[idx]

    if embedder is not None:
        x_private = np.asarray(list(x_private), dtype=object)  # texts, indexable by shard
    votes = map_sum(TeacherVotes(x_candidates, folds, queried, n_classes, embedder),
                    shards_of_teachers(), batch_size)
    step(total, total)
    return votes.astype(np.float64)


def gnmax(votes: np.ndarray, noise: NoiseSpec, ledger: PrivacyLedger) -> np.ndarray:
    """Release the vote histograms with Gaussian noise (one release for all answered
    queries, sensitivity √(2Q)); the student learns only from their noisy argmax."""
    q = votes.shape[0]
    return release(votes, vote_sensitivity(q), noise, ledger=ledger,
                   name=f"{VOTES_RELEASE} ({q} queries)")
