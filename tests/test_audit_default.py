"""The audits of the CLI's default runs: DP-KPS (``dptext audit --only dpkps-default``),
and Aug-PE and PATE without ``--labels`` (``augpe-default``, ``pate-default``): each run
composes the DP label set with the generator's releases into the ledger's claim.

CI checks each row's likelihood ratios against the law its ledger predicts: for one
document and honest noise the ratio is N(c, m) on D and N(c + m, m) on D', m = Σ‖Δ‖²/σ²
(``RatioSamples.moments``). A hundred or two samples a side tell half the noise (variance
m/4) or a document counted twice (mean shift 2m) from honest noise, where the DP test
that refutes those controls needs ~1,000 fits a side; the DP test runs once here, small,
on the honest run, and at full size in ``benchmarks/audit_power.py``
(docs/reliability.md)."""

from __future__ import annotations

import pytest

from dptext.audits.augpe_default import audit_augpe_default, augpe_default_ratios
from dptext.audits.kps_default import audit_dpkps_default, dpkps_default_ratios
from dptext.audits.pate_default import audit_pate_default, pate_default_ratios
from dptext.privacy.labels import LABEL_SET

ROWS = {  # row: (DP test, ratios, runs a side, the run's ε)
    "dpkps": (audit_dpkps_default, dpkps_default_ratios, 200, 1.0),
    "augpe": (audit_augpe_default, augpe_default_ratios, 1, 3.0),  # 100 classes a fit
    "pate": (audit_pate_default, pate_default_ratios, 100, 3.0),
}


def _honest_law(samples) -> bool:
    variance, shift = samples.moments()
    return 0.5 < variance < 1.6 and 0.6 < shift < 1.5


@pytest.mark.statistical
@pytest.mark.parametrize("row", list(ROWS))
def test_default_run_within_its_composed_claim_and_broken_runs_caught(row):
    audit, ratios, runs, epsilon = ROWS[row]
    honest = audit(runs=runs)
    # the run's ledger composes the label set with the generator's releases to its ε
    # (DP-KPS: one class, so its model selection makes no release and its share is unspent)
    assert 0.9 * epsilon < honest.claimed_epsilon <= epsilon and not honest.violation
    assert honest.epsilon_lower_bound <= honest.claimed_epsilon
    samples = ratios(runs=runs)
    assert any(r.name == LABEL_SET for r in samples.ledger.releases)
    assert _honest_law(samples), samples.moments()
    for variant in ("half-noise", "unbounded"):
        broken = ratios(runs=runs, broken=variant)
        # the ledger is fooled ...
        assert broken.ledger.guarantee().epsilon == pytest.approx(honest.claimed_epsilon)
        assert not _honest_law(broken), (variant, broken.moments())  # ... the check is not
