"""Mechanisms, ledger and composition; statistical tests of the noise calibration.

Statistical tests: a mechanism claiming ε at sensitivity Δ must not let an auditor
prove ε' > ε from outputs on neighbouring inputs, and the same audit must catch a
deliberately under-noised variant (half the noise). The worst neighbouring pair
for an L1 (or L2) bound puts the whole shift Δ on one coordinate. Every coordinate
of one wide release is an independent draw of the same one-coordinate mechanism
(the scale depends only on Δ and ε), so a release of 40,000 coordinates gives
20,000 samples under each neighbour in a single call.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

from dptext.privacy import (
    BudgetExceededError,
    NoiseSpec,
    PrivacyLedger,
    Release,
    Sensitivity,
    compose,
    gaussian_noise_multiplier,
    mechanisms,
    release,
)
from dptext.privacy import ledger as ledger_module
from dptext.privacy.auditing import epsilon_lower_bound
from dptext.privacy.ledger import PLD_INTERVAL, pld_interval

N = 20_000


def _samples(noise: NoiseSpec, sens: Sensitivity, shift: float) -> tuple[np.ndarray, np.ndarray]:
    values = np.concatenate([np.zeros(N), np.full(N, shift)])
    out = release(values, sens, noise, ledger=PrivacyLedger(), name="audit")
    return out[:N], out[N:]


def _half_noise_laplace(monkeypatch):
    honest = mechanisms._laplace

    def half(size, l1, epsilon):
        meas, scale, _ = honest(size, l1, 2 * epsilon)  # noise for 2ε ...
        return meas, 2 * scale, epsilon  # ... recorded as if it were ε

    monkeypatch.setattr(mechanisms, "_laplace", half)


def _half_noise_gaussian(monkeypatch):
    honest = mechanisms._gaussian

    def half(size, l2, epsilon, delta):
        meas, scale, l2_eff = honest(size, l2 / 2, epsilon, delta)  # half the σ ...
        return meas, 2 * scale, l2_eff * 2  # ... recorded as the full one

    monkeypatch.setattr(mechanisms, "_gaussian", half)


@pytest.mark.statistical
@pytest.mark.parametrize("epsilon", [0.5, 1.0, 2.0])
def test_laplace_privacy_loss_within_claim(epsilon):
    sens = Sensitivity(l1=3.0, l2=3.0, reason="test")
    a, b = _samples(NoiseSpec("laplace", epsilon), sens, shift=3.0)
    audit = epsilon_lower_bound(a, b)
    assert audit.epsilon_lower_bound <= epsilon
    assert audit.epsilon_lower_bound > 0.5 * epsilon  # the audit has power: it sees most of ε


@pytest.mark.statistical
def test_laplace_audit_catches_half_noise(monkeypatch):
    _half_noise_laplace(monkeypatch)
    epsilon = 1.0
    ledger = PrivacyLedger()
    values = np.concatenate([np.zeros(N), np.full(N, 3.0)])
    out = release(values, Sensitivity(3.0, 3.0, "test"), NoiseSpec("laplace", epsilon),
                  ledger=ledger, name="broken")
    assert ledger.guarantee().epsilon == pytest.approx(epsilon)  # the ledger is fooled ...
    assert epsilon_lower_bound(out[:N], out[N:]).epsilon_lower_bound > epsilon  # ... the audit not


@pytest.mark.statistical
def test_gaussian_privacy_loss_within_claim():
    # (ε, δ) = (4, 1e-3): a regime where 20k samples can see the privacy profile
    epsilon, delta = 4.0, 1e-3
    a, b = _samples(NoiseSpec("gaussian", epsilon, delta), Sensitivity(2.0, 2.0, "t"), 2.0)
    audit = epsilon_lower_bound(a, b, delta=delta)
    assert audit.epsilon_lower_bound <= epsilon
    assert audit.epsilon_lower_bound > 1.0


@pytest.mark.statistical
def test_gaussian_audit_catches_half_noise(monkeypatch):
    _half_noise_gaussian(monkeypatch)
    epsilon, delta = 4.0, 1e-3
    a, b = _samples(NoiseSpec("gaussian", epsilon, delta), Sensitivity(2.0, 2.0, "t"), 2.0)
    assert epsilon_lower_bound(a, b, delta=delta).epsilon_lower_bound > epsilon


def test_laplace_scale_matches_sensitivity_over_epsilon():
    ledger = PrivacyLedger()
    release(np.zeros(100), Sensitivity(10.0, math.sqrt(10), "S=10"), NoiseSpec("laplace", 2.0),
            ledger=ledger, name="h")
    (r,) = ledger.releases
    assert r.noise_scale == pytest.approx(5.0, rel=1e-6)
    assert r.noise_scale >= 5.0  # rounding slack only ever adds noise
    assert r.epsilon <= 2.0
    assert r.neighbouring == "add/remove one document"


def test_gaussian_scale_is_analytic_gaussian():
    ledger = PrivacyLedger()
    release(np.zeros(10), Sensitivity(1.0, 3.0, "t"), NoiseSpec("gaussian", 1.0, 1e-5),
            ledger=ledger, name="g")
    (r,) = ledger.releases
    assert r.noise_scale == pytest.approx(3.0 * gaussian_noise_multiplier(1.0, 1e-5), rel=1e-6)
    # the classical bound σ = Δ·√(2 ln(1.25/δ))/ε is looser than the analytic one
    assert r.noise_scale < 3.0 * math.sqrt(2 * math.log(1.25 / 1e-5))


def test_noise_is_not_numpy_and_varies():
    ledger = PrivacyLedger()
    x = release(np.zeros(1000), Sensitivity(1, 1, "t"), NoiseSpec("laplace", 1.0), ledger=ledger,
                name="a")
    y = release(np.zeros(1000), Sensitivity(1, 1, "t"), NoiseSpec("laplace", 1.0), ledger=ledger,
                name="b")
    assert not np.allclose(x, y)
    assert np.std(x) == pytest.approx(math.sqrt(2), rel=0.15)


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_epsilon_rejected(bad):
    with pytest.raises(ValueError, match="epsilon"):
        NoiseSpec("laplace", bad)


def test_bad_delta_and_kind_rejected():
    with pytest.raises(ValueError, match="delta"):
        NoiseSpec("gaussian", 1.0, 0.0)
    with pytest.raises(ValueError, match="delta"):
        NoiseSpec("laplace", 1.0, 1e-5)
    with pytest.raises(ValueError, match="noise"):
        NoiseSpec("uniform", 1.0)


def test_release_refuses_non_finite_statistic():
    with pytest.raises(ValueError, match="NaN"):
        release(np.array([1.0, np.nan]), Sensitivity(1, 1, "t"), NoiseSpec("laplace", 1.0),
                ledger=PrivacyLedger(), name="x")


def _r(eps, delta=0.0, mech="laplace", mult=1.0, part=None, group=None):
    return Release(name="r", mechanism=mech, neighbouring="add/remove one document",
                   sensitivity_norm="L1", sensitivity=1.0, sensitivity_reason="", noise_scale=1.0,
                   noise_multiplier=mult, dimension=1, epsilon=eps, delta=delta, partition=part,
                   parallel_group=group)


def test_composition_basic_and_parallel():
    g = compose([_r(1.0), _r(2.0)])
    assert (g.epsilon, g.delta) == (3.0, 0.0)
    parallel = [_r(5.0, part=f"class={c}", group="kde") for c in "abc"]
    assert compose([_r(1.0), *parallel]).epsilon == pytest.approx(6.0)
    # two releases on the same partition compose; the worst partition counts
    uneven = [_r(2.0, part="a", group="kde"), _r(2.0, part="a", group="kde"),
              _r(3.0, part="b", group="kde")]
    assert compose(uneven).epsilon == pytest.approx(4.0)


def test_gaussian_composition_uses_pld_and_is_never_worse_than_basic():
    mult = gaussian_noise_multiplier(1.0, 1e-6)
    gs = [_r(1.0, 1e-6, "gaussian", mult) for _ in range(10)]
    g = compose(gs)
    assert g.delta == pytest.approx(1e-5)
    assert g.epsilon < 10.0  # PLD beats basic composition for many Gaussians
    assert g.epsilon > 1.0
    mixed = compose([*gs, _r(1.0)])
    assert mixed.epsilon == pytest.approx(g.epsilon + 1.0)


def test_the_cached_pld_composition_is_the_accountants_own():
    """pld_epsilon keeps one result per (events, δ, grid): the same ε, to the bit, as a
    fresh accountant; a different list of events is composed anew."""
    mult = gaussian_noise_multiplier(1.0, 1e-6)
    events = [_r(1.0, 1e-6, "gaussian", mult).dp_event() for _ in range(3)]
    fresh = ledger_module._pld_epsilon.__wrapped__(tuple(events), 1e-5, 3.0)
    assert ledger_module.pld_epsilon(events, 1e-5, 3.0) == fresh
    assert ledger_module.pld_epsilon(list(events), 1e-5, 3.0) == fresh  # served again
    assert ledger_module.pld_epsilon(events[:2], 1e-5, 2.0) < fresh


def test_a_near_non_private_gaussian_composes_on_a_coarser_grid_and_stays_an_upper_bound():
    """A corpus ledger holding an ε ≈ 900 Gaussian (an ε → ∞ benchmark run): on the default
    grid its PLD has ~10⁷ points (minutes per composition, for every later run)."""
    assert pld_interval(6.0) == PLD_INTERVAL < pld_interval(906.0)
    s1, s2 = gaussian_noise_multiplier(900.0, 1e-5), gaussian_noise_multiplier(6.0, 1e-5)
    g = compose([_r(900.0, 1e-5, "gaussian", s1), _r(6.0, 1e-5, "gaussian", s2)])
    # two Gaussians compose exactly into one Gaussian with 1/σ² = 1/σ₁² + 1/σ₂²
    joint = (s1 ** -2 + s2 ** -2) ** -0.5
    exact = brentq(lambda e: gaussian_noise_multiplier(e, 2e-5) - joint, 1.0, 1e4)
    assert exact <= g.epsilon <= 1.002 * exact
    assert g.epsilon < 906.0


def test_ledger_cap_refuses_release():
    ledger = PrivacyLedger(epsilon_cap=1.5)
    release(np.zeros(3), Sensitivity(1, 1, "t"), NoiseSpec("laplace", 1.0), ledger=ledger,
            name="first")
    with pytest.raises(BudgetExceededError, match="over its budget"):
        release(np.zeros(3), Sensitivity(1, 1, "t"), NoiseSpec("laplace", 1.0), ledger=ledger,
                name="second")
    assert len(ledger.releases) == 1


def test_ledger_round_trip(tmp_path):
    ledger = PrivacyLedger()
    release(np.zeros(3), Sensitivity(1, 1, "t"), NoiseSpec("gaussian", 1.0, 1e-6), ledger=ledger,
            name="g")
    ledger.save(tmp_path / "p.json")
    again = PrivacyLedger.load(tmp_path / "p.json")
    assert again.releases == ledger.releases
    assert again.guarantee() == ledger.guarantee()


def test_audit_detects_nothing_between_identical_distributions():
    rng = np.random.default_rng(1)
    res = epsilon_lower_bound(rng.normal(size=5000), rng.normal(size=5000))
    assert res.epsilon_lower_bound < 0.2


@pytest.mark.parametrize("epsilon,share", [(6.0, 0.2), (6.0, 0.5), (6.0, 0.8), (1000.0, 0.3)])
def test_split_budget_gaussian_composes_to_the_total(epsilon, share):
    """The ledger composes the split to the whole budget and not more, also at ε = 1,000
    (an ε → ∞ sanity run), where the PLD accountant puts a Gaussian ~0.1 % above its
    analytic ε: a fixed margin on μ left such runs stopped by their own budget check."""
    from dptext.privacy.split import split_budget

    specs = split_budget(epsilon, 1e-5, {"a": share, "b": 1 - share},
                         {"a": "gaussian", "b": "gaussian"})
    ledger = PrivacyLedger()
    for name, spec in specs.items():
        release(np.zeros(4), Sensitivity(1, 1, "t"), spec, ledger=ledger, name=name)
    g = ledger.guarantee()
    assert g.delta == pytest.approx(1e-5)
    assert 0.997 * epsilon < g.epsilon <= epsilon  # the whole budget, not more
    assert sum(s.epsilon for s in specs.values()) > epsilon  # per-stage ε may exceed it


def test_split_budget_laplace_and_mixed():
    from dptext.privacy.split import split_budget

    lap = split_budget(6.0, 0.0, {"a": 0.25, "b": 0.75}, {"a": "laplace", "b": "laplace"})
    assert (lap["a"].epsilon, lap["b"].epsilon) == (1.5, 4.5)
    mixed = split_budget(6.0, 1e-5, {"a": 0.25, "b": 0.75}, {"a": "laplace", "b": "gaussian"})
    ledger = PrivacyLedger()
    for name, spec in mixed.items():
        release(np.zeros(4), Sensitivity(1, 1, "t"), spec, ledger=ledger, name=name)
    assert ledger.guarantee().epsilon <= 6.0 + 1e-9
    with pytest.raises(ValueError, match="sum to 1"):
        split_budget(6.0, 1e-5, {"a": 0.5, "b": 0.6}, {"a": "laplace", "b": "laplace"})


# ------------------------------------------------------------------ the DP label set
def test_label_set_keeps_frequent_labels_and_drops_labels_of_one_document():
    from dptext.privacy.labels import release_label_set, standalone_spec

    spec = standalone_spec("gaussian", 1.0, 1e-5)
    assert spec.threshold_delta == pytest.approx(5e-6) and spec.delta == pytest.approx(5e-6)
    labels = ["big"] * 500 + ["mid"] * 200 + ["one"]
    seen_one = 0
    for _ in range(300):
        ledger = PrivacyLedger()
        out = release_label_set(labels, spec, ledger=ledger)
        assert {"big", "mid"} <= set(out.values["label"])
        seen_one += "one" in out.values["label"]
    assert seen_one == 0  # released with probability ≤ 5e-6 per run
    (r,) = ledger.releases
    assert r.name == "label set" and r.mechanism == "gaussian" and r.sensitivity == 1.0
    assert 0 < r.threshold_delta <= 5e-6 and r.delta == pytest.approx(5e-6 + r.threshold_delta)
    assert r.dimension == len(out.values["label"])  # released labels, not the data's
    assert "τ =" in r.sensitivity_reason and out.threshold > 1
    assert abs(out.counts["label"]["big"] - 500) < 6 * r.noise_scale  # noisy, near
    g = ledger.guarantee()
    assert g.epsilon == pytest.approx(1.0, rel=1e-3) and g.delta == pytest.approx(r.delta)
    assert "threshold" in g.method


def test_label_set_threshold_is_certified_by_opendp():
    """A label of one document passes with about the threshold δ (not more)."""
    from dptext.privacy.labels import _threshold_measurement

    for kind, delta in (("gaussian", 1e-3), ("laplace", 0.0)):
        cal = _threshold_measurement(kind, 1, 2.0, delta, 0.05)
        assert cal.threshold_delta <= 0.05
        hits = sum(bool(cal.measurement({"x": 1.0})) for _ in range(4000))
        assert hits / 4000 < 0.05 + 0.02  # ~ the certified δ
        assert hits / 4000 > 0.02  # and the threshold is not wildly conservative


def test_label_set_composes_with_other_releases_and_splits_the_budget():
    from dptext.privacy.labels import (
        LABEL_SET,
        planned_value_set,
        release_label_set,
        release_value_sets,
    )
    from dptext.privacy.split import split_budget

    shares = {LABEL_SET: 0.1, "vocab": 0.4, "kde": 0.5}
    specs = split_budget(6.0, 1e-5, shares, dict.fromkeys(shares, "gaussian"),
                         thresholds=[LABEL_SET])
    assert specs[LABEL_SET].threshold_delta == pytest.approx(5e-6)
    assert sum(s.total_delta for s in specs.values()) == pytest.approx(1e-5)
    ledger = PrivacyLedger()
    release_label_set(["a"] * 300 + ["b"] * 200, specs[LABEL_SET], ledger=ledger)
    for stage in ("vocab", "kde"):
        release(np.zeros(5), Sensitivity(1, 1, "t"), specs[stage], ledger=ledger, name=stage)
    g = ledger.guarantee()
    assert g.epsilon == pytest.approx(6.0, rel=2e-3) and g.epsilon <= 6.0
    assert g.delta <= 1e-5 * (1 + 1e-9)
    planned = [planned_value_set(specs[LABEL_SET]), *ledger.releases[1:]]
    assert compose(planned).epsilon >= g.epsilon - 1e-9  # the plan bounds the release
    # laplace label set: pure ε plus its threshold δ
    lap = PrivacyLedger()
    release_label_set(["a"] * 300, NoiseSpec("laplace", 1.0, threshold_delta=1e-6),
                      ledger=lap)
    assert lap.guarantee().epsilon == pytest.approx(1.0) and 0 < lap.guarantee().delta <= 1e-6
    # several fields (dpft's codes): one document, one value per field: L2 √k
    multi = PrivacyLedger()
    out = release_value_sets({"label": ["a"] * 300 + ["b"] * 300, "sex": ["F", "M"] * 300},
                             NoiseSpec("gaussian", 2.0, 1e-6, threshold_delta=1e-6),
                             ledger=multi)
    assert out.values == {"label": ("a", "b"), "sex": ("F", "M")}
    assert multi.releases[0].sensitivity == pytest.approx(math.sqrt(2))
    assert multi.releases[0].name == "label set (label, sex)"


def test_threshold_specs_are_refused_by_plain_releases():
    with pytest.raises(ValueError, match="partition selection"):
        release(np.zeros(2), Sensitivity(1, 1, "t"),
                NoiseSpec("gaussian", 1.0, 1e-6, threshold_delta=1e-6),
                ledger=PrivacyLedger(), name="x")
    with pytest.raises(ValueError, match="threshold_delta"):
        NoiseSpec("laplace", 1.0, threshold_delta=1.5)
    from dptext.privacy.labels import release_label_set

    with pytest.raises(ValueError, match="threshold_delta"):
        release_label_set(["a"], NoiseSpec("laplace", 1.0), ledger=PrivacyLedger())
