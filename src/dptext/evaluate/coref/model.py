"""A small trainable coreference model: a mention-head detector and a mention-pair linker,
both logistic regressions over hashed spaCy features, trained in seconds on a CPU.

Linking is best-first: each detected mention joins the chain of its most probable
antecedent among the previous ``window`` mentions, if that probability passes
``link_threshold``; otherwise it starts a chain. Unlike rule-based systems, everything it
links comes from its training chains, so it tells good training data from bad.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction import FeatureHasher
from sklearn.linear_model import LogisticRegression

from dptext.evaluate.coref.features import candidates, mention_features, pair_features
from dptext.evaluate.coref.parsing import Parsed

_HASH = FeatureHasher(n_features=2 ** 20, input_type="string", alternate_sign=False)


def _pairs(p: Parsed, mentions: np.ndarray, j: int, window: int) -> list[list[str]]:
    lo = max(0, j - window)
    return [pair_features(p, int(mentions[i]), int(mentions[j]), j - i) for i in range(lo, j)]


class _Classifier:
    """Logistic regression on the hashed features that occur in training (liblinear's
    cost grows with the width of the matrix, and most of the 2^20 hash columns are empty);
    a constant answer when the training labels hold one class (or none: an empty corpus
    teaches nothing, and its model finds nothing)."""

    def __init__(self, rows: list[list[str]], y: list[int], seed: int):
        self.constant = None if len(set(y)) > 1 else float(bool(y and y[0]))
        if self.constant is None:
            x = _HASH.transform(rows)
            self.cols = np.unique(x.indices)
            self.lr = LogisticRegression(C=1.0, solver="liblinear", random_state=seed).fit(
                x[:, self.cols], np.asarray(y))

    def proba(self, rows: list[list[str]]) -> np.ndarray:
        if self.constant is not None or not rows:
            return np.full(len(rows), self.constant or 0.0)
        return self.lr.predict_proba(_HASH.transform(rows)[:, self.cols])[:, 1]


class CorefModel:
    """``fit(annotated documents)`` then ``predict(documents)`` -> silver-annotated copies."""

    def __init__(self, window: int = 30, link_threshold: float = 0.5,
                 mention_threshold: float = 0.5, seed: int = 0):
        self.window = window
        self.link_threshold = link_threshold
        self.mention_threshold = mention_threshold
        self.seed = seed

    def fit(self, docs: Sequence[Parsed]) -> CorefModel:
        m_rows, m_y, l_rows, l_y = [], [], [], []
        for p in docs:
            gold = set(p.mentions.tolist())
            for i in candidates(p).tolist():
                m_rows.append(mention_features(p, i))
                m_y.append(int(i in gold))
            for j in range(1, len(p.mentions)):
                rows = _pairs(p, p.mentions, j, self.window)
                l_rows += rows
                l_y += (p.chains[j - len(rows): j] == p.chains[j]).astype(int).tolist()
        self.detector_ = _Classifier(m_rows, m_y, self.seed)
        self.linker_ = _Classifier(l_rows, l_y, self.seed)
        return self

    def detect(self, p: Parsed) -> np.ndarray:
        cand = candidates(p)
        if not len(cand):
            return cand
        prob = self.detector_.proba([mention_features(p, i) for i in cand.tolist()])
        return cand[prob >= self.mention_threshold]

    def link(self, p: Parsed, mentions: np.ndarray) -> np.ndarray:
        chains = np.arange(len(mentions))
        per = [_pairs(p, mentions, j, self.window) for j in range(1, len(mentions))]
        prob = self.linker_.proba([r for rows in per for r in rows])
        at = 0
        for j, rows in enumerate(per, 1):
            pj = prob[at: at + len(rows)]
            at += len(rows)
            best = int(np.argmax(pj))
            if pj[best] >= self.link_threshold:
                chains[j] = chains[j - len(rows) + best]
        return chains

    def predict(self, docs: Sequence[Parsed]) -> list[Parsed]:
        out = []
        for p in docs:
            m = self.detect(p)
            out.append(p.annotated(m, self.link(p, m)))
        return out
