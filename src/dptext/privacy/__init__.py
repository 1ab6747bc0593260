"""Privacy: mechanisms (the only source of DP noise), the release ledger, composition, audits."""

from dptext.privacy.ledger import BudgetExceededError, Guarantee, PrivacyLedger, Release, compose
from dptext.privacy.mechanisms import (
    NEIGHBOURING,
    NOISE_KINDS,
    NoiseSpec,
    Sensitivity,
    gaussian_noise_multiplier,
    release,
)

__all__ = [
    "NEIGHBOURING",
    "NOISE_KINDS",
    "BudgetExceededError",
    "Guarantee",
    "NoiseSpec",
    "PrivacyLedger",
    "Release",
    "Sensitivity",
    "compose",
    "gaussian_noise_multiplier",
    "release",
]
