"""Drawing DP keyphrase sequences from a fitted model: post-processing of the releases,
at no privacy cost however often it is called."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dptext.kde.sampler import SamplingStats
from dptext.text.form import form_instruction


@dataclass(frozen=True)
class KeyphraseSequence:
    """One DP keyphrase sequence and the class it was drawn for (a tuple: the label set
    of a multi-label one); ``form_values``: the form drawn with it from the class's
    released form profile, a value per block (None: no profile); ``form``: the same in
    plain words, for the prompt."""

    label: str | tuple[str, ...] | None
    keyphrases: tuple[str, ...]
    form_values: dict[str, str] | None = None

    @property
    def form(self) -> str | None:
        return None if self.form_values is None else form_instruction(self.form_values)

    def to_dict(self) -> dict[str, Any]:
        label = list(self.label) if isinstance(self.label, tuple) else self.label
        return {"label": label, "keyphrases": list(self.keyphrases),
                **({} if self.form_values is None else {"form": self.form_values})}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> KeyphraseSequence:
        label = d.get("label")
        return cls(label=tuple(label) if isinstance(label, list) else label,
                   keyphrases=tuple(d["keyphrases"]), form_values=d.get("form"))


def class_sizes(labels: list, counts: dict | None, n_per_class: int | None = None,
                total: int | None = None) -> dict:
    """How many sequences to draw per class: equal, or ``total`` in proportion to the DP
    counts (``counts``; None: equal shares)."""
    if (n_per_class is None) == (total is None):
        raise ValueError("give exactly one of n_per_class or total")
    if n_per_class is not None:
        return dict.fromkeys(labels, int(n_per_class))
    if not labels:
        return {}
    if counts is None:
        return {c: total // len(labels) + (i < total % len(labels))
                for i, c in enumerate(labels)}
    weights = np.array([max(counts.get(c, 0.0), 0.0) for c in labels]) + 1e-9
    raw = total * weights / weights.sum()
    sizes = np.floor(raw).astype(int)
    sizes[np.argsort(-(raw - sizes))[: total - sizes.sum()]] += 1
    return dict(zip(labels, sizes.tolist(), strict=True))


def draw_sequences(model, vocabulary: tuple[str, ...], sizes: dict, length: int,
                   rng: np.random.Generator, stats: SamplingStats) -> list[KeyphraseSequence]:
    """``sizes[label]`` sequences of at most ``length`` terms of ``vocabulary`` per class."""
    out: list[KeyphraseSequence] = []
    vocab = np.asarray(vocabulary, dtype=object)
    for label, n in sizes.items():
        if n <= 0:
            continue
        pos = model.sample(label, n, length, rng, stats)
        terms = vocab[np.maximum(pos, 0)] if len(vocab) else np.full(pos.shape, "", object)
        for row, valid in zip(terms, pos >= 0, strict=True):
            out.append(KeyphraseSequence(label, tuple(row[valid].tolist())))
    return out


def with_forms(sequences: list[KeyphraseSequence], profile,
               rng: np.random.Generator) -> list[KeyphraseSequence]:
    """Each sequence with a form drawn from its class's released ``profile``
    (``kps.form.FormProfile``): post-processing, with the public ``rng``."""
    labels = [s.label for s in sequences]
    forms: list[dict | None] = [None] * len(sequences)
    for label in dict.fromkeys(labels):
        where = [i for i, x in enumerate(labels) if x == label]
        for i, form in zip(where, profile.draw(label, len(where), rng), strict=True):
            forms[i] = form
    return [replace(s, form_values=f) for s, f in zip(sequences, forms, strict=True)]
