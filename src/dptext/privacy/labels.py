"""Public label sets: declared (free), or released by DP partition selection.

A label set read from the private data is itself private: a label held by one
document reveals that document, and the parallel composition over classes needs a
public partition. So a label set (or, for ``dpft``, the values of its control-code
fields) is either *declared* by the curator — public by declaration, no privacy
cost — or *released* here with DP partition selection (thresholded noisy counts;
Korolova et al. 2009, Gopi et al. 2020, and OpenDP's ``make_gaussian_threshold`` /
``make_laplace_threshold``, Rogers et al. 2023):

* every document contributes to ONE value of each field (its label; for dpft also
  one value of each metadata field). Under add/remove-one-document neighbours the
  map of exact counts changes in at most k keys (k = the number of fields), each by
  1: L0 sensitivity k, L1 k, L2 √k, L∞ 1;
* OpenDP adds noise (Gaussian or Laplace, its exact samplers on the 2⁻³⁰ grid, as
  ``mechanisms.release`` does) to the count of every value present and keeps the
  values whose noisy count reaches a threshold τ. τ is the smallest value for which
  OpenDP's own privacy map certifies that the k values of one document are released
  with probability at most ``threshold_delta`` in all;
* the release is recorded in the ledger as ``"label set"`` with the noise's (ε, δ)
  plus ``threshold_delta`` (``Release.threshold_delta``; ``compose`` adds it to δ).

The noisy counts of the released values are released too: they size classes and
drive the curator's warnings, at no further cost. Documents whose value was not
released are in no public class: callers drop them.

Data outside a declared set is an input error whose message would name private
values: ``PrivateValuesError`` keeps them out of ``str(error)`` (what could reach a
terminal, a log or a file); ``dptext inspect`` shows them to the curator who asks.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import opendp.prelude as dp
from scipy import stats

from dptext.corpus import INSPECT, PrivateValuesError
from dptext.privacy.ledger import PrivacyLedger, Release
from dptext.privacy.mechanisms import (
    GRID_EXPONENT,
    NEIGHBOURING,
    NoiseSpec,
    gaussian_noise_multiplier,
)

LABEL_SET = "label set"
LABEL_FIELD = "label"
LABEL_SET_NOTE = (
    "The label set was not declared (--labels): it was released with DP partition "
    "selection (the 'label set' release: noisy label counts, kept above a threshold that a "
    "label of one document passes with probability at most its δ); documents whose label "
    "was not released were left out. Declared labels are public and cost nothing.")


def check_declared(present, declared: Sequence[str], *, what: str = "labels",
                   source: str = "the corpus") -> None:
    """Refuse data outside a declared value set (the values go to ``detail`` only)."""
    unknown = sorted(set(present) - set(declared))
    if unknown:
        raise PrivateValuesError(
            f"{source}: some {what} in the data are not among the declared {what}; declare "
            f"them or fix the data (which ones: `{INSPECT}` with the same input options and "
            "the declared values; it shows your private data to you, this message does not)",
            f"{what} not declared: {unknown}")


def value_set_name(fields: Sequence[str]) -> str:
    """Ledger name of a value-set release: ``"label set"`` for the label alone."""
    return LABEL_SET if tuple(fields) == (LABEL_FIELD,) else \
        f"{LABEL_SET} ({', '.join(fields)})"


@dataclass(frozen=True)
class ReleasedValues:
    """The released values of each field and their noisy counts (all released data)."""

    fields: tuple[str, ...]
    values: dict[str, tuple[str, ...]]
    counts: dict[str, dict[str, float]]
    threshold: float

    def to_dict(self) -> dict:
        return {"fields": list(self.fields), "values": {f: list(v) for f, v in self.values.items()},
                "counts": self.counts, "threshold": self.threshold}

    @classmethod
    def from_dict(cls, d: dict) -> ReleasedValues:
        return cls(tuple(d["fields"]), {f: tuple(v) for f, v in d["values"].items()},
                   {f: {k: float(c) for k, c in v.items()} for f, v in d["counts"].items()},
                   float(d["threshold"]))


def _key(field: str, value: str) -> str:
    return json.dumps([field, value], ensure_ascii=False)


def _d_in(kind: str, k: int) -> tuple:
    # (L0, L1 or L2, L∞) of one document's change to the map of counts
    return (k, float(k) if kind == "laplace" else math.sqrt(k), 1.0)


def _make(kind: str, scale: float, threshold: float):
    domain = dp.map_domain(dp.atom_domain(T=str), dp.atom_domain(T=float, nan=False))
    if kind == "laplace":
        return dp.m.make_laplace_threshold(domain, dp.l01inf_distance(dp.absolute_distance(
            T=float)), scale=scale, threshold=threshold, k=GRID_EXPONENT)
    return dp.m.make_gaussian_threshold(domain, dp.l02inf_distance(dp.absolute_distance(
        T=float)), scale=scale, threshold=threshold, k=GRID_EXPONENT)


@dataclass(frozen=True)
class _Calibrated:
    measurement: object
    scale: float  # Laplace b or Gaussian σ on each count
    multiplier: float  # scale / effective sensitivity
    threshold: float
    epsilon: float  # of the noise (Laplace: OpenDP's map; Gaussian: the analytic profile)
    threshold_delta: float  # OpenDP's map: P(one document's values pass the threshold)


@lru_cache(maxsize=64)
def _threshold_measurement(kind: str, k: int, epsilon: float, delta: float,
                           threshold_delta: float) -> _Calibrated:
    """OpenDP's thresholded noisy counts, calibrated to the spec at k fields per document."""
    d_in = _d_in(kind, k)
    try:
        if kind == "laplace":
            scale = k / epsilon
            for _ in range(4):  # the grid's rounding slack: converges at once
                spent = _make(kind, scale, 1e9).map(d_in)[0]
                if spent <= epsilon:
                    break
                scale *= spent / epsilon * (1 + 1e-12)
            tail = scale * math.log(k / (2 * threshold_delta))
            multiplier, eps = scale / k, spent
        else:
            rho = _make(kind, 1.0, 1e9).map(d_in)[0]  # ρ at σ = 1: Δ_eff² / 2
            l2_eff = math.sqrt(2.0 * rho)
            multiplier = gaussian_noise_multiplier(epsilon, delta)
            scale = multiplier * l2_eff
            tail = scale * float(stats.norm.isf(threshold_delta / k))
            eps = epsilon
        threshold = 1.0 + max(tail, 0.0)
        for _ in range(200):
            meas = _make(kind, scale, threshold)
            spent_delta = meas.map(d_in)[1]
            if spent_delta <= threshold_delta:
                return _Calibrated(meas, scale, multiplier, threshold, eps, spent_delta)
            threshold += 0.01 * scale
    except (dp.OpenDPException, ValueError, ArithmeticError) as e:
        raise ValueError(f"cannot calibrate the DP label set for ε={epsilon!r}, δ={delta!r}, "
                         f"threshold δ={threshold_delta!r} ({str(e).strip()})") from None
    raise RuntimeError("could not calibrate the label-set threshold")  # pragma: no cover


def release_value_sets(columns: dict[str, Sequence[str]], noise: NoiseSpec, *,
                       ledger: PrivacyLedger, name: str | None = None,
                       what: str | None = None) -> ReleasedValues:
    """Release the values of each field in ``columns`` (one value per document and field)
    by DP partition selection, and record it in ``ledger`` (see the module docstring).
    ``what``: a document's value in the ledger's reason (default: its label, or its value
    of each field)."""
    fields = tuple(columns)
    if not fields:
        raise ValueError("no field to release")
    lengths = {len(v) for v in columns.values()}
    if len(lengths) != 1:
        raise ValueError("every field needs one value per document")
    k = len(fields)
    exact = {_key(f, str(v)): c for f in fields for v, c in Counter(columns[f]).items()}
    what = what or ("label" if fields == (LABEL_FIELD,) else f"value of each of {k} fields")
    noisy, threshold = release_keys(exact, k, noise, ledger=ledger,
                                    name=name or value_set_name(fields), what=what)
    values: dict[str, list[str]] = {f: [] for f in fields}
    counts: dict[str, dict[str, float]] = {f: {} for f in fields}
    for key, count in noisy.items():
        f, v = json.loads(key)
        values[f].append(v)
        counts[f][v] = count
    return ReleasedValues(fields, {f: tuple(sorted(v)) for f, v in values.items()},
                          {f: dict(sorted(c.items())) for f, c in counts.items()}, threshold)


def release_keys(exact: dict[str, int], k: int, noise: NoiseSpec, *, ledger: PrivacyLedger,
                 name: str, what: str) -> tuple[dict[str, float], float]:
    """DP partition selection over a map of exact counts to which each document adds 1 to
    at most ``k`` keys: the released keys' noisy counts, and the threshold τ (the release
    recorded in ``ledger`` as ``name``; ``what``: a document's keys, for its reason)."""
    if not noise.threshold_delta > 0:
        raise ValueError("a DP label set needs a threshold_delta > 0 (see split_budget)")
    cal = _threshold_measurement(noise.kind, k, noise.epsilon, noise.delta,
                                 noise.threshold_delta)
    noisy = cal.measurement({key: float(c) for key, c in exact.items()}) if exact else {}
    reason = (f"each document adds 1 to the count of its own {what} (L1 {k}, L2 √{k}, at most "
              f"{k} values); a value is released when its noisy count reaches "
              f"τ = {cal.threshold:.4g}, which values held by one document do with "
              f"probability ≤ {cal.threshold_delta:.2g}")
    ledger.record(Release(
        name=name, mechanism=noise.kind, neighbouring=NEIGHBOURING,
        sensitivity_norm="L1" if noise.kind == "laplace" else "L2",
        sensitivity=float(k) if noise.kind == "laplace" else math.sqrt(k),
        sensitivity_reason=reason, noise_scale=cal.scale, noise_multiplier=cal.multiplier,
        dimension=len(noisy), epsilon=cal.epsilon,
        delta=(noise.delta if noise.kind == "gaussian" else 0.0) + cal.threshold_delta,
        threshold_delta=cal.threshold_delta))
    return {key: float(c) for key, c in noisy.items()}, cal.threshold


def release_label_set(labels: Sequence[str], noise: NoiseSpec, *, ledger: PrivacyLedger
                      ) -> ReleasedValues:
    """The DP label set of a labelled corpus (one label per document)."""
    return release_value_sets({LABEL_FIELD: labels}, noise, ledger=ledger)


def planned_value_set(noise: NoiseSpec, fields: Sequence[str] = (LABEL_FIELD,)) -> Release:
    """The ledger record a value-set release with ``noise`` will make (for budget checks
    before the data is touched; its (ε, δ) bound the actual release's)."""
    k = len(fields)
    mult = gaussian_noise_multiplier(noise.epsilon, noise.delta) \
        if noise.kind == "gaussian" else 1.0
    return Release(name=value_set_name(fields), mechanism=noise.kind, neighbouring="planned",
                   sensitivity_norm="L1" if noise.kind == "laplace" else "L2",
                   sensitivity=float(k) if noise.kind == "laplace" else math.sqrt(k),
                   sensitivity_reason="planned", noise_scale=mult, noise_multiplier=mult,
                   dimension=1, epsilon=noise.epsilon, delta=noise.total_delta,
                   threshold_delta=noise.threshold_delta)


def standalone_spec(kind: str, epsilon: float, delta: float) -> NoiseSpec:
    """A label-set spec that spends (ε, δ) on its own: δ split evenly between the
    Gaussian noise and the threshold (all of δ to the threshold for Laplace)."""
    from dptext.privacy.split import threshold_deltas

    thr, rest = threshold_deltas(delta, [LABEL_SET], kind == "gaussian")
    return NoiseSpec(kind, epsilon, rest if kind == "gaussian" else 0.0, threshold_delta=thr)
