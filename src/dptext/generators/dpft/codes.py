"""Control codes (Keskar et al. 2019): ``[BOS]codes[SEP]text``, and their DP distribution.

A document's codes are its label and optional metadata fields (e.g. sex, ethnicity),
written ``label: sport | sex: F``. The codes to generate with are drawn from a noisy
histogram over all combinations of the public code values: one document adds 1 to
exactly one cell, so under add/remove-one-document neighbours the histogram moves by
1 in L1 and L2. It is released through ``dptext.privacy.release`` (Gaussian), so it
lands in the ledger and is composed with the DP-SGD run.

The public code values of each field are declared (``--labels``, ``--code-values``:
free) or, for the fields not declared, released first with DP partition selection
(``privacy.labels.release_value_sets``, one "label set" release over every undeclared
field). Documents with a value outside the public sets are left out of everything.

A multi-label corpus (the fine-tuning paper's setting: notes with several codes) writes
its label SET as the label code (``label: ["a", "b"]``): one value per document, so the
code histogram over the sets keeps its sensitivity 1. With the labels declared and at
most ``MAX_DECLARED_SETS`` sets of them, every set is a public code value
(``declared_label_sets``): nothing is released first, no document is left out, and the
histogram gets the share of ε the label-set release would have spent. Measured on
radiology reports (the sets drawn against the real test reports' sets, total variation;
8 releases): 3 declared findings, ε = 3: 0.08 against 0.60 for partition selection over
the sets that occur (it kept 41 % of the reports), ε = 6: 0.07 against 0.13; 5 findings,
ε = 3: 0.23 against 0.99 (1 % kept), ε = 6: 0.20 against 0.76.

With more declared labels than that and the label set the only code, the sets are too
many for a histogram and too rare for partition selection (10 findings, ε = 6: the sets
released held about 30 of the 568 training reports, the rest were left out, DP-SGD ran 4
steps and the documents scored a macro AUC of 0.50). Then the codes' distribution is
released as the DP-KPS marginal label-set model is (``privacy.label_sets``): the noisy
count of each declared label and of each set size (``SetCodeDistribution``); every
document trains with its own set as its code, none is left out, and a synthetic
document's set is a size drawn by its noisy count, then that many labels by theirs. With
other code fields beside the label set, the sets that occur are released with partition
selection and a document whose set is not released is left out.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dptext.corpus import Corpus, InputError
from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, release
from dptext.privacy.label_sets import ReleasedLabelSets, draw_label_sets, set_key
from dptext.privacy.labels import PrivateValuesError, check_declared, release_value_sets

LABEL_FIELD = "label"
#: declared labels whose every set (2^n of them) is a public code value; above, the sets
#: that occur are released with partition selection (the empty sets' noise draws sets
#: nobody holds, and the DP estimate of the corpus size, the sum of the cells, has sd
#: σ·√cells: ±8σ at 64)
MAX_DECLARED_SETS = 64


def format_codes(values: dict[str, str]) -> str:
    return " | ".join(f"{k}: {v}" for k, v in values.items())


def document_codes(corpus: Corpus, fields: Sequence[str]) -> list[dict[str, str]]:
    """Each document's control codes: its label (if any; in a multi-label corpus its label
    SET, as a JSON list: one code value, ``set_key``) then ``fields`` of ``columns``."""
    missing = [f for f in fields if f not in corpus.columns]
    if missing:
        raise InputError(f"{corpus.source}: no column(s) {missing} for control codes; "
                         "read the corpus with extra_columns=[...]")
    out = []
    for i in range(len(corpus)):
        d: dict[str, str] = {}
        if corpus.labels is not None:
            d[LABEL_FIELD] = str(corpus.labels[i])
        elif corpus.label_sets is not None:
            d[LABEL_FIELD] = set_key(corpus.label_sets[i])
        for f in fields:
            d[f] = str(corpus.columns[f][i])
        out.append(d)
    return out


def declared_label_sets(labels: Sequence[str]) -> tuple[str, ...] | None:
    """Every set of the declared ``labels`` (the empty one too) as a code value
    (``set_key``), or None when there are more than ``MAX_DECLARED_SETS``."""
    labels = sorted(set(labels))
    if 2 ** len(labels) > MAX_DECLARED_SETS:
        return None
    return tuple(set_key(c) for r in range(len(labels) + 1)
                 for c in itertools.combinations(labels, r))


@dataclass(frozen=True)
class CodeDistribution:
    """Released (noisy) counts of every combination of code values; post-processing only."""

    fields: tuple[str, ...]
    cells: tuple[tuple[str, ...], ...]
    noisy_counts: tuple[float, ...]
    private: bool = True

    def probabilities(self) -> np.ndarray:
        c = np.clip(np.asarray(self.noisy_counts, dtype=float), 0.0, None)
        if c.sum() <= 0:  # everything noised below zero: fall back to uniform
            return np.full(len(c), 1.0 / len(c))
        return c / c.sum()

    def total(self) -> float:
        """A DP estimate of the corpus size (the sum of the noisy counts), at least 1."""
        return max(1.0, float(np.sum(self.noisy_counts)))

    def sample(self, n: int, rng: np.random.Generator) -> list[dict[str, str]]:
        idx = rng.choice(len(self.cells), size=n, p=self.probabilities())
        return [dict(zip(self.fields, self.cells[i], strict=True)) for i in idx]

    def to_dict(self) -> dict:
        return {"fields": list(self.fields), "cells": [list(c) for c in self.cells],
                "noisy_counts": list(self.noisy_counts), "private": self.private}

    @classmethod
    def from_dict(cls, d: dict) -> CodeDistribution:
        return cls(tuple(d["fields"]), tuple(tuple(c) for c in d["cells"]),
                   tuple(d["noisy_counts"]), d.get("private", True))


def code_domains(codes: list[dict[str, str]], declared: dict[str, Sequence[str]] | None = None,
                 *, spec: NoiseSpec | None = None, ledger: PrivacyLedger | None = None
                 ) -> dict[str, tuple[str, ...]]:
    """Public value sets of each field: ``declared`` where given (the data must stay inside
    them: ``PrivateValuesError``), the others released by DP partition selection with
    ``spec`` into ``ledger`` — or, with ``spec=None`` (ε = ∞ only), read from the data,
    NOT private."""
    declared = {f: tuple(v) for f, v in (declared or {}).items() if v}
    fields = list(codes[0]) if codes else []
    for f in fields:
        if f in declared:
            check_declared((c[f] for c in codes), declared[f],
                           what="labels" if f == LABEL_FIELD else f"values of {f!r}")
    open_fields = [f for f in fields if f not in declared]
    found: dict[str, tuple[str, ...]] = {}
    if open_fields and spec is None:
        found = {f: tuple(sorted({c[f] for c in codes})) for f in open_fields}
    elif open_fields:
        if ledger is None:
            raise ValueError("releasing code values needs the run's ledger")
        found = release_value_sets({f: [c[f] for c in codes] for f in open_fields}, spec,
                                   ledger=ledger).values
    return {f: declared[f] if f in declared else tuple(found[f]) for f in fields}


def public_documents(codes: list[dict[str, str]], domains: dict[str, Sequence[str]]
                     ) -> list[int]:
    """Indices of the documents whose every code value is public (the others are in no
    public cell and are left out)."""
    sets = {f: set(v) for f, v in domains.items()}
    return [i for i, c in enumerate(codes) if all(c[f] in sets[f] for f in sets)]


def release_code_distribution(codes: list[dict[str, str]], domains: dict[str, tuple[str, ...]],
                              *, epsilon: float | None, delta: float,
                              ledger: PrivacyLedger) -> CodeDistribution:
    """Noisy histogram of code combinations (``epsilon=None``: exact, NOT private)."""
    fields = tuple(domains)
    cells = tuple(itertools.product(*(domains[f] for f in fields)))
    index = {c: i for i, c in enumerate(cells)}
    counts = np.zeros(len(cells))
    for c in codes:  # one document → one cell: L1 = L2 = 1
        key = tuple(c[f] for f in fields)
        if key not in index:
            raise PrivateValuesError("a control code is outside the public code values; "
                                     "declare it or fix the data",
                                     f"control code {key} is outside {domains}")
        counts[index[key]] += 1
    if epsilon is None:
        return CodeDistribution(fields, cells, tuple(counts.tolist()), private=False)
    noisy = release(counts, Sensitivity(l1=1.0, l2=1.0, reason=(
        "each document adds 1 to exactly one control-code combination")),
        NoiseSpec("gaussian", epsilon, delta), ledger=ledger, name="control-code histogram")
    return CodeDistribution(fields, cells, tuple(noisy.tolist()))


@dataclass(frozen=True)
class SetCodeDistribution:
    """Released (noisy) counts of each declared label and of each set size, 0 to the
    number of labels: the label-set codes' distribution past ``MAX_DECLARED_SETS``
    (module docstring); post-processing only. Read like ``CodeDistribution``."""

    labels: tuple[str, ...]
    label_counts: tuple[float, ...]
    size_counts: tuple[float, ...]  # index: the set's size
    private: bool = True

    def total(self) -> float:
        """A DP estimate of the corpus size (the sum of the size counts), at least 1."""
        return max(1.0, float(np.sum(self.size_counts)))

    def sample(self, n: int, rng: np.random.Generator) -> list[dict[str, str]]:
        """``n`` codes: the empty set its share of ``n`` by the size-0 count, the others
        drawn by ``privacy.label_sets.draw_label_sets``'s marginal model."""
        sizes = np.maximum(np.asarray(self.size_counts, dtype=float), 0.0)
        empty = round(n * sizes[0] / sizes.sum()) if sizes.sum() > 0 else 0
        released = ReleasedLabelSets(
            {}, 0.0, len(self.labels), dict(zip(self.labels, self.label_counts, strict=True)),
            {k: float(c) for k, c in enumerate(self.size_counts) if k})
        sets = draw_label_sets(released, n - empty, rng) + [()] * empty
        return [{LABEL_FIELD: set_key(sets[i])} for i in rng.permutation(len(sets))]

    def to_dict(self) -> dict:
        return {"kind": "set marginals", "labels": list(self.labels),
                "label_counts": list(self.label_counts),
                "size_counts": list(self.size_counts), "private": self.private}


def code_distribution_from_dict(d: dict) -> CodeDistribution | SetCodeDistribution:
    if d.get("kind") == "set marginals":
        return SetCodeDistribution(tuple(d["labels"]), tuple(d["label_counts"]),
                                   tuple(d["size_counts"]), d.get("private", True))
    return CodeDistribution.from_dict(d)


def release_set_marginals(codes: list[dict[str, str]], labels: Sequence[str], *,
                          epsilon: float | None, delta: float,
                          ledger: PrivacyLedger) -> SetCodeDistribution:
    """Noisy counts of each of the declared ``labels`` and of each set size over the
    documents' label-set codes (``epsilon=None``: exact, NOT private). A document adds 1
    to the count of each of its labels and 1 to its set's size: with n declared labels
    (the data is checked to hold no other) at most n + 1 ones, so L1 n + 1, L2 √(n + 1)."""
    labels = tuple(sorted(labels))
    n = len(labels)
    sets = [json.loads(c[LABEL_FIELD]) for c in codes]
    check_declared({x for s in sets for x in s}, labels)
    index = {x: i for i, x in enumerate(labels)}
    counts = np.zeros(2 * n + 1)
    for held in sets:
        counts[[index[x] for x in held]] += 1
        counts[n + len(held)] += 1
    if epsilon is not None:
        counts = release(counts, Sensitivity(l1=n + 1.0, l2=float(np.sqrt(n + 1)), reason=(
            f"each document adds 1 to the count of each of its labels (at most the {n} "
            "declared) and 1 to the count of its set's size")),
            NoiseSpec("gaussian", epsilon, delta), ledger=ledger,
            name="control-code histogram (labels and set sizes)")
    return SetCodeDistribution(labels, tuple(counts[:n].tolist()), tuple(counts[n:].tolist()),
                               private=epsilon is not None)
