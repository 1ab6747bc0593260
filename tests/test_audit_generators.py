"""Audits of what runs: every generator's releases with their default noise kinds and splits.

Each row must stay within its claim when honest, show some power (a positive lower
bound), and catch its negative controls: ``half-noise`` (every noise scale halved while
the ledger records the claimed ε) and ``unbounded`` (one document counted twice, or
DP-SGD without clipping). The catch rates over repeated runs are in docs/reliability.md
(``benchmarks/audit_power.py``).
"""

from __future__ import annotations

import pytest

from dptext.audits.augpe import audit_augpe
from dptext.audits.dpsgd import audit_dpsgd
from dptext.audits.kps import audit_dpkps_defaults, audit_vocabulary
from dptext.audits.pate import audit_pate, audit_pate_tutor

pytestmark = pytest.mark.statistical


def _honest(row, floor: float):
    assert not row.violation, row
    assert floor < row.epsilon_lower_bound <= row.claimed_epsilon, row  # the audit has power


@pytest.mark.parametrize("broken", ["half-noise", "unbounded"])
def test_gaussian_vocabulary_release(broken):
    claimed = None
    if broken == "half-noise":
        honest = audit_vocabulary("gaussian", delta=1e-2, runs=2000)
        _honest(honest, 0.3)
        claimed = honest.claimed_epsilon
    row = audit_vocabulary("gaussian", delta=1e-2, runs=2000, broken=broken)
    assert row.violation, row
    assert claimed is None or row.claimed_epsilon == pytest.approx(claimed)  # ledger fooled


@pytest.mark.parametrize(("method", "broken"), [("independent", "half-noise"),
                                                ("iterative", "unbounded")])
def test_dpkps_defaults_end_to_end(method, broken):
    honest = audit_dpkps_defaults(method, runs=1500)
    assert honest.claimed_epsilon == pytest.approx(2.0, rel=1e-3)  # the split meets ε
    _honest(honest, 0.3)
    assert audit_dpkps_defaults(method, runs=1500, broken=broken).violation


def test_augpe_votes_composed_over_iterations():
    honest = audit_augpe(runs=8)
    assert honest.claimed_epsilon == pytest.approx(2.0, rel=1e-3)
    _honest(honest, 0.3)
    assert audit_augpe(runs=8, broken="half-noise").violation
    assert audit_augpe(runs=8, broken="unbounded").violation  # a document voting twice


def test_pate_tutor_and_votes():
    _honest(audit_pate(runs=3000), 0.3)
    assert audit_pate(runs=3000, broken="half-noise").violation
    assert audit_pate(runs=3000, broken="unbounded").violation  # trains two teachers
    tutor = audit_pate_tutor(runs=3000)
    assert not tutor.violation
    assert audit_pate_tutor(runs=3000, broken="half-noise").violation


def test_dpsgd_single_step():
    honest = audit_dpsgd(runs=2000)
    assert honest.claimed_epsilon == pytest.approx(2.0, rel=1e-2)
    _honest(honest, 0.3)
    assert audit_dpsgd(runs=2000, broken="half-noise").violation
    assert audit_dpsgd(runs=2000, broken="unbounded").violation  # clipping off


def test_dpsgd_through_dpft_training_loop():
    """dpft's ``train`` (Poisson sampling, empty batches, secure noise): honest within its
    claim, clipping off caught. Half the noise needs ~800 trainings a side to refute: the
    power run (benchmarks/audit_power.py --only dpft-training); CI's ``dpsgd`` row catches
    half the noise handed to Opacus."""
    from dptext.audits.dpft_loop import audit_dpft_training

    honest = audit_dpft_training(runs=50)
    assert honest.claimed_epsilon == pytest.approx(0.5, rel=1e-2) and not honest.violation
    assert honest.epsilon_lower_bound <= honest.claimed_epsilon
    assert audit_dpft_training(runs=50, broken="unbounded").violation  # clipping off


def test_memoised_calibration_changes_no_noise_and_is_undone():
    from dptext.audits.common import memoised_calibration
    from dptext.generators.kps import KeyphraseSeeder, budget

    seeder = KeyphraseSeeder(epsilon=2.0, delta=1e-2)
    honest, split = seeder.noise_specs(), budget.split_budget
    multiplier = budget.gaussian_noise_multiplier(1.0, 1e-5)
    with memoised_calibration():
        assert budget.split_budget is not split
        assert seeder.noise_specs() == honest == seeder.noise_specs()
        assert budget.gaussian_noise_multiplier(1.0, 1e-5) == multiplier
    assert budget.split_budget is split


