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

Or, ``model="marginal"``: one partition selection over each document's labels AND its
set's size (a document adds 1 to at most k_max + 1 keys: L0 k_max + 1), and synthetic
sets drawn as a size, then that many labels in proportion to their noisy counts.

The joint release keeps which labels go together but loses the rare sets (below the
threshold: with many labels most sets are rare); the marginal one keeps every frequent
label and the set sizes but not the co-occurrence. ``benchmarks/bench_multilabel.py``
measures both on radlabels (docs/benchmarks.md, ``multi-label``). A document whose set is
not released keeps its released labels in the per-label releases (the rows are public:
indexed by released labels).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from dptext.privacy.labels import LABEL_SET, release_keys, release_value_sets
from dptext.privacy.ledger import PrivacyLedger
from dptext.privacy.mechanisms import NoiseSpec

SET_FIELD = "label set"
SET_MODELS = ("joint", "marginal")
LABEL_SETS_NOTE = (
    "The corpus is multi-label: each document kept at most {k} of its labels (a random "
    "subset, public randomness), so it counts in at most {k} per-label rows (their noise "
    "is calibrated to that). {released} released with DP partition selection (the 'label "
    "set' release: noisy counts kept above a threshold); the synthetic documents' label "
    "sets are drawn from those noisy counts.")
RELEASED = {"marginal": "Its labels and its label set's size were",
            "joint": "The label sets were"}


def label_sets_note(k_max: int, model: str) -> str:
    """The privacy report's note on a multi-label fit."""
    return LABEL_SETS_NOTE.format(k=k_max, released=RELEASED[model])


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
    """The released label sets and their noisy counts (the joint model), or the released
    labels' and set sizes' noisy counts (the marginal one); ``k_max``: the cap (public)."""

    sets: dict[tuple[str, ...], float]
    threshold: float
    k_max: int
    marginals: dict[str, float] | None = None  # the marginal model's label counts
    sizes: dict[int, float] | None = None  # and its set sizes' counts

    @property
    def labels(self) -> tuple[str, ...]:
        if self.marginals is not None:
            return tuple(sorted(self.marginals))
        return tuple(sorted({x for s in self.sets for x in s}))

    @property
    def label_counts(self) -> dict[str, float]:
        """Per label, its noisy count (the joint model: the sum of the noisy counts of the
        released sets that hold it)."""
        if self.marginals is not None:
            return dict(self.marginals)
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
                "threshold": self.threshold, "k_max": self.k_max,
                "marginals": self.marginals,
                "sizes": None if self.sizes is None else [[k, c] for k, c in
                                                          self.sizes.items()]}

    @classmethod
    def from_dict(cls, d: dict) -> ReleasedLabelSets:
        sizes = d.get("sizes")
        return cls({tuple(s): float(c) for s, c in d["sets"]}, float(d["threshold"]),
                   int(d["k_max"]), d.get("marginals"),
                   None if sizes is None else {int(k): float(c) for k, c in sizes})


def release_label_sets(capped: Sequence[tuple[str, ...]], noise: NoiseSpec, *, k_max: int,
                       ledger: PrivacyLedger, model: str = "marginal") -> ReleasedLabelSets:
    """Release the (already capped) label sets by DP partition selection into ``ledger`` as
    the ``"label set"`` release: the sets (``model="joint"``: one set per document, L0 1)
    or the labels and set sizes (``"marginal"``: L0 k_max + 1)."""
    if any(len(s) > k_max for s in capped):
        raise ValueError("a document holds more labels than max_labels_per_doc: cap them "
                         "first (cap_label_sets)")
    if model not in SET_MODELS:
        raise ValueError(f"the label-set model must be one of {', '.join(SET_MODELS)}; "
                         f"got {model!r}")
    if model == "marginal":
        return _release_marginals(capped, noise, k_max, ledger)
    released = release_value_sets({SET_FIELD: [set_key(s) for s in capped]}, noise,
                                  ledger=ledger, name=LABEL_SET,
                                  what=f"label set (at most {k_max} labels)")
    return ReleasedLabelSets({tuple(json.loads(k)): c
                              for k, c in released.counts[SET_FIELD].items()},
                             released.threshold, k_max)


def _release_marginals(capped, noise: NoiseSpec, k_max: int,
                       ledger: PrivacyLedger) -> ReleasedLabelSets:
    exact = Counter(json.dumps(["label", x]) for s in capped for x in s)
    exact.update(json.dumps(["size", len(s)]) for s in capped)
    noisy, threshold = release_keys(dict(exact), k_max + 1, noise, ledger=ledger,
                                    name=LABEL_SET,
                                    what=f"labels (at most {k_max}) and its set's size")
    marginals, sizes = {}, {}
    for key, c in sorted(noisy.items()):
        kind, value = json.loads(key)
        if kind == "label":
            marginals[value] = c
        else:
            sizes[int(value)] = c
    return ReleasedLabelSets({}, threshold, k_max, marginals, sizes)


def _shares(weights: np.ndarray, n: int) -> np.ndarray:
    """``n`` split in proportion to ``weights`` (rounded down, the remainder by largest
    fractional part)."""
    weights = np.maximum(weights, 0.0) + 1e-9
    raw = n * weights / weights.sum()
    sizes = np.floor(raw).astype(int)
    sizes[np.argsort(-(raw - sizes), kind="stable")[: n - sizes.sum()]] += 1
    return sizes


def draw_label_sets(released: ReleasedLabelSets, n: int,
                    rng: np.random.Generator) -> list[tuple[str, ...]]:
    """``n`` non-empty label sets (post-processing; ``rng``: public). The joint model: each
    released set its share of ``n`` by noisy count, in a random order. The marginal one:
    each released size its share, then that many distinct labels drawn in proportion to
    their noisy counts."""
    if n <= 0:
        return []
    if released.marginals is None:
        sets = [s for s in released.sets if s]
        if not sets:
            return []
        shares = _shares(np.array([released.sets[s] for s in sets]), n)
        out = [s for s, k in zip(sets, shares.tolist(), strict=True) for _ in range(k)]
        return [out[i] for i in rng.permutation(len(out))]
    labels = released.labels
    sizes = [k for k in sorted(released.sizes or {}) if 1 <= k <= len(labels)]
    if not labels:
        return []
    if not sizes:  # no size released: one label each
        sizes, weights = [1], np.ones(1)
    else:
        weights = np.array([released.sizes[k] for k in sizes])
    p = np.maximum(np.array([released.marginals[x] for x in labels]), 0.0) + 1e-9
    p /= p.sum()
    out = []
    for k, count in zip(sizes, _shares(weights, n).tolist(), strict=True):
        for _ in range(count):
            pick = rng.choice(len(labels), size=k, replace=False, p=p)
            out.append(tuple(sorted(labels[i] for i in pick)))
    return [out[i] for i in rng.permutation(len(out))]
