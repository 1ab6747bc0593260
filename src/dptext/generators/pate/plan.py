"""The privacy plan of a ``pate`` run: which Gaussian releases it makes and the noise of each.

Releases (neighbouring relation: add/remove one document; all Gaussian, so they compose
exactly through Gaussian DP and dp-accounting's PLD accountant in the ledger):

* ``label set`` (only without declared label names, on a labelled corpus): the DP label
  set (``privacy.labels``: thresholded noisy label counts, L2 sensitivity 1, plus the
  threshold's δ); documents whose label is not released are left out;
* ``vocab`` (only without declared label names): DP-KPS's vocabulary histogram, each
  document contributing at most S distinct terms (L2 sensitivity √S, stated and
  released by ``KeyphraseSeeder``);
* ``tutor`` (only with more than one class): the label histogram, L2 sensitivity 1;
* ``votes``: the GNMax answers. Each answered query releases the teachers' vote histogram
  plus Gaussian noise; one document sits in one teacher's shard, so it can move that
  teacher's vote on a query from one bin to another (−1, +1): L2 sensitivity √2 per
  query. The Q answered queries are released as one Q×(C+1) matrix, whose L2 sensitivity
  is therefore √(2Q) — the same privacy loss as Q composed per-query Gaussian releases
  (μ² adds up under Gaussian DP), which ``rdp_cross_check`` recomputes query by query.

``plan_noise`` splits the run's (ε, δ) between the stages with ``split_budget`` so that
the ledger's composition meets ε exactly.
"""

from __future__ import annotations

import math

import dp_accounting

from dptext.privacy import NoiseSpec, Release, Sensitivity, gaussian_noise_multiplier
from dptext.privacy.labels import LABEL_SET, planned_value_set
from dptext.privacy.split import split_budget

TUTOR_SENSITIVITY = Sensitivity(l1=1.0, l2=1.0,
                                reason="one document changes one class count by 1")


def vote_sensitivity(queries: int) -> Sensitivity:
    return Sensitivity(
        l1=2.0 * queries, l2=math.sqrt(2.0 * queries),
        reason=f"one document is in one teacher's shard: that teacher's vote on each of the "
               f"{queries} answered queries moves from one bin to another (−1, +1), √2 per "
               "query")


def stage_shares(*, tutor: bool, vocab: bool, tutor_share: float,
                 vocab_share: float, label_set_share: float | None = None
                 ) -> dict[str, float]:
    """Weights of the active stages (summing to 1); the votes take what is left.
    ``label_set_share``: the DP label set's, when the run releases one."""
    shares = {"tutor": tutor_share if tutor else 0.0, "vocab": vocab_share if vocab else 0.0,
              LABEL_SET: label_set_share or 0.0}
    rest = 1.0 - sum(shares.values())
    if not 0 < rest <= 1:
        raise ValueError(f"tutor, vocabulary and label-set shares ({tutor_share}, "
                         f"{vocab_share}, {label_set_share}) leave nothing for the teacher "
                         "votes; they must sum to less than 1")
    return {"votes": rest, **{s: w for s, w in shares.items() if w > 0}}


def plan_noise(epsilon: float, delta: float, *, tutor: bool, vocab: bool,
               tutor_share: float, vocab_share: float,
               label_set_share: float | None = None) -> dict[str, NoiseSpec]:
    """Per-stage Gaussian NoiseSpecs composing to (ε, δ) (see the module docstring)."""
    shares = stage_shares(tutor=tutor, vocab=vocab, tutor_share=tutor_share,
                          vocab_share=vocab_share, label_set_share=label_set_share)
    return split_budget(epsilon, delta, shares, dict.fromkeys(shares, "gaussian"),
                        thresholds=[LABEL_SET] if LABEL_SET in shares else [])


def planned_releases(specs: dict[str, NoiseSpec]) -> list[Release]:
    """The releases a run will make, for checking a corpus's remaining budget up front."""
    out = [planned_value_set(specs[LABEL_SET])] if LABEL_SET in specs else []
    for stage, spec in specs.items():
        if stage == LABEL_SET:
            continue
        mult = gaussian_noise_multiplier(spec.epsilon, spec.delta)
        out.append(Release(name=stage, mechanism="gaussian", neighbouring="planned",
                           sensitivity_norm="L2", sensitivity=1.0, sensitivity_reason="planned",
                           noise_scale=mult, noise_multiplier=mult, dimension=1,
                           epsilon=spec.epsilon, delta=spec.delta))
    return out


def rdp_cross_check(releases: list[Release], queries: int, vote_release: str,
                    delta: float) -> float:
    """ε at ``delta`` from dp-accounting's RDP accountant, with the vote release split back
    into its ``queries`` per-query Gaussian mechanisms (sensitivity √2 each)."""
    acc = dp_accounting.rdp.RdpAccountant(
        neighboring_relation=dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE)
    for r in releases:
        if r.name == vote_release:
            per_query = dp_accounting.GaussianDpEvent(r.noise_multiplier * math.sqrt(queries))
            acc.compose(dp_accounting.SelfComposedDpEvent(per_query, queries))
        else:
            acc.compose(r.dp_event())
    return float(acc.get_epsilon(delta))
