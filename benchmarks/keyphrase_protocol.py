"""Classifier protocols for DP keyphrase sequences, for benchmarks.

* The DP-KPS paper's table-5 protocol (``KeyphraseClassifierProtocol``): train a
  classifier (MiniLM embeddings of the space-joined keyphrases + logistic regression) on
  keyphrase sequences and test it on the keyphrases extracted from the real test
  documents with the same released vocabulary (first L distinct terms).
* The whole-document yardstick (``WholeDocumentProtocol``): the same classifier, tested on
  the embeddings of the whole real test documents.

One classifier (``fit_classifier``) can be scored under both (``score_fitted``).
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


def embed_strings(embedder, strings: list[str]) -> np.ndarray:
    """Embeddings of ``strings``, each distinct string encoded once ("" as "(none)")."""
    unique, inverse = np.unique(np.asarray([s or "(none)" for s in strings], dtype=object),
                                return_inverse=True)
    return np.asarray(embedder.encode(unique.tolist()))[inverse.ravel()]


def fit_classifier(x: np.ndarray, labels) -> LogisticRegression:
    return LogisticRegression(max_iter=2000, C=1.0).fit(x, np.asarray(labels))


def scores(clf: LogisticRegression, x_test: np.ndarray, y_test: np.ndarray) -> dict:
    pred = clf.predict(x_test)
    return {"accuracy": float(accuracy_score(y_test, pred)),
            "macro_f1": float(f1_score(y_test, pred, average="macro"))}


class KeyphraseClassifierProtocol:
    """Embeds the test documents' keyphrases once and scores training sets against them."""

    def __init__(self, embedder, test_texts, test_labels, vocabulary, length: int):
        self.embedder = embedder
        self.test_labels = np.asarray(test_labels)
        self.test_x = embed_strings(embedder, document_keyphrases(test_texts, vocabulary,
                                                                  length))

    def score(self, train_strings: list[str], train_labels) -> dict:
        return self.score_fitted(fit_classifier(embed_strings(self.embedder, train_strings),
                                                train_labels))

    def score_fitted(self, clf: LogisticRegression) -> dict:
        return scores(clf, self.test_x, self.test_labels)


class WholeDocumentProtocol:
    """The whole-document yardstick: test on embeddings of whole real test documents
    (``test_x``, computed once per corpus by the caller)."""

    def __init__(self, test_x: np.ndarray, test_labels):
        self.test_x = test_x
        self.test_labels = np.asarray(test_labels)

    def score_fitted(self, clf: LogisticRegression) -> dict:
        return scores(clf, self.test_x, self.test_labels)
