"""The privacy side of Aug-PE: the noise plan and the per-iteration vote histograms.

Neighbouring relation: add/remove one document. In iteration t every private document
of class c casts exactly ONE vote, for its nearest synthetic sample of class c (MiniLM
embeddings, cosine = L2 on unit vectors). Adding or removing a document changes one
count of one class's histogram by 1, so the histograms of one iteration, released
together, have L2 sensitivity 1; the classes hold disjoint documents, so they are one
parallel group (parallel composition: one Gaussian mechanism per iteration, not one per
class). Threshold and selection only post-process the noisy histogram.

The run's total (ε, δ) is split by ``split_budget`` (Gaussian DP: μ² adds up) between the
DP label set (when the labels are not declared: ``privacy.labels``, partition selection),
the optional DP vocabulary (AugPE+Ṽ) and the T vote releases, and the ledger composes what
was released with dp-accounting's PLD accountant.
"""

from __future__ import annotations

import numpy as np

from dptext.privacy import (
    NoiseSpec,
    PrivacyLedger,
    Release,
    Sensitivity,
    gaussian_noise_multiplier,
    release,
)
from dptext.privacy.labels import LABEL_SET, planned_value_set
from dptext.privacy.split import split_budget

VOTE_SENSITIVITY = Sensitivity(
    l1=1.0, l2=1.0,
    reason="each document casts exactly one vote, in its own class's histogram")
VOCAB_STAGE = "vocabulary"
#: rows of private embeddings per matrix product (bounds memory on large corpora)
BLOCK = 4096


def vote_stage(t: int) -> str:
    return f"votes, iteration {t}"


def plan_noise(epsilon: float, delta: float, iterations: int,
               vocab_share: float | None, label_set_share: float | None = None
               ) -> dict[str, NoiseSpec]:
    """Noise of every release the run will make: ``label_set_share`` of the budget (in μ²)
    for the DP label set when the labels are not declared (None: declared or unlabelled),
    ``vocab_share`` for the DP vocabulary when there is one (None: plain AugPE), the rest
    split evenly over the ``iterations`` vote releases. The plan composes to at most
    (ε, δ)."""
    if not (isinstance(iterations, int) and iterations >= 1):
        raise ValueError(f"iterations must be a positive integer, got {iterations!r}")
    shares: dict[str, float] = {}
    for stage, name, share in ((LABEL_SET, "label_set_share", label_set_share),
                               (VOCAB_STAGE, "vocab_share", vocab_share)):
        if share is not None:
            if not 0 < share < 1:
                raise ValueError(f"{name} must be in (0, 1), got {share!r}")
            shares[stage] = share
    rest = 1.0 - sum(shares.values())
    if not rest > 0:
        raise ValueError("the label-set and vocabulary shares leave nothing for the votes")
    shares.update({vote_stage(t): rest / iterations for t in range(1, iterations + 1)})
    return split_budget(epsilon, delta, shares, dict.fromkeys(shares, "gaussian"),
                        thresholds=[LABEL_SET] if label_set_share is not None else [])


def planned_releases(specs: dict[str, NoiseSpec], classes: list) -> list[Release]:
    """The releases ``specs`` will record (same noise multipliers, groups and partitions),
    to check and charge a corpus's budget before any private data is touched."""
    out = []
    for stage, spec in specs.items():
        if stage == LABEL_SET:
            out.append(planned_value_set(spec))
            continue
        mult = gaussian_noise_multiplier(spec.epsilon, spec.delta)
        parts = [None] if stage == VOCAB_STAGE else [str(c) for c in classes]
        for part in parts:
            out.append(Release(
                name=stage, mechanism="gaussian", neighbouring="planned",
                sensitivity_norm="L2", sensitivity=1.0, sensitivity_reason="planned",
                noise_scale=mult, noise_multiplier=mult, dimension=1, epsilon=spec.epsilon,
                delta=spec.delta, partition=part,
                parallel_group=None if part is None else stage))
    return out


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(norms, 1e-12)


def nearest_counts(private: np.ndarray, synthetic: np.ndarray) -> np.ndarray:
    """Votes (int64) over ``synthetic`` rows: each ``private`` row votes once, for its
    nearest synthetic row (L2 on unit vectors = largest cosine). One matrix product per
    block of ``BLOCK`` rows. The one copy of the voting rule: ``nearest_votes`` and the
    batch function ``VoteCounts`` both count with it."""
    counts = np.zeros(len(synthetic), dtype=np.int64)
    if len(private) == 0 or len(synthetic) == 0:
        return counts
    syn = _unit(synthetic)
    for start in range(0, len(private), BLOCK):
        sims = _unit(private[start:start + BLOCK]) @ syn.T
        counts += np.bincount(np.argmax(sims, axis=1), minlength=len(synthetic))
    return counts


def nearest_votes(private: np.ndarray, synthetic: np.ndarray) -> np.ndarray:
    """``nearest_counts`` as float64 (the histogram ``release`` takes)."""
    return nearest_counts(private, synthetic).astype(np.float64)


class VoteCounts:
    """Batch function (``dptext.compute.map_sum``) of one iteration's votes, over
    ``(document, class position)`` items: int64 ``(classes, max population)``, row k
    the votes of class k's documents for its synthetic samples (``nearest_counts``;
    columns past class k's population stay 0).

    Public parameters only: ``synthetic``, the synthetic samples' embeddings of every
    class in the run's class order, and ``embedder``. ``embedder=None``: the documents are
    already embedded (vectors; the local engine embeds the private corpus once per run
    and reuses it every iteration). Otherwise they are texts, embedded here by the
    embedder of that name (loaded once per process, no cache) or by that embedder object:
    on Ray every iteration's batches re-embed their documents on the workers, so the
    private embeddings are never held by the driver nor kept in the object store between
    iterations.
    """

    def __init__(self, synthetic, embedder=None):
        self.synthetic = [np.asarray(s, dtype=np.float32) for s in synthetic]
        self.embedder = embedder
        self.width = max((len(s) for s in self.synthetic), default=0)

    def _vectors(self, docs: list) -> np.ndarray:
        if self.embedder is None:
            return np.asarray(np.stack(docs), dtype=np.float32)
        from dptext.embed import private_vectors

        return private_vectors(self.embedder, docs)

    def __call__(self, batch) -> np.ndarray:
        out = np.zeros((len(self.synthetic), self.width), dtype=np.int64)
        if not batch:
            return out
        position = np.fromiter((k for _, k in batch), dtype=np.int64, count=len(batch))
        x = self._vectors([doc for doc, _ in batch])
        for k, syn in enumerate(self.synthetic):
            rows = x[position == k]
            if len(rows):
                out[k, :len(syn)] = nearest_counts(rows, syn)
        return out


def release_histograms(counts_by_class: dict, noise: NoiseSpec, ledger: PrivacyLedger,
                       iteration: int) -> dict:
    """Release every class's exact vote histogram of one iteration (one parallel group,
    one ``release`` per class, in the order of ``counts_by_class``)."""
    stage = vote_stage(iteration)
    return {c: release(np.asarray(counts, dtype=np.float64), VOTE_SENSITIVITY, noise,
                       ledger=ledger, name=stage, partition=str(c), parallel_group=stage)
            for c, counts in counts_by_class.items()}


def release_votes(private_by_class: dict, synthetic_by_class: dict, noise: NoiseSpec,
                  ledger: PrivacyLedger, iteration: int) -> dict:
    """The noisy vote histogram of every class for one iteration (one parallel group),
    from embeddings in memory (the run counts with ``VoteCounts`` on the compute engine
    and releases with ``release_histograms``)."""
    return release_histograms(
        {c: nearest_votes(private_by_class.get(c, np.empty((0, 1))), syn)
         for c, syn in synthetic_by_class.items()}, noise, ledger, iteration)
