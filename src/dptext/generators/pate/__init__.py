"""``pate``: PATE-style DP data augmentation (public LLM generator, teachers on disjoint
shards, a student trained on GNMax votes, and a DP label-distribution tutor).

See docs/pate.md for the algorithm and its privacy analysis; ``run_pate`` runs it.
"""

from dptext.generators.pate.run import BudgetHooks, PateConfig, run_dir_for, run_pate

__all__ = ["BudgetHooks", "PateConfig", "run_dir_for", "run_pate"]
