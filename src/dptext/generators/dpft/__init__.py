"""``dpft``: synthetic text from a local causal LM fine-tuned with DP-SGD (Opacus) + LoRA.

Control codes ``[BOS]codes[SEP]text`` (the fine-tuning paper), an optional classifier
head trained jointly under DP and PPLM steering (the multi-task blog), a canary
exposure attack, and a non-private ICL reference. Never imports ``dptext.llm``,
except ``dpft.icl`` (the ICL reference, which is not private).
"""

from dptext.generators.dpft.api import NOT_PRIVATE, DPFineTuneGenerator
from dptext.generators.dpft.codes import CodeDistribution, format_codes
from dptext.generators.dpft.sample import PPLMConfig, SamplingConfig
from dptext.generators.dpft.train import DPFTConfig

__all__ = [
    "NOT_PRIVATE",
    "CodeDistribution",
    "DPFTConfig",
    "DPFineTuneGenerator",
    "PPLMConfig",
    "SamplingConfig",
    "format_codes",
]
