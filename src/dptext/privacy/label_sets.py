"""Multi-label corpora: each document's labels capped, and the label SETS released.

A document of a multi-label corpus holds a set of labels. Two things about them are
private and need bounding or releasing before a generator can use them:

* **how many labels a document contributes** — unbounded, one document would move
  as many per-label statistics as it has labels. ``cap_label_sets`` keeps at most
  ``k_max`` labels of each document, a uniformly random subset drawn with the run's
  PUBLIC randomness (never a rule that reads other documents), so by construction a
  document sits in at most ``k_max`` per-label rows: a per-label release whose rows
  each move by Δ moves by ``k_max``·Δ in L1 and √k_max·Δ in L2 (the callers state it);
* **which label sets exist and how common they are** — released here by DP partition
  selection over the (capped) sets, exactly as ``privacy.labels`` releases single
  labels: a document holds ONE set, so under add/remove-one-document neighbours the
  map of set counts changes in one key by 1 (L0 1, L1 1, L2 1), whatever k_max.
  The released sets, their noisy counts, the labels that occur in them and per-label
  counts (sums of set counts) are all released data (post-processing).

Why sets rather than per-label counts plus co-occurrence: synthetic documents need
label SETS, and one partition selection gives the joint distribution at sensitivity 1;
per-label partition selection would cost L0 = k_max and still leave the joint to be
modelled. Rare sets are lost (below the threshold); ``benchmarks/bench_multilabel.py``
measures how many documents' sets survive on radlabels (docs/benchmarks.md,
``multi-label``). A document whose set is not released keeps its released labels in
the per-label releases (the rows are public: indexed by released labels).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dptext.privacy.labels import LABEL_SET, release_value_sets
from dptext.privacy.ledger import PrivacyLedger
from dptext.privacy.mechanisms import NoiseSpec

SET_FIELD = "label set"
LABEL_SETS_NOTE = (
    "The corpus is multi-label: each document kept at most {k} of its labels (a random "
    "subset, public randomness), so it counts in at most {k} per-label rows (their noise "
    "is calibrated to that). The label sets were released with DP partition selection "
    "(the 'label set' release: noisy counts of each set, kept above a threshold); the "
    "synthetic documents' label sets are drawn from those noisy counts.")


def cap_label_sets(sets: Sequence[tuple[str, ...]], k_max: int,
                   rng: np.random.Generator) -> tuple[tuple[str, ...], ...]:
    """Each set with at most ``k_max`` labels: a uniformly random subset (``rng``: public)
    of a larger one, sorted; smaller sets as they are."""
    if k_max < 1:
        raise ValueError(f"max_labels_per_doc must be at least 1, got {k_max}")
    out = []
    for s in sets:
        if len(s) > k_max:
            s = tuple(sorted(s[i] for i in rng.choice(len(s), size=k_max, replace=False)))
        out.append(tuple(s))
    return tuple(out)


def set_key(labels: Sequence[str]) -> str:
    return json.dumps(sorted(labels), ensure_ascii=False)


@dataclass(frozen=True)
class ReleasedLabelSets:
    """The released label sets and their noisy counts; ``k_max``: the cap (public)."""

    sets: dict[tuple[str, ...], float]
    threshold: float
    k_max: int

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(sorted({x for s in self.sets for x in s}))

    @property
    def label_counts(self) -> dict[str, float]:
        """Per label, the sum of the noisy counts of the released sets that hold it."""
        out = dict.fromkeys(self.labels, 0.0)
        for s, c in self.sets.items():
            for x in s:
                out[x] += c
        return out

    # read like a single-label release (``labels.ReleasedValues``) by those that size
    # classes from it
    @property
    def values(self) -> dict[str, tuple[str, ...]]:
        return {"label": self.labels}

    @property
    def counts(self) -> dict[str, dict[str, float]]:
        return {"label": self.label_counts}

    def to_dict(self) -> dict:
        return {"sets": [[list(s), c] for s, c in self.sets.items()],
                "threshold": self.threshold, "k_max": self.k_max}

    @classmethod
    def from_dict(cls, d: dict) -> ReleasedLabelSets:
        return cls({tuple(s): float(c) for s, c in d["sets"]}, float(d["threshold"]),
                   int(d["k_max"]))


def release_label_sets(capped: Sequence[tuple[str, ...]], noise: NoiseSpec, *, k_max: int,
                       ledger: PrivacyLedger) -> ReleasedLabelSets:
    """Release the (already capped) label sets by DP partition selection (one set per
    document: L0 1) into ``ledger`` as the ``"label set"`` release."""
    if any(len(s) > k_max for s in capped):
        raise ValueError("a document holds more labels than max_labels_per_doc: cap them "
                         "first (cap_label_sets)")
    released = release_value_sets({SET_FIELD: [set_key(s) for s in capped]}, noise,
                                  ledger=ledger, name=LABEL_SET,
                                  what=f"label set (at most {k_max} labels)")
    return ReleasedLabelSets({tuple(json.loads(k)): c
                              for k, c in released.counts[SET_FIELD].items()},
                             released.threshold, k_max)


def draw_label_sets(released: ReleasedLabelSets, n: int,
                    rng: np.random.Generator) -> list[tuple[str, ...]]:
    """``n`` label sets in proportion to the released noisy counts (post-processing):
    each non-empty released set gets its rounded share, the remainder by largest
    fractional part, in a random order (``rng``: public)."""
    sets = [s for s in released.sets if s]
    if not sets or n <= 0:
        return []
    weights = np.array([max(released.sets[s], 0.0) for s in sets]) + 1e-9
    raw = n * weights / weights.sum()
    sizes = np.floor(raw).astype(int)
    sizes[np.argsort(-(raw - sizes), kind="stable")[: n - sizes.sum()]] += 1
    out = [s for s, k in zip(sets, sizes.tolist(), strict=True) for _ in range(k)]
    return [out[i] for i in rng.permutation(len(out))]
