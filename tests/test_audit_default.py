"""The audit of DP-KPS as the CLI runs it by default (``dptext audit --only dpkps-default``):
the composed run stays within the ε its ledger claims, and a run with half the noise or an
unbounded document is refuted. This is CI's guard on the default path end to end; the
full audit table is ``benchmarks/audit_power.py`` (docs/reliability.md)."""

from __future__ import annotations

import pytest

from dptext.audits.kps_default import audit_dpkps_default


@pytest.mark.statistical
def test_default_dpkps_run_within_its_composed_claim_and_broken_runs_caught():
    honest = audit_dpkps_default()
    # the ledger composes the label set, S's choice and the histogram to the run's ε
    # (one class: no selection is made, so its share is not spent)
    assert 0.9 < honest.claimed_epsilon <= 1.0 and not honest.violation
    assert honest.epsilon_lower_bound <= honest.claimed_epsilon
    for variant in ("half-noise", "unbounded"):
        broken = audit_dpkps_default(broken=variant)
        assert broken.claimed_epsilon == pytest.approx(honest.claimed_epsilon)  # fooled ...
        assert broken.violation, variant  # ... the audit is not


# ------------------------------------------------ Aug-PE and PATE as the CLI runs them
# CI checks each row's likelihood ratios against the law the ledger predicts (variance and
# mean shift Σ‖Δ‖²/σ²: ~100 samples tell half the noise or a document counted twice from
# honest noise); the DP test that refutes those controls needs ~1,000 samples a side and
# runs in benchmarks/audit_power.py (docs/reliability.md).
def _honest_law(samples) -> bool:
    variance, shift = samples.moments()
    return 0.5 < variance < 1.6 and 0.6 < shift < 1.5


@pytest.mark.statistical
@pytest.mark.parametrize("row", ["augpe", "pate"])
def test_cli_run_without_labels_within_its_claim_and_broken_runs_caught(row):
    from dptext.audits.augpe_default import audit_augpe_default, augpe_default_ratios
    from dptext.audits.pate_default import audit_pate_default, pate_default_ratios
    from dptext.privacy.labels import LABEL_SET

    audit, ratios, runs = {"augpe": (audit_augpe_default, augpe_default_ratios, 1),
                           "pate": (audit_pate_default, pate_default_ratios, 100)}[row]
    honest = audit(runs=runs)
    # the run's ledger composes the label set with the generator's releases to its ε
    assert 2.9 < honest.claimed_epsilon <= 3.0 and not honest.violation
    samples = ratios(runs=runs)
    assert any(r.name == LABEL_SET for r in samples.ledger.releases)
    assert _honest_law(samples), samples.moments()
    for variant in ("half-noise", "unbounded"):
        broken = ratios(runs=runs, broken=variant)
        assert broken.ledger.guarantee().epsilon == pytest.approx(honest.claimed_epsilon)
        assert not _honest_law(broken), (variant, broken.moments())
