"""Private choice of the keyphrase model on the validation fold (report-noisy-max).

Each candidate model (all post-processing of the same fit-fold releases) draws
``per_class`` sequences per class; a logistic regression over term presence is
trained on them (cheap, no embedding model; it ranked the BBC development
candidates like the whole-document yardstick, where naive Bayes did not) and
predicts the label of every validation document from the Ṽ terms it holds. A
candidate's score is the number of validation documents it labels right: one
document changes every score by 0 or 1, all in the same direction (L∞ sensitivity 1,
monotone). ``dptext.privacy.selection``
releases the arg-max under noise and records it in the ledger: on a validation fold
disjoint from the fit fold (parallel composition), or — a shared selection, the default
with a total ε — on a sample of documents that the releases also count, with its own
share of ε (sequential composition).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from scipy import sparse

from dptext.generators.kps_models import KeyphraseModel, describe
from dptext.kde.sampler import SamplingStats
from dptext.privacy import PrivacyLedger
from dptext.privacy.selection import VALIDATION_FOLD, select_noisy_max

SELECTION_NAME = "model selection"
MAX_TRAINING, MIN_PER_CLASS = 20_000, 5  # sequences per candidate's classifier (time bound)


def presence_matrix(doc_terms: Sequence[np.ndarray], n_terms: int) -> sparse.csr_matrix:
    """Binary (documents × terms) matrix of which Ṽ terms each document holds."""
    lengths = np.fromiter((len(t) for t in doc_terms), dtype=np.int64, count=len(doc_terms))
    if lengths.sum() == 0:
        return sparse.csr_matrix((len(doc_terms), n_terms))
    cols = np.concatenate([np.asarray(t, dtype=np.int64) for t in doc_terms if len(t)])
    rows = np.repeat(np.arange(len(doc_terms)), lengths)
    m = sparse.csr_matrix((np.ones(len(cols)), (rows, cols)), shape=(len(doc_terms), n_terms))
    m.data[:] = 1.0  # repeated terms count once
    return m


def candidate_correct(model: KeyphraseModel, labels: Sequence[Hashable], x: sparse.csr_matrix,
                      y: np.ndarray, *, per_class: int, length: int,
                      rng: np.random.Generator) -> np.ndarray:
    """Per validation document, 1 if a logistic regression trained on ``model``'s
    sequences labels it right, else 0 (``y`` = index into ``labels``; −1 is never right;
    an empty validation fold or no training signal scores 0 everywhere)."""
    from sklearn.linear_model import LogisticRegression

    n_terms = x.shape[1]
    stats = SamplingStats()
    rows, ys = [], []
    for k, label in enumerate(labels):
        pos = model.sample(label, per_class, length, rng, stats)
        rows.append(presence_matrix([p[p >= 0] for p in pos], n_terms))
        ys.append(np.full(len(pos), k))
    train, target = sparse.vstack(rows).tocsr(), np.concatenate(ys)
    if len(np.unique(target)) < 2 or train.nnz == 0 or x.shape[0] == 0:  # nothing to learn
        return np.zeros(x.shape[0], dtype=np.int64)
    clf = LogisticRegression(max_iter=200, C=1.0).fit(train, target)
    pred = clf.predict(x)
    return (pred == y).astype(np.int64)


def select_model(candidates: Sequence[KeyphraseModel], labels: Sequence[Hashable],
                 x: sparse.csr_matrix, y: np.ndarray, *, epsilon: float,
                 ledger: PrivacyLedger, per_class: int, length: int,
                 rng: np.random.Generator, fold: str | None = VALIDATION_FOLD) -> int:
    """Index of the privately chosen candidate (one release in ``ledger``, on ``fold``:
    the validation fold, or None when the scored documents are also in the releases)."""
    # bound the classifier's training set: at most MAX_TRAINING sequences per candidate
    per_class = max(MIN_PER_CLASS, min(per_class, MAX_TRAINING // max(len(labels), 1)))
    scores = [int(candidate_correct(m, labels, x, y, per_class=per_class, length=length,
                                    rng=rng).sum()) for m in candidates]
    names = ", ".join(describe(m) for m in candidates)
    return select_noisy_max(
        scores, sensitivity=1, epsilon=epsilon, ledger=ledger,
        name=f"{SELECTION_NAME} ({len(candidates)} candidates)", fold=fold,
        reason=("one validation document adds 0 or 1 to every candidate's count of "
                f"correctly labelled documents; candidates: {names}"))
