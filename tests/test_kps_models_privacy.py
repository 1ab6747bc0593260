"""Statistical tests of the default keyphrase model's releases on neighbouring inputs:
the class × term histogram, the private model selection and the private choice of S
(``dptext.audits.models``, rows ``histogram``, ``selection`` and ``terms-per-doc`` of
``dptext audit``).

The honest mechanism must stay within its claim and show power; each broken variant —
half the noise with the claim unchanged, one document counted in every class row, a
selection that counts a document twice — must be caught by the same audit.
"""

from __future__ import annotations

import pytest

from dptext.audits.models import S, audit_histogram, audit_selection, audit_terms_per_doc

pytestmark = pytest.mark.statistical


def test_histogram_release_within_claim():
    row = audit_histogram()
    assert not row.violation, row
    assert 0.5 < row.epsilon_lower_bound <= row.claimed_epsilon, row  # the audit has power
    assert S == 3  # one document: S cells of one row, L2 √S


@pytest.mark.parametrize("broken", ["half-noise", "unbounded"])
def test_histogram_audit_catches_its_broken_variants(broken):
    row = audit_histogram(broken=broken)
    assert row.violation and row.epsilon_lower_bound > row.claimed_epsilon, row


def test_selection_within_claim():
    row = audit_selection()
    assert not row.violation, row
    assert 0.4 * row.claimed_epsilon < row.epsilon_lower_bound <= row.claimed_epsilon, row


@pytest.mark.parametrize("broken", ["half-noise", "unbounded"])
def test_selection_audit_catches_its_broken_variants(broken):
    row = audit_selection(broken=broken)
    assert row.violation, row


def test_terms_per_doc_choice_within_claim():
    row = audit_terms_per_doc()
    assert not row.violation, row
    assert 0.6 * row.claimed_epsilon < row.epsilon_lower_bound <= row.claimed_epsilon, row


@pytest.mark.parametrize("broken", ["half-noise", "unbounded"])
def test_terms_per_doc_audit_catches_its_broken_variants(broken):
    row = audit_terms_per_doc(broken=broken)
    assert row.violation, row
