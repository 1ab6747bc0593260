"""Private choice of the keyphrase model on the validation fold (report-noisy-max).

Each candidate model (all post-processing of the same fit-fold releases) draws
``per_class`` sequences per class; a logistic regression is trained on them and
predicts the label of every validation document from the Ṽ terms it holds. Sequences
and documents are read as the unit-norm sum of their terms' embeddings (public terms,
embedded once): the space the downstream classifiers read. Over bare term presence the
classifier preferred rare class-specific terms that embedding classifiers of whole
documents do not reward (a one-seed development check at ε = 6, scored by the
whole-document yardstick on 20 % of the *training* documents held out: Banking77,
presence ranked first the candidate at 0.767, embeddings the one at 0.795;
complaints, 0.736 and 0.740). A
candidate's score is the number of validation documents it labels right, and the first
candidate (the reference: the histogram at the configured purity power and floor, or
the configured KDE or mixture in those families) is scored as if it had got ``margin``
of its errors right (``privacy.selection.margin_scores``): the score is a proxy of the
yardstick, and on development splits of the training documents it ranked near-equal
candidates wrongly (complaints: the plain histogram and power 0.5 within 0.01 on whole
documents, where the score had power 0.5 remove 4–8 % of the plain one's errors; where
the choice mattered — BBC News, the health tweets, Banking77 — the chosen candidate
removed 13–41 % of them). One document changes every score by at most the
sensitivity ``margin_scores`` states, all in the same direction (L∞, monotone).
``dptext.privacy.selection``
releases the arg-max under noise and records it in the ledger: on a validation fold
disjoint from the fit fold (parallel composition), or — a shared selection, the default
with a total ε — on a sample of documents that the releases also count, with its own
share of ε (sequential composition).

With ``form="auto"`` the form profile (``kps/form.py``) is released before the
selection, and every candidate is scored twice: as above, and with a form drawn from
its class's profile beside each sequence's terms while each validation document carries
its own form vector (a public function of the document, computed as the profile's
are). The selection then chooses the model and whether the sequences carry a form in
one release; the first candidate (no form) keeps the margin, so a corpus whose form does
not tell its classes apart keeps the prompts as without the profile.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from scipy import sparse

from dptext.generators.kps.form import FormProfile
from dptext.generators.kps.models import KeyphraseModel, describe
from dptext.kde.sampler import SamplingStats
from dptext.privacy import PrivacyLedger
from dptext.privacy.selection import VALIDATION_FOLD, margin_scores, select_noisy_max
from dptext.text.form import form_norm_bound

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


def embedded(presence: sparse.csr_matrix, term_embeddings: np.ndarray) -> np.ndarray:
    """Each row's terms as the unit-norm sum of their embeddings (no term: a zero row)."""
    v = np.asarray(presence @ term_embeddings, dtype=np.float64)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return np.divide(v, norms, out=np.zeros_like(v), where=norms > 0)


def form_features(vectors: np.ndarray) -> np.ndarray:
    """Form vectors (one-hot per block: ``text.form``) scaled to unit norm, the norm of
    the embedded terms beside them, so that neither part outweighs the other."""
    return np.asarray(vectors, dtype=np.float64) / form_norm_bound()[1]


def candidate_correct(model: KeyphraseModel, labels: Sequence[Hashable], x: np.ndarray,
                      y: np.ndarray, *, term_embeddings: np.ndarray, per_class: int,
                      length: int, rng: np.random.Generator,
                      form_profile: FormProfile | None = None) -> np.ndarray:
    """Per validation document, 1 if a logistic regression trained on ``model``'s
    sequences labels it right, else 0. ``x``: the documents ``embedded`` in
    ``term_embeddings`` (one row per Ṽ term); ``y``: indices into ``labels`` (−1 is never
    right). With ``form_profile`` each sequence also carries a form drawn from its
    class's profile (``form_features``), and ``x`` must carry the documents' own after
    their terms. An empty validation fold or no training signal scores 0 everywhere."""
    from sklearn.linear_model import LogisticRegression

    stats = SamplingStats()
    rows, forms, ys = [], [], []
    for k, label in enumerate(labels):
        pos = model.sample(label, per_class, length, rng, stats)
        rows.append(presence_matrix([p[p >= 0] for p in pos], len(term_embeddings)))
        ys.append(np.full(len(pos), k))
        if form_profile is not None:
            forms.append(form_features(form_profile.draw_vectors(label, len(pos), rng)))
    train, target = sparse.vstack(rows).tocsr(), np.concatenate(ys)
    if len(np.unique(target)) < 2 or train.nnz == 0 or x.shape[0] == 0:  # nothing to learn
        return np.zeros(x.shape[0], dtype=np.int64)
    features = embedded(train, term_embeddings)
    if forms:
        features = np.hstack([features, np.vstack(forms)])
    # unit-norm features need little regularisation (C = 10)
    clf = LogisticRegression(max_iter=200, C=10.0).fit(features, target)
    return (clf.predict(x) == y).astype(np.int64)


def select_model(candidates: Sequence[KeyphraseModel], labels: Sequence[Hashable],
                 presence: sparse.csr_matrix, y: np.ndarray, *, term_embeddings: np.ndarray,
                 epsilon: float, ledger: PrivacyLedger, per_class: int, length: int,
                 rng: np.random.Generator, margin: float = 0.0,
                 fold: str | None = VALIDATION_FOLD,
                 form_profile: FormProfile | None = None,
                 validation_forms: np.ndarray | None = None) -> int:
    """Index of the privately chosen candidate (one release in ``ledger``, on ``fold``:
    the validation fold, or None when the scored documents are also in the releases).
    ``presence``: which Ṽ terms each scored row holds (``presence_matrix``);
    ``margin``: the share of the first candidate's errors another must remove (one row
    per document: a multi-label corpus selects nothing, ``kps.plan``). With
    ``form_profile`` (the released one) the
    candidates are also scored with a form drawn with each sequence, the documents read
    with their own form vectors (``validation_forms``: ``text.form.form_vectors``, a
    public function of each document): index ``len(candidates) + i`` is candidate i with
    the form."""
    # bound the classifier's training set: at most MAX_TRAINING sequences per candidate
    per_class = max(MIN_PER_CLASS, min(per_class, MAX_TRAINING // max(len(labels), 1)))
    x = embedded(presence, term_embeddings)
    runs = [(m, None, x) for m in candidates]
    if form_profile is not None:
        x_form = np.hstack([x, form_features(validation_forms)])
        runs += [(m, form_profile, x_form) for m in candidates]
    correct = np.column_stack([
        candidate_correct(m, labels, xs, y, term_embeddings=term_embeddings,
                          per_class=per_class, length=length, rng=rng, form_profile=profile)
        for m, profile, xs in runs])
    # a document's form vector, like its terms, is a public function of that document
    # alone: it moves only its own 0/1 entries, so the sensitivity is margin_scores's
    scores, sensitivity = margin_scores(correct, margin)
    names = ", ".join(describe(m) + (" with a form" if profile is not None else "")
                      for m, profile, _ in runs)
    return select_noisy_max(
        scores, sensitivity=sensitivity, epsilon=epsilon, ledger=ledger,
        name=f"{SELECTION_NAME} ({len(runs)} candidates)", fold=fold,
        reason=(f"one validation document adds 0 to {sensitivity} to every candidate's "
                "weighted count of correctly labelled documents, all in the same direction "
                f"(the first candidate's head start: {margin:g} of its errors count as "
                f"right); candidates: {names}"))
