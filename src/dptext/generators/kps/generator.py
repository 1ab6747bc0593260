"""DP-KPS behind the generator interface: ``KeyphraseSeeder`` fits the releases and draws
the keyphrase sequences (the released state); the LLM writes one document per sequence
(post-processing). The LLM sees only the document type, the sequences and public
few-shot examples."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from dptext.corpus import Corpus
from dptext.generators.base import (
    BaseGenerator,
    CorpusInfo,
    Documents,
    RunContext,
    check_declared_labels,
    check_resources,
)
from dptext.generators.kps.form import follow_forms
from dptext.generators.kps.options import PER_STAGE_EPSILONS, budget_form, with_default_length
from dptext.generators.kps.parameters import plan_parameters
from dptext.generators.kps.sampling import KeyphraseSequence
from dptext.generators.kps.seeder import KeyphraseSeeder
from dptext.privacy import PrivacyLedger, Release
from dptext.privacy.label_sets import label_sets_note
from dptext.privacy.labels import LABEL_SET_NOTE

FEW_SHOT_NOTE = ("Few-shot examples are public documents supplied by the data recipient; they "
                 "are not part of the private corpus and are not covered by the guarantee.")
LLM_NOTE = ("The LLM sees only the document type, the DP keyphrase sequences and public "
            "few-shot examples: the documents are post-processing of the DP release.")
FORM_NOTE = ("Each prompt also states a form (length, shape, links, tone) drawn from its "
             "class's DP form profile (the 'form profile' release), and each document is "
             "made to follow the form's mechanical parts (cut to the drawn length, the drawn "
             "link domain at its end, a hashtag): post-processing too.")


def seeder_parameters(seeder: KeyphraseSeeder, labelled: bool = True,
                      multilabel: bool = False) -> dict[str, Any]:
    """The public parameters of a seeder, for the report: those its plan for a labelled
    (True: the upper bound) or unlabelled corpus, or a multi-label one, reads
    (``parameters.plan_parameters``), and the released choices (S, the model)."""
    out = plan_parameters(seeder, seeder.plan(labelled, multilabel))
    if getattr(seeder, "terms_per_doc_", 0):
        out["terms_per_doc_used"] = seeder.terms_per_doc_  # given, or privately chosen
    if getattr(seeder, "selection_", None):  # released choices only (no scores)
        out["model_selection"] = dict(seeder.selection_)
    return out


def check_seeder(seeder: KeyphraseSeeder) -> None:
    """Before the run is charged: the seeder's options, and the vocabulary and embedder
    they name (a mistyped name costs no budget)."""
    seeder.planned_releases()  # checks the options
    check_resources(vocab=seeder.vocab_spec(), embedder=seeder.embedder)


def fit_seeder(seeder: KeyphraseSeeder, corpus: Corpus, *, seed: int | None,
               say: Callable[[str], None],
               progress: Callable[[str], None] | None = None,
               ledger: PrivacyLedger | None = None) -> np.random.Generator:
    """Fit ``seeder`` (every DP-KPS release, recorded in ``ledger``: the run's, whose caller
    charges the corpus; None: the fit charges the corpus's persistent budget itself);
    returns the public rng the sequences are drawn with."""
    rng = np.random.default_rng(seed)
    seeder.fit(corpus, rng=rng, progress=progress, ledger=ledger)
    n_classes, n_sketches = len(seeder.sketches_.sums), len(seeder.sketches_.blocks)
    # released values only; no fit time (it grows with the private corpus's size)
    say(f"DP-KPS fitted: "
        f"{len(seeder.released_vocabulary_)} released terms; "
        f"{n_classes} {'class' if n_classes == 1 else 'classes'}"
        + (f", {n_sketches} {'sketch' if n_sketches == 1 else 'sketches'} each"
           if n_sketches else ""))
    for line in seeder.summary_lines():
        say(line)
    return rng


@dataclass
class KPSGenerator(BaseGenerator):
    """DP keyphrase prompt seeding: ``seeder`` holds KeyphraseSeeder's options (its
    defaults where absent); ``per_class`` / ``documents`` size the output."""

    name: ClassVar[str] = "kps"
    NESTED: ClassVar = ("seeder", KeyphraseSeeder, True)
    ALIASES: ClassVar = {"sequence_method": "method"}  # iterative or independent
    resumable_fit: ClassVar[bool] = False  # one fit, all or nothing
    multilabel: ClassVar[bool] = True  # label sets: kps/multilabel.py
    POST_PROCESSING: ClassVar[tuple[str, ...]] = (
        "document_type", "prompt_template", "max_tokens", "temperature", "top_p",
        "min_coverage", "max_attempts", "clean", "max_retries")

    epsilon: float | None = None  # total ε (resolved by budget_form); None: per stage
    delta: float = 1e-5
    labels: tuple[str, ...] | None = None
    # documents per class (default 100 without documents; multi-label: per_class × the
    # number of labels in all, their label sets drawn from the released set counts)
    per_class: int | None = None
    documents: int | None = None  # total documents, split by the DP label counts
    seeder: dict[str, Any] = field(default_factory=dict)
    document_type: str = "document"
    prompt_template: str | None = None  # a file: text, or JSON with user/system
    few_shot: str | None = None  # a file of PUBLIC examples (.jsonl or '---'-separated)
    max_tokens: int = 400
    temperature: float = 0.8
    top_p: float = 0.95
    min_coverage: float = 0.0
    max_attempts: int = 3
    clean: bool = True
    max_retries: int = 6

    # ------------------------------------------------------------------ options
    def __post_init__(self) -> None:
        """The budget's form, as ``KeyphraseSeeder`` resolves it: ``epsilon`` the total
        (``DEFAULT_EPSILON`` when none is given), or the per-stage ε in ``seeder``."""
        form = budget_form(self.epsilon, *(self.seeder.get(k) for k in PER_STAGE_EPSILONS))
        self.epsilon = form.pop("epsilon", None)
        self.seeder = {**{k: v for k, v in self.seeder.items() if k not in PER_STAGE_EPSILONS},
                       **form}

    def seeder_params(self, multilabel: bool = False) -> dict[str, Any]:
        """KeyphraseSeeder's arguments for a corpus (``multilabel``: L's default)."""
        return with_default_length({**self.seeder, "delta": self.delta, "labels": self.labels,
                                    "epsilon": self.epsilon}, multilabel)

    def _prompting(self):
        from dptext.llm import LLMError, PromptTemplate, load_few_shot
        from dptext.llm.errors import TemplateError

        try:
            template = (PromptTemplate.from_file(Path(self.prompt_template))
                        if self.prompt_template else PromptTemplate())
            shots = tuple(load_few_shot(Path(self.few_shot))) if self.few_shot else ()
        except (TemplateError, LLMError) as e:
            raise ValueError(str(e)) from None
        return template, shots

    def validate(self) -> None:
        if self.per_class is not None and self.documents is not None:
            raise ValueError("give either documents per class or a total number of documents")
        check_seeder(KeyphraseSeeder(**self.seeder_params()))
        self._prompting()  # everything the LLM will see is checked before any release

    def check(self, corpus: Corpus) -> None:
        """Before the charge: declared labels must cover the data. Few-shot examples are
        not checked against the corpus: they must be public (``FEW_SHOT_NOTE``), and
        comparing them with it would tell whoever supplies them whether a text is in it (a
        membership test outside any release)."""
        check_declared_labels(corpus, self.labels)

    # ------------------------------------------------------------------ the run
    def plan(self, info: CorpusInfo) -> list[Release]:
        return KeyphraseSeeder(**self.seeder_params(info.multilabel)).planned_releases(
            info.labelled, info.multilabel)

    def fit(self, corpus: Corpus, ctx: RunContext) -> dict[str, Any]:
        seeder = KeyphraseSeeder(**self.seeder_params(corpus.multilabel))
        # the stages, without elapsed times (they grow with the private corpus's size);
        # every release goes into the run's ledger as it is made, a failed fit's too
        rng = fit_seeder(seeder, corpus, seed=ctx.seed, say=ctx.say,
                         progress=lambda msg: ctx.say(f"  DP-KPS: {msg}"), ledger=ctx.ledger)
        per_class = self.per_class
        if per_class is None and self.documents is None:
            per_class = 100
        seqs = seeder.sample(per_class, total=self.documents, rng=rng)
        ctx.say(f"drew {len(seqs)} DP keyphrase sequences")
        if corpus.multilabel:
            notes = [label_sets_note(seeder.max_labels_per_doc, seeder.label_set_model)]
        else:
            notes = [] if self.labels or corpus.labels is None else [LABEL_SET_NOTE]
        state = {"sequences": [s.to_dict() for s in seqs],
                 "parameters": seeder_parameters(seeder, corpus.labelled, corpus.multilabel),
                 "notes": notes}
        if seeder.form_profile_ is not None:
            ctx.say("drew a form for each sequence from its class's DP form profile")
            notes.append(FORM_NOTE)
            state["form_profile"] = seeder.form_profile_.to_dict()
        return state

    def write_documents(self, state: dict[str, Any], ctx: RunContext) -> Documents:
        from dptext.llm import (
            DocumentOptions,
            PromptBuilder,
            RetryPolicy,
            SamplingParams,
            generate_documents,
        )

        seqs = [KeyphraseSequence.from_dict(d) for d in state["sequences"]]
        template, shots = self._prompting()
        builder = PromptBuilder(self.document_type, template, shots,
                                SamplingParams(self.max_tokens, self.temperature, self.top_p))
        opts = DocumentOptions(clean=self.clean, document_type=self.document_type,
                               min_coverage=self.min_coverage or None,
                               max_attempts=self.max_attempts, concurrency=ctx.concurrency,
                               seed=ctx.llm_seed, progress=ctx.progress,
                               retry=RetryPolicy(max_retries=self.max_retries))
        ctx.say(f"writing {len(seqs)} documents with {ctx.llm.identity}")
        docs = generate_documents(seqs, ctx.llm, builder, opts, ctx.journal, ctx.cache,
                                  ctx.stats)
        if any(s.form_values for s in seqs):
            docs = follow_forms(docs, seqs, ctx.llm_seed)
        covered = sum(d.coverage for d in docs) / max(len(docs), 1)
        stats = ctx.stats
        params = {**state["parameters"], "llm": ctx.llm.identity,
                  "document_type": self.document_type, "prompt_template": template.source,
                  "few_shot": self.few_shot, "max_tokens": self.max_tokens,
                  "temperature": self.temperature, "top_p": self.top_p,
                  "min_coverage": self.min_coverage, "llm_calls": stats.computed
                  + stats.from_journal + stats.from_cache}
        return Documents(
            records=[d.to_dict() for d in docs], parameters=params,
            notes=[*state["notes"], LLM_NOTE, *([FEW_SHOT_NOTE] if shots else [])],
            summary=[f"mean keyphrase coverage {covered:.0%} ({stats.computed} generated, "
                     f"{stats.from_journal} from the journal, {stats.from_cache} from the "
                     f"cache, {stats.retries} retries)", stats.quality_summary()],
            document_type=self.document_type)
