"""Silver-coreference utility: do the synthetic documents keep their entities consistent
enough to train a coreference model on? (dp-finetuning paper, coreference sections.)"""

from dptext.evaluate.coref.documents import CorefDoc
from dptext.evaluate.coref.metrics import score
from dptext.evaluate.coref.protocol import CorefConfig, coreference_section, silver_coreference
from dptext.evaluate.coref.readers import DEMO, read_gold

__all__ = ["DEMO", "CorefConfig", "CorefDoc", "coreference_section", "read_gold", "score",
           "silver_coreference"]
