"""``pate``: PATE-style DP data augmentation (public LLM generator, teachers on disjoint
shards, a student trained on GNMax votes, and a DP label-distribution tutor).

See docs/pate.md for the algorithm and its privacy analysis; ``PateGenerator`` is it
behind the generator interface.
"""

from dptext.generators.pate.generator import PateConfig, PateGenerator

__all__ = ["PateConfig", "PateGenerator"]
