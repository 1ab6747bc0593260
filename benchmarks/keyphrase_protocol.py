"""Classifier protocols for DP keyphrase sequences, for benchmarks.

* The DP-KPS paper's table-5 protocol (``KeyphraseClassifierProtocol``): train a
  classifier (MiniLM embeddings of the space-joined keyphrases + logistic regression) on
  keyphrase sequences and test it on the keyphrases extracted from the real test
  documents with the same released vocabulary (first L distinct terms).
* The whole-document yardstick (``WholeDocumentProtocol``): the same classifier, tested on
  the embeddings of the whole real test documents.

One classifier (``fit_classifier``) can be scored under both (``score_fitted``).
``make_seeder`` builds the keyphrase seeder of a cell (its model, ε, ε → ∞ as
``INF_EPSILON``); ``TimedEmbedder`` times and memoises the embedding inside a fit.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, f1_score

from dptext.evaluate.keyphrases import to_sequences
from dptext.generators.kps import KeyphraseSeeder

INF_EPSILON = 1e3  # "ε → ∞": KeyphraseSeeder needs a finite ε (rows record the one used)
DELTA = 1e-5


def sample(corpus, n: int, seed: int = 0):
    """A fixed random sample of ``n`` documents (the whole corpus where it is smaller)."""
    if len(corpus) <= n:
        return corpus
    return corpus.subset(np.random.default_rng(seed).choice(len(corpus), n, replace=False))


def exact_vocabulary(corpus, vocab, seeder: KeyphraseSeeder) -> tuple[str, ...]:
    """Non-private top-N over the same first-S-distinct counts (the ceilings only); S as
    given, or the per-stage S where the seeder chooses it privately."""
    firsts = vocab.extractor().extract_many(corpus.texts,
                                            max_terms=seeder.given_terms_per_doc(),
                                            distinct=True)
    counts = np.bincount(np.concatenate(firsts), minlength=len(vocab))
    top = np.argsort(-counts, kind="stable")[: seeder.vocab_size]
    return tuple(vocab.terms[i] for i in top[counts[top] > 0])


class TimedEmbedder:
    """Wraps the MiniLM embedder: counts the seconds spent embedding (the fit-time target
    excludes them) and memoises vectors in memory only (never on disk). Given to ``fit``,
    and used for the test documents' keyphrases, which repeat across cells."""

    def __init__(self, inner):
        self.inner, self.name, self.seconds, self._memo = inner, inner.name, 0.0, {}

    @property
    def dim(self) -> int:
        return self.inner.dim

    def encode(self, phrases, *, show_progress: bool = False) -> np.ndarray:
        t = time.perf_counter()
        missing = list(dict.fromkeys(p for p in phrases if p not in self._memo))
        if missing:
            for p, v in zip(missing, self.inner.encode(missing), strict=True):
                self._memo[p] = v
        out = np.asarray([self._memo[p] for p in phrases], dtype=np.float32).reshape(
            len(phrases), self.dim)
        self.seconds += time.perf_counter() - t
        return out


def make_seeder(model: str, eps: float, embedder) -> KeyphraseSeeder:
    """``default``: the constructor's defaults; ``auto``: private selection; else one model."""
    names = {f.name for f in dataclasses.fields(KeyphraseSeeder)}
    kw: dict = {"epsilon": INF_EPSILON if math.isinf(eps) else eps, "delta": DELTA,
                "embedder": embedder}
    if "allow_noisy_classes" in names:  # small classes: run and report, do not stop
        kw["allow_noisy_classes"] = True
    if model == "auto":
        kw["select"] = "auto"
    elif model != "default":
        kw.update(model=model, select="none")
    missing = (set(kw) - names)
    if missing:
        raise SystemExit(f"model {model!r} needs KeyphraseSeeder({', '.join(sorted(missing))}=…), "
                         "which this commit does not have; see --models")
    return KeyphraseSeeder(**kw)


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
