"""The DP-KPS paper's table-5 protocol, for benchmarks: classify keyphrase sequences.

Train a classifier (MiniLM embeddings of the space-joined keyphrases + logistic
regression) on keyphrase sequences and test it on the keyphrases extracted from
the real test documents with the same released vocabulary (first L distinct terms).
"""

from __future__ import annotations

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

from dptext.evaluate.keyphrases import to_sequences


def document_keyphrases(texts, vocabulary: tuple[str, ...], length: int) -> list[str]:
    """Real documents as their first ``length`` distinct released terms, space-joined
    like the DP sequences the benchmark trains on."""
    return to_sequences(texts, vocabulary, length, sep=" ")


class KeyphraseClassifierProtocol:
    """Embeds keyphrase strings once per distinct string and scores a training set."""

    def __init__(self, embedder, test_texts, test_labels, vocabulary, length: int):
        self.embedder = embedder
        self.test_labels = np.asarray(test_labels)
        self.test_x = self._embed(document_keyphrases(test_texts, vocabulary, length))

    def _embed(self, strings: list[str]) -> np.ndarray:
        return np.asarray(self.embedder.encode([s or "(none)" for s in strings]))

    def score(self, train_strings: list[str], train_labels) -> dict:
        clf = LogisticRegression(max_iter=2000, C=1.0)
        clf.fit(self._embed(train_strings), np.asarray(train_labels))
        pred = clf.predict(self.test_x)
        return {"accuracy": float(accuracy_score(self.test_labels, pred)),
                "macro_f1": float(f1_score(self.test_labels, pred, average="macro"))}
