"""DP fine-tuning behind the generator interface (``dptext dpft``, ``dptext generate
--method dpft``, ``dptext.synthesize(method="dpft")``).

Its folder (``RunContext.dir``): ``plan.json`` (the released code histogram, the ledger
and the training plan, written before the first step), ``train_state.pt`` (checkpoint:
weights, optimiser moments, step count), ``model/`` (the adapter once trained) and
``generated.jsonl`` (documents as they are written). Nothing there or in the outputs holds
a sampling seed, a generator state or a loss. A resumed run continues from there without
new DP noise (and with fresh secret sampling randomness).

Plan: the run's (ε, δ) as one block (its DP-SGD noise is solved from a released corpus
size, so its releases are known only once fitted); ε = ∞ as a run without DP.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from dptext.corpus import Corpus
from dptext.generators.base import (
    DEFAULT_EPSILON,
    BaseGenerator,
    CorpusInfo,
    Documents,
    RunContext,
)
from dptext.generators.dpft.api import NOT_PRIVATE, PLAN_NAME, DPFineTuneGenerator
from dptext.generators.dpft.model import base_dtype, check_model, describe_dtype
from dptext.generators.dpft.sample import PPLMConfig, SamplingConfig
from dptext.generators.dpft.train import DPFTConfig
from dptext.privacy import Release
from dptext.privacy.budget import planned_run


@dataclass
class DPFTGenerator(BaseGenerator):
    """``config``: DP-SGD options (given flat too: ``epochs=``, ``batch_size=``, ...);
    ``documents``: how many to write (default: the DP estimate of the corpus size);
    ``code_values``: declared public values per control-code field; ``base``: an
    already loaded ``(model, tokenizer)`` (tests)."""

    name: ClassVar[str] = "dpft"
    uses_llm: ClassVar[bool] = False
    multilabel: ClassVar[bool] = True  # the label set as one control code (dpft/codes.py)
    NESTED: ClassVar = ("config", DPFTConfig, False)
    POST_PROCESSING: ClassVar[tuple[str, ...]] = (
        "documents", "sampling", "pplm", "pplm_config", "chunk", "base")

    epsilon: float = DEFAULT_EPSILON
    delta: float = 1e-5
    labels: tuple[str, ...] | None = None
    documents: int | None = None
    model: str | None = None  # a local Hugging Face causal-LM folder (default SmolLM2-135M)
    metadata: tuple[str, ...] = ()  # extra columns used as control codes
    code_values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    config: DPFTConfig = field(default_factory=DPFTConfig)
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    pplm: bool = False
    pplm_config: PPLMConfig | None = None
    chunk: int = 32  # documents per journaled batch
    base: Any = None

    def columns(self) -> tuple[str, ...]:
        return tuple(self.metadata)

    def validate(self) -> None:
        if not (self.epsilon > 0):
            raise ValueError("ε must be positive, or inf for a NOT PRIVATE run")
        if self.pplm and not self.config.multitask:
            raise ValueError("PPLM steering needs the classifier head (multitask)")
        base_dtype(self.config.dtype)
        if self.base is None:
            check_model(self.model)

    def plan(self, info: CorpusInfo) -> list[Release]:
        return [planned_run(PLAN_NAME, self.epsilon, self.delta)]

    def _declared(self) -> dict[str, tuple[str, ...]] | None:
        declared = dict(self.code_values)
        if self.labels:
            declared["label"] = tuple(self.labels)
        return declared or None

    def fit(self, corpus: Corpus, ctx: RunContext) -> dict[str, Any]:
        model_dir = ctx.dir / "model"
        if not self.private:
            ctx.say("ε = ∞: training WITHOUT differential privacy; the output is NOT PRIVATE")
        if not (model_dir / "dpft.json").exists():
            if self.base is None:
                ctx.say(describe_dtype(self.config.dtype))
            gen = DPFineTuneGenerator(self.epsilon, self.delta, model=self.model,
                                      config=self.config, metadata_fields=self.metadata,
                                      code_values=self._declared(), checkpoint_dir=ctx.dir,
                                      seed=ctx.seed, progress=ctx.progress)
            # the engine charged the run: the fit does not charge it again; every release
            # goes into the run's ledger as it is made (its cap checked), a failed fit's too
            gen.fit_uncharged(corpus, base=self.base, ledger=ctx.ledger).save(model_dir)
        # a fit saved by an earlier attempt: its releases join the run's ledger here
        gen = DPFineTuneGenerator.load(model_dir, base=self.base, ledger=ctx.ledger)
        return {"model": "model", "estimated_documents": round(gen.code_distribution_.total())}

    def write_documents(self, state: dict[str, Any], ctx: RunContext) -> Documents:
        """Sampling from the DP model (post-processing), journaled chunk by chunk."""
        gen = DPFineTuneGenerator.load(ctx.dir / state["model"], base=self.base)
        n = self.documents or state["estimated_documents"]
        journal = ctx.dir / "generated.jsonl"
        done: list[dict] = []
        if journal.exists():
            done = [json.loads(x) for x in journal.read_text(encoding="utf-8").splitlines() if x]
        rng = np.random.default_rng()  # secret: never saved
        with journal.open("a", encoding="utf-8") as f:
            while len(done) < n:
                new = gen.generate(min(self.chunk, n - len(done)), sampling=self.sampling,
                                   pplm=self.pplm, pplm_config=self.pplm_config,
                                   rng=np.random.default_rng(int(rng.integers(2**31))))
                for rec in new:
                    f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                f.flush()
                done.extend(new)
        params = gen.report_parameters({"documents": n, "pplm": self.pplm,
                                        "model": str(self.model or "smollm2-135m"),
                                        "sampling": self.sampling.__dict__})
        return Documents(records=done[:n], parameters=params, notes=gen.report_notes(),
                         not_private=None if self.private else NOT_PRIVATE)
