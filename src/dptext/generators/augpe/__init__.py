"""Aug-PE, the private-evolution baseline: ``run_augpe`` with an ``AugPEConfig``.

See ``evolution.py`` for the algorithm, ``privacy.py`` for its privacy analysis and
docs/augpe.md for the options and the prompt budget.
"""

from dptext.generators.augpe.evolution import (
    CLASS_NAMES_NOTE,
    LLM_NOTE,
    AugPEConfig,
    AugPEResult,
    run_augpe,
)
from dptext.generators.augpe.privacy import (
    VOTE_SENSITIVITY,
    nearest_votes,
    plan_noise,
    planned_releases,
    release_votes,
)
from dptext.generators.augpe.state import RunState

__all__ = [
    "CLASS_NAMES_NOTE", "LLM_NOTE", "VOTE_SENSITIVITY", "AugPEConfig", "AugPEResult",
    "RunState", "nearest_votes", "plan_noise", "planned_releases", "release_votes",
    "run_augpe",
]
