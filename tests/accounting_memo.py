"""One privacy-loss distribution per Gaussian mechanism for the whole test session.

Every ledger composition and every budget split asks dp-accounting's PLD accountant for
the distribution of each Gaussian release, built anew from the same few (σ, sensitivity,
grid) from test to test: one ``dptext keyphrases`` run asks 17 times while it plans its
split, ~4 s of CPU, 0.3 s once they are built. The distribution is a pure function of its arguments
and the accountant only composes it into new objects, so the session keeps each one it
built (keyed by every argument) and hands it out again: each ε is the same to the bit,
only computed once. Imported by the conftest of each suite (tests/, benchmarks/tests/).
"""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True, scope="session")
def _one_pld_per_gaussian():
    from dp_accounting.pld import privacy_loss_distribution as pld

    build = pld.from_gaussian_mechanism
    built: dict = {}

    def from_gaussian_mechanism(*args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        if key not in built:
            built[key] = build(*args, **kwargs)
        return built[key]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pld, "from_gaussian_mechanism", from_gaussian_mechanism)
        yield
