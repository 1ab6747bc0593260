"""The interface every generator implements, and what the run lifecycle hands it.

A generator is a plain object holding its options (a dataclass, in the style of a
scikit-learn estimator). The run lifecycle (``dptext.run.lifecycle``) calls, in order:

``plan(info)``
    the releases the run will make, before anything is drawn: the corpus's persistent
    budget is checked and charged against them (``info`` holds public facts only);
``fit(corpus, ctx)``
    every DP release, through ``dptext.privacy``, recorded in ``ctx.ledger``; returns the
    released state (JSON: released data and its post-processing only, never private
    text), which the run lifecycle saves and reloads on resume. A fit that calls an LLM between
    releases (Aug-PE, PATE) resumes from the files it keeps in ``ctx.dir``;
``write_documents(state, ctx)``
    post-processing of the state: the synthetic documents, and the public parameters and
    notes the privacy report shows.

The run lifecycle (``dptext.run``) alone knows the run folder, the budget, the journal and the
output files; a generator writes nowhere but ``ctx.dir``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from dptext.corpus import Corpus, InputError
from dptext.privacy import PrivacyLedger, Release
from dptext.privacy.labels import check_declared

#: the run's total ε when none is given: every generator's default, and so that of
#: ``dptext generate`` and ``dptext.synthesize`` alike (docs/choosing-epsilon.md)
DEFAULT_EPSILON = 6.0


def check_declared_labels(corpus: Corpus, declared) -> None:
    """Before any release: declared labels need a label column and must cover the data
    (else an input error whose private detail goes to the curator's terminal only)."""
    if not corpus.labelled:
        if declared:
            raise InputError("labels were declared but the corpus has no label column")
    elif declared is not None:
        present = corpus.labels if corpus.label_sets is None else \
            {x for s in corpus.label_sets for x in s}
        check_declared(present, declared, source=corpus.source)


def refuse_multilabel(generator, corpus: Corpus) -> None:
    """A generator that uses one label per document refuses a multi-label corpus (rather
    than keep one label of each, or treat each label set as a class)."""
    if corpus.multilabel and not generator.multilabel:
        raise InputError(
            f"{corpus.source}: the corpus is multi-label (--label-sep) and the "
            f"{generator.name!r} method takes one label per document; use --method kps or "
            "dpft (they take label sets), or drop --label-sep to read the label column as "
            "one label per document")


def check_resources(*, vocab: Any = None, embedder: Any = None) -> None:
    """Resolve the names of the public resources a fit will load (a vocabulary spec, an
    embedder) before the run is charged, so that a mistyped name costs no privacy budget.
    Objects given instead of names, and ``None``, are taken as they are."""
    from dptext.embed import check_embedder
    from dptext.text.vocabulary import check_vocabulary

    if isinstance(vocab, str):
        check_vocabulary(vocab)
    if isinstance(embedder, str):
        check_embedder(embedder)


def checks_summary(parameters: dict[str, Any]) -> str:
    """The summary clause of the LLM checks' counts a fit saved in its parameters (none in
    a run folder from before they were counted)."""
    from dptext.llm import RunStats

    return RunStats(**parameters.get("checks", {})).quality_summary()


@dataclass(frozen=True)
class CorpusInfo:
    """What a plan may depend on: public facts about the corpus, never its statistics."""

    labelled: bool  # the corpus has a label column (the schema, not its values)
    multilabel: bool = False  # it is read as label sets (--label-sep: the schema too)


@dataclass
class Documents:
    """What ``documents`` returns: the records written out (``text``, usually ``label``,
    any other public fields) and what the report shows about how they were made."""

    records: list[dict[str, Any]]
    parameters: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)  # lines for the terminal
    document_type: str | None = None
    not_private: str | None = None  # ε = ∞: why the report must say NOT PRIVATE


@dataclass
class RunContext:
    """What the run lifecycle lends a generator for one run."""

    dir: Path  # the generator's own folder inside the run folder (its resumable steps)
    ledger: PrivacyLedger  # every release of this run (reloaded on resume)
    save_ledger: Callable[[], None]  # persist ``ledger`` now (before a release is used)
    llm: Any = None  # an ``LLMBackend`` (lazy: a local model loads at its first prompt)
    journal: Any = None  # the run's ``Journal`` of completions
    cache: Any = None  # a ``PromptCache`` or None
    concurrency: int = 4
    progress: bool = True
    seed: int | None = None  # the user's seed for public randomness, if any
    llm_seed: int = 0  # the run's public LLM sampling seed (kept in run.json)
    say: Callable[[str], None] = lambda msg: None
    stats: Any = None  # the run's ``RunStats`` (LLM calls, retries, quality counters)


@runtime_checkable
class Generator(Protocol):
    name: ClassVar[str]  # the registry name: kps, augpe, pate, dpft, ...
    epsilon: float | None  # the run's total ε (None: the sum of per-stage ε options)
    delta: float

    def release_options(self) -> dict[str, Any]:
        """The options that fix the releases (JSON): resume refuses a change."""

    def plan(self, info: CorpusInfo) -> list[Release]:
        """The run's releases, checked and charged before the first is made."""

    def fit(self, corpus: Corpus, ctx: RunContext) -> dict[str, Any]:
        """Make every release (into ``ctx.ledger``); return the released state."""

    def write_documents(self, state: dict[str, Any], ctx: RunContext) -> Documents:
        """The synthetic documents: post-processing of ``state``."""


class BaseGenerator:
    """Defaults for a generator dataclass: every field fixes the release except those
    named in ``POST_PROCESSING`` (options of ``documents`` only, free to change on
    resume)."""

    name: ClassVar[str]
    POST_PROCESSING: ClassVar[tuple[str, ...]] = ()
    uses_llm: ClassVar[bool] = True  # the run lifecycle makes the --llm backend only if so
    extra_columns: ClassVar[tuple[str, ...]] = ()  # corpus columns besides text and label
    multilabel: ClassVar[bool] = False  # takes a multi-label corpus (else refuses it)

    resumable_fit: ClassVar[bool] = True  # fit continues from ctx.dir after a kill

    @property
    def private(self) -> bool:
        return self.epsilon is None or math.isfinite(self.epsilon)

    #: (field, options class): flat options named like that class's fields go into
    #: ``field`` (a dict of them, or an instance when the class is the field's type)
    NESTED: ClassVar[tuple[str, type, bool] | None] = None
    ALIASES: ClassVar[dict[str, str]] = {}  # option name -> field name

    @classmethod
    def from_options(cls, **options: Any):
        """The generator from keyword options (``dptext.synthesize``'s extra arguments)."""
        options = {cls.ALIASES.get(k, k): v for k, v in options.items()}
        known = {f.name for f in dataclasses.fields(cls)}
        if cls.NESTED is not None:
            name, kind, as_dict = cls.NESTED
            inner = {f.name for f in dataclasses.fields(kind) if f.init} - known
            flat = {k: options.pop(k) for k in list(options) if k in inner}
            given = options.get(name)
            options[name] = ({**(given or {}), **flat} if as_dict
                             else dataclasses.replace(given or kind(), **flat))
            known |= inner
        unknown = sorted(set(options) - known)
        if unknown:
            raise TypeError(f"{cls.name}: unknown option(s) {', '.join(unknown)}; it takes "
                            + ", ".join(sorted(known | set(cls.ALIASES))))
        return cls(**options)

    @classmethod
    def option_names(cls) -> set[str]:
        """The keyword options ``from_options`` accepts."""
        own = {f.name for f in dataclasses.fields(cls)}
        if cls.NESTED is not None:
            own |= {f.name for f in dataclasses.fields(cls.NESTED[1]) if f.init}
        return own | set(cls.ALIASES)

    def validate(self) -> None:
        """Refuse bad options before anything is read or charged."""

    def check(self, corpus: Corpus) -> None:
        """Refuse bad input against the corpus before the plan is charged."""

    def release_options(self) -> dict[str, Any]:
        return {f.name: _jsonable(getattr(self, f.name)) for f in dataclasses.fields(self)
                if f.name not in self.POST_PROCESSING}

    def columns(self) -> tuple[str, ...]:
        """Corpus columns to read besides text and label."""
        return self.extra_columns

    def released(self, ctx: RunContext) -> list[Release] | None:
        """After ``fit`` failed: the releases it made (the run lifecycle settles the corpus's
        ledger to them); ``None`` when they cannot be told apart, so the whole plan stays
        charged. Every release is recorded in ``ctx.ledger`` as it is made, unless a
        generator keeps them elsewhere and says so here."""
        return list(ctx.ledger.releases)


def _jsonable(v: Any) -> Any:
    """An option as JSON; an object (an embedder, a model) by its type only."""
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {f.name: _jsonable(getattr(v, f.name)) for f in dataclasses.fields(v)}
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    if isinstance(v, str | int | float | bool | type(None)):
        return v
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return f"<{type(v).__name__}>"
