"""DP-KPS's form profile: per class, the noisy sum of the documents' form vectors
(``dptext.text.form``), and the forms drawn from it, one per keyphrase sequence.

Neighbouring relation: add/remove one document. A document's form vector is one-hot in
each of the ``FORM_BLOCKS`` blocks, so it moves its class's sum by exactly √blocks in L2
(``form_sensitivity``), whatever the text; documents in no class move nothing. The
classes hold disjoint documents, so the per-class releases compose in parallel (one
``FORM_GROUP``). No count is released: each block of a class's noisy sum, clipped at 0
and normalised, is a distribution over that block's values (post-processing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from statistics import NormalDist

import numpy as np

from dptext.compute import map_sum
from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, release
from dptext.text.form import (
    FORM_BLOCKS,
    FORM_DIMENSION,
    OFFSETS,
    FormCounts,
    form_blocks,
    form_norm_bound,
)
from dptext.text.form_realise import realise_form

FORM_NAME = "form profile"
FORM_GROUP = "form"
#: the chance that any empty cell of a class's block passes its noise floor
#: (``floor_sigmas``): a link block of 50 values at a flat 2σ would pass about one
FALSE_CELL_RATE = 0.1


def floor_sigmas(values: int) -> float:
    """The noise floor of a block of ``values`` cells, in noise standard deviations: the
    Gaussian quantile at which all its empty cells stay below it with chance
    1 − ``FALSE_CELL_RATE`` (Bonferroni: 1.64σ for 2 values, 2.88σ for 50)."""
    return float(NormalDist().inv_cdf(1.0 - FALSE_CELL_RATE / values))


def above_floor(block: np.ndarray, floor: float) -> np.ndarray:
    """A block's noisy sums above ``floor``, normalised; all the weight on the largest
    where none is above it."""
    kept = np.where(block > floor, block, 0.0)
    if kept.sum() <= 0:
        kept = (np.arange(len(block)) == np.argmax(block)).astype(np.float64)
    return kept / kept.sum()


def form_sensitivity() -> Sensitivity:
    """How far one document moves its class's form sum: one 1 per block."""
    l1, l2 = form_norm_bound()
    return Sensitivity(l1=l1, l2=l2, reason=f"one document adds a one-hot vector in each of "
                       f"the {len(FORM_BLOCKS)} public form blocks to its class's sum")


@dataclass(frozen=True)
class FormProfile:
    """Per class, the released noisy form sum, and the noise's standard deviation (public:
    the ledger records it)."""

    sums: dict  # label → noisy sum, (FORM_DIMENSION,)
    noise_scale: float

    def distributions(self, label) -> list[np.ndarray]:
        """Per block, the probabilities of its values (post-processing of the release).

        The class's own estimate (its noisy sums above the block's noise floor,
        ``floor_sigmas``, normalised) is shrunk toward the pooled one of all classes (the
        sum of their noisy sums, floored at √classes times that) as James and Stein would:
        with weight 1 − (k σ² / n²) / ‖x − pooled‖² on its own, x the class's unfloored
        noisy sums over n, k the values in the block and n the class's estimated size (the
        median of its blocks' noisy totals): the signal's share of the distance, noise
        included. A class of a few dozen documents, whose true cells sit below the floor
        while noise crosses it, borrows the corpus's forms; a large class keeps its own
        (``benchmarks/bench_form_profile.py``: drawn against real forms on five corpora)."""
        own_blocks = form_blocks(self.sums[label])
        pooled_blocks = form_blocks(np.sum(list(self.sums.values()), axis=0))
        sigma = self.noise_scale
        n = max(float(np.median([b.sum() for b in own_blocks])), 1.0)
        out = []
        for own_sums, pooled_sums in zip(own_blocks, pooled_blocks, strict=True):
            floor = floor_sigmas(own_sums.size) * sigma
            own = above_floor(own_sums, floor)
            shared = above_floor(pooled_sums, floor * math.sqrt(len(self.sums)))
            apart = float(np.sum((own_sums / n - shared) ** 2))
            weight = max(0.0, 1.0 - own_sums.size * sigma ** 2 / n ** 2 / apart) if apart else 1.0
            out.append(weight * own + (1 - weight) * shared)
        return out

    def drawn_indices(self, label, n: int, rng: np.random.Generator) -> list[np.ndarray]:
        """Per block, ``n`` value indices drawn from its distribution (independently)."""
        return [rng.choice(len(p), size=n, p=p) for p in self.distributions(label)]

    def draw(self, label, n: int, rng: np.random.Generator) -> list[dict[str, str]]:
        """``n`` forms of class ``label``, each block's value drawn independently: block
        name → value (``text.form.form_instruction`` says one in plain words)."""
        drawn = [np.asarray(values, dtype=object)[idx] for values, idx in
                 zip(FORM_BLOCKS.values(), self.drawn_indices(label, n, rng), strict=True)]
        return [dict(zip(FORM_BLOCKS, column, strict=True))
                for column in zip(*drawn, strict=True)] if n > 0 else []

    def draw_vectors(self, label, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` forms of class ``label`` as one-hot-per-block vectors, (n,
        ``FORM_DIMENSION``): the space of ``text.form.form_vectors``."""
        cols = np.column_stack(self.drawn_indices(label, n, rng)).reshape(n, -1) + OFFSETS
        out = np.zeros((n, FORM_DIMENSION))
        np.put_along_axis(out, cols, 1.0, axis=1)
        return out

    def to_dict(self) -> dict:
        return {"blocks": {b: list(v) for b, v in FORM_BLOCKS.items()},
                "noise_scale": self.noise_scale,
                "classes": [{"label": c, "sums": np.asarray(s).round(3).tolist()}
                            for c, s in self.sums.items()]}


def release_form_profile(items, labels: list, noise: NoiseSpec, ledger: PrivacyLedger,
                         fold: str | None = None) -> FormProfile:
    """The per-class form sums of ``items`` ((text, class id) pairs; −1: in no class): exact
    integer sums over batches on the current engine, then the noise once per class."""
    exact = map_sum(FormCounts(len(labels)), list(items)).astype(np.float64)
    sens = form_sensitivity()
    sums = {label: release(exact[k], sens, noise, ledger=ledger, name=FORM_NAME,
                           partition=f"class={label}", parallel_group=FORM_GROUP, fold=fold)
            for k, label in enumerate(labels)}
    return FormProfile(sums, ledger.releases[-1].noise_scale if sums else 0.0)


def follow_forms(documents: list, sequences: list, seed: int) -> list:
    """Each LLM document (``llm.documents.SyntheticDocument``) with the mechanical parts
    of its sequence's drawn form applied (``text.form_realise``): post-processing of
    released forms and of text written from released prompts; ``seed`` (public) draws
    the links' paths, one generator per document so a resumed run writes the same."""
    return [doc if seq.form_values is None else
            replace(doc, text=realise_form(doc.text, seq.form_values, seq.keyphrases,
                                           np.random.default_rng([seed, i])))
            for i, (doc, seq) in enumerate(zip(documents, sequences, strict=True))]
