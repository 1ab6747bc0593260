"""DP-KPS on a multi-label corpus: a document with labels {A, B} counts in the keyphrase
model of each of them, and a synthetic document draws a label set, then keyphrases from
the models of its labels.

The fit: each document keeps at most ``max_labels_per_doc`` = k labels (a public random
subset, ``privacy.label_sets.cap_label_sets``); the capped sets are released by DP
partition selection (one set per document, L0 1: the ``"label set"`` release); the
classes are the labels of the released sets. The per-class stages then run on the
document *rows*: one row per (document, released label of its capped set). One document
is at most k rows (and at most as many as there are released labels), so every
per-class release it feeds moves by at most k times what one
row moves it (the class × term histogram: L1 k·S, L2 √(k·S)) — ``Fitting.rows`` carries
k to the stages, which state it in the ledger. Documents stay whole where a stage counts
documents, not rows (the choice of S). No private model selection runs: the label
contrast below has no parameter to choose.

Sampling (post-processing): label sets drawn from the released set counts, or from the
released label and set-size counts (``label_set_model``, ``privacy.label_sets``); for
each set, one sequence from each label's model, merged in turns (first term of each,
then the second, ...), repeats dropped, up to L terms.

A label's model is its row's *contrast* (``label_contrast``): what the row holds beyond
the noise floor and beyond what the other labels' rows predict for a row of its size.
Documents with several labels count in several rows, and reports share most of their
words, so each raw row is close to the corpus-wide one (on radlabels, n = 10: a total
variation of 0.09 to 0.16 from the pooled row; the top terms of every row "chest",
"report", "final"): sampling the rows as the single-label models do gives every label
the same boilerplate, and a classifier trained on it finds almost nothing
(docs/benchmarks.md, multi-label).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dptext.corpus import Corpus
from dptext.generators.kps.models import sample_weights
from dptext.generators.kps.sampling import KeyphraseSequence
from dptext.kde.sampler import SamplingStats
from dptext.keyphrases.histogram import ReleasedHistogram
from dptext.privacy.label_sets import (
    ReleasedLabelSets,
    cap_label_sets,
    draw_label_sets,
    release_label_sets,
)


def fit_label_sets(f) -> None:
    """The label-set stage of a multi-label fit (``stages.LabelSet``): cap, release, and
    put the document rows in ``f.corpus`` (the documents in ``f.documents``)."""
    o = f.seeder
    capped = cap_label_sets(f.corpus.label_sets, o.max_labels_per_doc, f.rng)
    o.label_set_ = released = release_label_sets(
        capped, f.plan.specs["label set"], k_max=o.max_labels_per_doc, ledger=f.ledger,
        model=o.label_set_model)
    f.labels = list(released.labels)
    # a document's rows are its capped labels among the released ones: at most k, and
    # at most the number of released labels (public)
    f.documents, f.rows = f.corpus, max(1, min(o.max_labels_per_doc, len(f.labels)))
    f.corpus = document_rows(f.corpus, capped, set(f.labels))


def document_rows(corpus: Corpus, capped, labels: set) -> Corpus:
    """One single-label row per (document, label of its capped set among ``labels``)."""
    pairs = [(text, lab) for text, s in zip(corpus.texts, capped, strict=True)
             for lab in s if lab in labels]
    return Corpus(texts=tuple(t for t, _ in pairs), labels=tuple(lab for _, lab in pairs),
                  source=corpus.source)


def contrast_rows(counts: np.ndarray, floor: float) -> np.ndarray:
    """Per row k of the (labels × terms) ``counts``: max(c_k(t) − τ − m_k·r_k(t)/Σ r_k, 0),
    with τ the noise ``floor`` (≥ 0), m_k the row's total and r_k the other rows' sum — the
    count beyond the noise and beyond what the other labels predict for a row of its mass.
    A row with nothing beyond the others keeps its counts above the floor."""
    c = np.maximum(np.asarray(counts, dtype=np.float64), 0.0)
    above = np.maximum(c - max(floor, 0.0), 0.0)
    rest = c.sum(axis=0) - c
    rest_total = rest.sum(axis=1, keepdims=True)
    expected = c.sum(axis=1, keepdims=True) * np.divide(
        rest, rest_total, out=np.zeros_like(rest), where=rest_total > 0)
    out = np.maximum(above - expected, 0.0)
    empty = ~out.any(axis=1)
    out[empty] = above[empty]
    return out


@dataclass(frozen=True)
class LabelContrastModel:
    """A multi-label fit's keyphrase model: each label's sampling weights are its row's
    contrast (``contrast_rows``)."""

    labels: tuple[str, ...]
    contrast: np.ndarray  # (labels, |Ṽ|)
    name: str

    def weights(self, label) -> np.ndarray:
        return self.contrast[self.labels.index(label)]

    def sample(self, label, n, length, rng, stats) -> np.ndarray:
        return sample_weights(self.weights(label), n, length, rng, stats)


def label_contrast(hist: ReleasedHistogram) -> LabelContrastModel:
    """The released class × term histogram's rows as label contrasts, at its release's
    floor (post-processing). The floor of the release, the lowest any candidate model
    applies, did better than a higher one chosen privately for the single-label
    weights (radlabels, 3 findings, ε = 6: 0.75 to 0.78 micro-F1 against 0.69 to 0.77)."""
    return LabelContrastModel(tuple(hist.labels), contrast_rows(hist.counts, hist.floor),
                              f"label contrast of the class × term histogram (floor at "
                              f"{hist.false_cells:g} false cells)")


def merge_in_turns(sequences: list[list[str]], length: int) -> tuple[str, ...]:
    """The terms of ``sequences`` taken in turns (each one's first, then each one's
    second, ...), repeats dropped, at most ``length``."""
    out: dict[str, None] = {}
    for i in range(max((len(s) for s in sequences), default=0)):
        for s in sequences:
            if i < len(s):
                out.setdefault(s[i])
    return tuple(out)[:length]


def draw_multilabel_sequences(model, vocabulary: tuple[str, ...],
                              released: ReleasedLabelSets, total: int, length: int,
                              rng: np.random.Generator,
                              stats: SamplingStats) -> list[KeyphraseSequence]:
    """``total`` sequences, each with a label set drawn from ``released`` and keyphrases
    from its labels' models (see the module docstring)."""
    sets = draw_label_sets(released, total, rng)
    vocab = np.asarray(vocabulary, dtype=object)
    drawn: dict[str, list[list[str]]] = {}
    for label in released.labels:
        n = sum(label in s for s in sets)
        if n == 0 or not len(vocab):
            drawn[label] = [[] for _ in range(n)]
            continue
        pos = model.sample(label, n, length, rng, stats)
        drawn[label] = [vocab[row[row >= 0]].tolist() for row in pos]
    taken = dict.fromkeys(released.labels, 0)
    out = []
    for s in sets:
        parts = []
        for label in s:
            parts.append(drawn[label][taken[label]])
            taken[label] += 1
        out.append(KeyphraseSequence(tuple(s), merge_in_turns(parts, length)))
    return out
