"""Downstream utility: train a classifier on the synthetic corpus, test it on real data.

Three classifiers (DP-KPS paper §3 and appendix C.1.2; fine-tuning paper table 1):

* ``tfidf``: TF-IDF + logistic regression, a fast reference;
* ``mlp``: a frozen sentence encoder with a 3-layer fully connected head (default);
* ``finetune``: the same head trained together with the encoder (slow on a CPU; opt-in).

The head can be trained with Deep CORAL (see ``domain.py``) on unlabelled client
documents. The same classifier trained on real training documents gives the
ceiling; ``ratio`` is synthetic / ceiling.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
from sklearn.metrics import accuracy_score, f1_score

from dptext.evaluate.data import Label

CLASSIFIERS = ("tfidf", "mlp", "finetune")


# --------------------------------------------------------------------------- labels / metrics


@dataclass(frozen=True)
class LabelSpace:
    classes: tuple[str, ...]
    multilabel: bool

    @classmethod
    def of(cls, *label_lists: Sequence[Label] | None) -> LabelSpace:
        seen: set[str] = set()
        multi = False
        for labels in label_lists:
            for lab in labels or ():
                if isinstance(lab, tuple):
                    multi = True
                    seen.update(lab)
                else:
                    seen.add(lab)
        return cls(tuple(sorted(seen)), multi)

    def encode(self, labels: Sequence[Label]) -> np.ndarray:
        """Class indices (single-label) or a multi-hot matrix (multi-label)."""
        index = {c: i for i, c in enumerate(self.classes)}
        if not self.multilabel:
            return np.array([index[lab] for lab in labels], dtype=np.int64)
        y = np.zeros((len(labels), len(self.classes)), dtype=np.int64)
        for r, lab in enumerate(labels):
            for c in (lab if isinstance(lab, tuple) else (lab,)):
                y[r, index[c]] = 1
        return y


def classification_metrics(y_true: np.ndarray, y_pred: np.ndarray, multilabel: bool,
                           classes: Sequence[str] | None = None) -> dict:
    """Accuracy and macro-F1; for multi-label data micro/macro-F1, subset accuracy and,
    given the ``classes`` (the columns' names), each label's F1."""
    if multilabel:
        out = {
            "subset_accuracy": float(accuracy_score(y_true, y_pred)),
            "micro_f1": float(f1_score(y_true, y_pred, average="micro", zero_division=0)),
            "macro_f1": float(f1_score(y_true, y_pred, average="macro", zero_division=0)),
        }
        if classes is not None:
            per = f1_score(y_true, y_pred, average=None, zero_division=0)
            out["per_label_f1"] = {c: float(f) for c, f in zip(classes, per, strict=True)}
        return out
    labels = np.unique(y_true)
    return {
        "accuracy": float(accuracy_score(y_true, y_pred)),
        "macro_f1": float(f1_score(y_true, y_pred, labels=labels, average="macro",
                                   zero_division=0)),
    }


def text_free_floor(y_test: np.ndarray, multilabel: bool) -> dict:
    """The scores of a classifier that reads no text, on the real test labels: every label
    for every document (multi-label: F1 credits it where labels are frequent), or the test
    set's most frequent class. What a synthetic corpus's classifier must pass."""
    if multilabel:
        out = classification_metrics(y_test, np.ones_like(y_test), True)
        return {"predicts": "every label for every document", **out}
    majority = np.bincount(y_test).argmax()
    out = classification_metrics(y_test, np.full_like(y_test, majority), False)
    return {"predicts": "the most frequent test class", **out}


#: the figure a summary shows, by its name: accuracy, or for multi-label data micro-F1
#: (the coding papers' figure; subset accuracy counts a note with 4 of 5 codes right as wrong)
_HEADLINE = {"accuracy": "accuracy", "micro-F1": "micro_f1"}


def headline_name(metrics: dict) -> str:
    """What :func:`headline` reads (a key of ``_HEADLINE``)."""
    return "accuracy" if "accuracy" in metrics else "micro-F1"


def headline(metrics: dict) -> float:
    """The single number a summary shows and a ratio compares: see :func:`headline_name`."""
    return metrics.get(_HEADLINE[headline_name(metrics)], float("nan"))


# --------------------------------------------------------------------------- classifiers


def tfidf_logreg(train_texts: Sequence[str], y_train: np.ndarray, test_texts: Sequence[str],
                 multilabel: bool, n_classes: int, seed: int = 0) -> np.ndarray:
    """TF-IDF (1-2 grams, sublinear tf) + logistic regression; returns test predictions."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = TfidfVectorizer(ngram_range=(1, 2), min_df=1, max_features=200_000,
                          sublinear_tf=True, strip_accents="unicode")
    x_train = vec.fit_transform(train_texts)
    x_test = vec.transform(test_texts)
    if not multilabel:
        if len(np.unique(y_train)) == 1:
            return np.full(len(test_texts), y_train[0])
        clf = LogisticRegression(C=10.0, max_iter=2000, random_state=seed)
        return clf.fit(x_train, y_train).predict(x_test)
    pred = np.zeros((len(test_texts), n_classes), dtype=np.int64)
    for c in range(n_classes):
        col = y_train[:, c]
        if col.min() == col.max():
            pred[:, c] = col[0]
            continue
        clf = LogisticRegression(C=10.0, max_iter=2000, random_state=seed)
        pred[:, c] = clf.fit(x_train, col).predict(x_test)
    return pred


@dataclass
class MLPConfig:
    """The head of DP-KPS §3: three fully connected layers over the sentence embedding."""

    hidden: tuple[int, int] = (512, 256)
    dropout: float = 0.1
    epochs: int = 40
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    coral_weight: float = 0.0  # > 0 and unlabelled target features: Deep CORAL


def _build_head(d: int, n_out: int, cfg: MLPConfig):
    import torch.nn as nn

    h1, h2 = cfg.hidden
    features = nn.Sequential(nn.Linear(d, h1), nn.ReLU(), nn.Dropout(cfg.dropout),
                             nn.Linear(h1, h2), nn.ReLU(), nn.Dropout(cfg.dropout))
    return features, nn.Linear(h2, n_out)


def mlp_head(x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, multilabel: bool,
             n_classes: int, cfg: MLPConfig | None = None, x_target: np.ndarray | None = None,
             seed: int = 0) -> np.ndarray:
    """Train the 3-layer head on fixed embeddings; predict ``x_test``.

    With ``cfg.coral_weight > 0`` and ``x_target`` (unlabelled client embeddings, never
    the test set) the loss gains the Deep CORAL term on the head's last hidden layer.
    """
    import torch

    cfg = cfg or MLPConfig()
    # A small head: one thread is faster than several (and far faster on a busy machine,
    # where spinning intra-op threads are starved: measured 7x on 2 shared cores).
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_head(torch, x_train, y_train, x_test, multilabel, n_classes, cfg,
                           x_target, seed)
    finally:
        torch.set_num_threads(threads)


@contextmanager
def _seeded_global_rng(torch, seed: int):
    """Seed torch's global generator (layer initialisation, dropout) from the public
    evaluation seed inside a fork of it, so the caller's global state — from which later
    work in the same process might draw — is restored afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        yield


def _train_head(torch, x_train, y_train, x_test, multilabel, n_classes, cfg, x_target, seed):
    with _seeded_global_rng(torch, seed):
        return _fit_head(torch, x_train, y_train, x_test, multilabel, n_classes, cfg, x_target,
                         seed)


def _fit_head(torch, x_train, y_train, x_test, multilabel, n_classes, cfg, x_target, seed):
    from dptext.evaluate.domain import coral_loss

    gen = torch.Generator().manual_seed(seed)
    features, out = _build_head(x_train.shape[1], n_classes, cfg)
    params = list(features.parameters()) + list(out.parameters())
    opt = torch.optim.AdamW(params, lr=cfg.lr, weight_decay=cfg.weight_decay)
    xt = torch.from_numpy(np.ascontiguousarray(x_train, dtype=np.float32))
    if multilabel:
        yt = torch.from_numpy(y_train.astype(np.float32))
        loss_fn = torch.nn.BCEWithLogitsLoss()
    else:
        yt = torch.from_numpy(y_train.astype(np.int64))
        loss_fn = torch.nn.CrossEntropyLoss()
    use_coral = cfg.coral_weight > 0 and x_target is not None and len(x_target) > 1
    xtgt = torch.from_numpy(np.ascontiguousarray(x_target, dtype=np.float32)) if use_coral else None
    n = len(xt)
    bs = min(cfg.batch_size, n)
    features.train()
    out.train()
    for _ in range(cfg.epochs):
        perm = torch.randperm(n, generator=gen)
        for start in range(0, n, bs):
            idx = perm[start:start + bs]
            if len(idx) < 2:
                continue
            h = features(xt[idx])
            loss = loss_fn(out(h), yt[idx])
            if use_coral:
                tidx = torch.randint(0, len(xtgt), (len(idx),), generator=gen)
                loss = loss + cfg.coral_weight * coral_loss(h, features(xtgt[tidx]))
            opt.zero_grad()
            loss.backward()
            opt.step()
    features.eval()
    out.eval()
    with torch.no_grad():
        logits = out(features(torch.from_numpy(np.ascontiguousarray(x_test, dtype=np.float32))))
    if multilabel:
        return (logits > 0).numpy().astype(np.int64)
    return logits.argmax(dim=1).numpy()


def finetune_classifier(model, train_texts: Sequence[str], y_train: np.ndarray,
                        test_texts: Sequence[str], multilabel: bool, n_classes: int,
                        epochs: int = 1, lr: float = 2e-5, batch_size: int = 16,
                        max_seq_length: int = 128, target_texts: Sequence[str] | None = None,
                        coral_weight: float = 0.0, seed: int = 0) -> np.ndarray:
    """Full fine-tuning: a sentence-transformers ``model`` and the 3-layer head, end to end.

    The model is deep-copied: the caller's encoder is left unchanged.
    """
    import torch

    with _seeded_global_rng(torch, seed):
        return _finetune(torch, model, train_texts, y_train, test_texts, multilabel, n_classes,
                         epochs, lr, batch_size, max_seq_length, target_texts, coral_weight, seed)


def _finetune(torch, model, train_texts, y_train, test_texts, multilabel, n_classes, epochs, lr,
              batch_size, max_seq_length, target_texts, coral_weight, seed):
    import copy

    from dptext.evaluate.domain import coral_loss

    gen = torch.Generator().manual_seed(seed)
    enc = copy.deepcopy(model)
    enc.max_seq_length = max_seq_length
    cfg = MLPConfig()
    get_dim = getattr(enc, "get_embedding_dimension", None) or \
        enc.get_sentence_embedding_dimension
    features, out = _build_head(get_dim(), n_classes, cfg)
    params = list(enc.parameters()) + list(features.parameters()) + list(out.parameters())
    opt = torch.optim.AdamW([
        {"params": list(enc.parameters()), "lr": lr},
        {"params": list(features.parameters()) + list(out.parameters()), "lr": 1e-3},
    ])
    del params
    yt = torch.from_numpy(y_train.astype(np.float32 if multilabel else np.int64))
    loss_fn = torch.nn.BCEWithLogitsLoss() if multilabel else torch.nn.CrossEntropyLoss()

    prep = getattr(enc, "preprocess", None) or enc.tokenize

    def embed(texts):
        feats = prep(list(texts))
        return enc(feats)["sentence_embedding"]

    n = len(train_texts)
    for _ in range(epochs):
        enc.train()
        perm = torch.randperm(n, generator=gen).tolist()
        for start in range(0, n, batch_size):
            idx = perm[start:start + batch_size]
            if len(idx) < 2:
                continue
            h = features(embed([train_texts[i] for i in idx]))
            loss = loss_fn(out(h), yt[idx])
            if coral_weight > 0 and target_texts:
                tidx = torch.randint(0, len(target_texts), (len(idx),), generator=gen).tolist()
                h_t = features(embed([target_texts[i] for i in tidx]))
                loss = loss + coral_weight * coral_loss(h, h_t)
            opt.zero_grad()
            loss.backward()
            opt.step()
    enc.eval()
    features.eval()
    out.eval()
    preds = []
    with torch.no_grad():
        for start in range(0, len(test_texts), 64):
            logits = out(features(embed(test_texts[start:start + 64])))
            preds.append((logits > 0).long() if multilabel else logits.argmax(dim=1))
    return torch.cat(preds).numpy()
