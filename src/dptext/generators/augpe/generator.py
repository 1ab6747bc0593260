"""Aug-PE behind the generator interface (``evolution.py`` is the algorithm). Its fit calls the
LLM between releases: each iteration's noisy votes are saved before any prompt uses them,
so a killed run resumes mid-iteration from ``ctx.dir`` without new noise."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

from dptext.corpus import Corpus
from dptext.generators.augpe.evolution import CLASS_NAMES_NOTE, LLM_NOTE, AugPEConfig, run_augpe
from dptext.generators.augpe.privacy import planned_releases
from dptext.generators.augpe.state import RunState
from dptext.generators.base import (
    DEFAULT_EPSILON,
    BaseGenerator,
    CorpusInfo,
    Documents,
    RunContext,
    check_declared_labels,
    check_resources,
    checks_summary,
)
from dptext.privacy import Release
from dptext.privacy.labels import LABEL_SET, LABEL_SET_NOTE, release_label_set


@dataclass
class AugPEGenerator(BaseGenerator):
    """``config`` holds Aug-PE's options (given flat too: ``iterations=``, ...); the
    population is ``config.per_class`` per class, or ``documents`` split equally."""

    name: ClassVar[str] = "augpe"
    NESTED: ClassVar = ("config", AugPEConfig, False)

    epsilon: float = DEFAULT_EPSILON
    delta: float = 1e-5
    labels: tuple[str, ...] | None = None
    documents: int | None = None
    config: AugPEConfig = field(default_factory=AugPEConfig)

    def validate(self) -> None:
        self.config.validate()
        check_resources(vocab=self.config.vocab if self.config.random_words else None,
                        embedder=self.config.embedder)

    def check(self, corpus: Corpus) -> None:
        check_declared_labels(corpus, self.labels)

    def _noise(self, labelled: bool):
        # without declared labels the classes are the DP label set, released first
        return self.config.noise(self.epsilon, self.delta,
                                 label_set=labelled and self.labels is None)

    def plan(self, info: CorpusInfo) -> list[Release]:
        # the label set's partitions are not known yet; the plan's cost does not depend on
        # them (one parallel group per iteration)
        classes = list(self.labels) if self.labels else ["?"] if info.labelled else [None]
        return planned_releases(self._noise(info.labelled), classes)

    def _classes(self, corpus: Corpus, ctx: RunContext, noise) -> list:
        if self.labels:
            return list(self.labels)
        if corpus.labels is None:
            return [None]
        state = RunState(ctx.dir)
        saved = state.label_set()
        if saved is not None:  # a resumed run: the label set was released before
            return saved
        released = release_label_set(corpus.labels, noise[LABEL_SET], ledger=ctx.ledger)
        state.save_label_set(released, ctx.ledger.releases[-1:])
        classes = list(released.values["label"])
        if not classes:
            raise ValueError(f"no label reached the DP label set's threshold (a noisy count "
                             f"of {released.threshold:.0f}); the run's budget is spent and "
                             "there is no class to write for. Declare --labels, or raise "
                             "--epsilon or --label-set-share.")
        return classes

    def fit(self, corpus: Corpus, ctx: RunContext) -> dict[str, Any]:
        noise = self._noise(corpus.labels is not None)
        classes = self._classes(corpus, ctx, noise)
        cfg = self.config
        if self.documents is not None:
            cfg = dataclasses.replace(cfg, per_class=max(1, self.documents // len(classes)))
        ctx.say(f"Aug-PE: {len(classes)} classes × {cfg.per_class} texts, {cfg.iterations} "
                f"iterations, {ctx.llm.identity}")
        result = run_augpe(corpus, cfg, noise, ctx.llm, ctx.dir, classes=classes,
                           seed=ctx.llm_seed, epsilon_cap=self.epsilon, cache=ctx.cache,
                           concurrency=ctx.concurrency, progress=ctx.progress, say=ctx.say,
                           journal=ctx.journal, stats=ctx.stats)
        ctx.ledger = result.ledger  # rebuilt from the release files in ctx.dir
        notes = [LLM_NOTE]
        if not self.labels and classes != [None]:
            notes.append(LABEL_SET_NOTE)
        if cfg.class_names:
            notes.insert(0, CLASS_NAMES_NOTE)
        return {"population": [{"text": t, "label": c} for t, c in result.populations[-1]],
                "notes": notes,
                "parameters": {**cfg.to_dict(), "llm": ctx.llm.identity,
                               "prompts_per_iteration": result.prompts,
                               "llm_calls": result.prompts[-1],
                               "checks": result.check_counts,
                               "class_names_in_prompts": cfg.class_names,
                               "vocabulary_size": len(result.vocabulary or ())}}

    def released(self, ctx: RunContext) -> list[Release]:
        """The releases saved in the run's folder (each with its output, before use)."""
        return RunState(ctx.dir).ledger().releases

    def write_documents(self, state: dict[str, Any], ctx: RunContext) -> Documents:
        """The population after the last iteration."""
        return Documents(records=state["population"], parameters=state["parameters"],
                         notes=state["notes"], document_type=self.config.document_type,
                         summary=[f"{state['parameters']['llm_calls']} LLM prompts",
                                  checks_summary(state["parameters"])])
