"""DP-KPS (keyphrase prompt seeding): ``KeyphraseSeeder`` fits the DP releases of a private
corpus and draws keyphrase sequences from them; ``KPSGenerator`` (``generator.py``) runs it
behind the generator interface.

The package: ``options`` (the public parameters and their checks), ``budget`` (the noise
of every stage, split once), ``plan`` and ``stages`` (the options resolved into the list
of stages a fit runs), ``releases`` (the releases on the private corpus), ``models`` and
``selection`` (the keyphrase models and their private choice), ``sampling``, ``report``.
"""

from dptext.generators.kps.sampling import KeyphraseSequence
from dptext.generators.kps.seeder import KeyphraseSeeder

__all__ = ["KeyphraseSeeder", "KeyphraseSequence"]
