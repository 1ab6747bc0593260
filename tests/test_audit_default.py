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
