"""PATE behind the generator interface: ``PateGenerator`` (``dptext pate``, ``dptext
generate --method pate``, ``dptext.synthesize(method="pate")``).

Steps (releases marked DP; everything else is public or post-processing):

1. read and de-duplicate the private corpus; DP: without declared label names, the DP
   label set (documents of a label not released are left out) and DP-KPS's vocabulary;
   the tutor's label histogram; saved before the first prompt;
2. the public generator writes the candidate pool (journaled, resumable);
3. teachers on disjoint keyed-hash shards vote on the queried candidates; DP: GNMax;
4. the student learns from the noisy argmax and scores every candidate; the tutor's
   counts decide how many documents each class gets, best student scores first.

Its folder (``RunContext.dir``): ``released.json`` (step 1, with the run's ledger saved
before it), ``candidates.jsonl``, ``votes.json`` (the noisy votes, with the ledger saved
before it). A resumed run reuses every saved release (no new DP noise) and every journaled
completion (no repeated prompt). Nothing private is written there: the files hold released
values, public candidates and the layout.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import numpy as np

from dptext.compute import current_engine
from dptext.corpus import Corpus, write_jsonl
from dptext.files import write_json_atomic
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
from dptext.generators.pate.candidates import (
    Candidate,
    keyword_prompts,
    label_prompts,
)
from dptext.generators.pate.plan import (
    TUTOR_SENSITIVITY,
    plan_noise,
    planned_releases,
    rdp_cross_check,
)
from dptext.generators.pate.shards import deduplicate, new_salt, shard_of
from dptext.generators.pate.student import select, student_scores, tutor_counts
from dptext.generators.pate.teachers import VOTES_RELEASE, gnmax, teacher_votes
from dptext.llm import DocumentOptions, SamplingParams, complete_checked, reseeding
from dptext.privacy import NoiseSpec, PrivacyLedger, Release, release
from dptext.privacy.labels import LABEL_SET, LABEL_SET_NOTE, release_label_set

PUBLIC_GENERATOR_NOTE = (
    "The LLM sees only the document type and the declared label names (or terms of the DP "
    "vocabulary): the candidates are public. The output is chosen from them by a student "
    "trained on noisy teacher votes and by the noisy label histogram: post-processing of "
    "the DP releases.")
DATA_INDEPENDENT_NOTE = ("GNMax is accounted data-independently (no smooth-sensitivity or "
                         "data-dependent PATE analysis).")


@dataclass(frozen=True)
class PateConfig:
    """Everything that fixes a run's DP releases and its public candidate pool."""

    epsilon: float = DEFAULT_EPSILON
    delta: float = 1e-5
    documents: int | None = None  # total output documents ...
    per_class: int | None = None  # ... or this many per class (default 100 per class)
    candidates_per_doc: float = 4.0
    teachers: int = 100
    max_queries: int | None = None  # query budget; None: query every candidate
    tutor_share: float = 0.05
    vocab_share: float = 0.2
    label_set_share: float = 0.1  # the DP label set's, without declared label names
    labels: tuple[str, ...] | None = None  # declared public label names -> label prompts
    document_type: str = "document"
    vocab: str = "english:20000"
    terms_per_doc: int = 80
    vocab_size: int = 1000
    words_per_prompt: int = 5
    embedder: Any = "minilm"  # a name, or an embedder object (tests)
    seed: int = 0  # public randomness: prompt seeds, candidate folds, queried subset
    sampling: SamplingParams = field(default_factory=lambda: SamplingParams(400, 0.8, 0.95))

    def validate(self) -> None:
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"--epsilon must be positive and finite, got {self.epsilon!r}")
        if self.documents is not None and self.per_class is not None:
            raise ValueError("give either a total number of documents or a number per class")
        for name in ("documents", "per_class", "max_queries"):
            v = getattr(self, name)
            if v is not None and v < 1:
                raise ValueError(f"{name} must be at least 1, got {v}")
        if self.teachers < 1:
            raise ValueError(f"need at least one teacher, got {self.teachers}")
        if not self.candidates_per_doc >= 1:
            raise ValueError("candidates_per_doc must be at least 1")

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__}
        d["labels"] = list(self.labels) if self.labels else None
        d["sampling"] = asdict(self.sampling)
        d["embedder"] = self.embedder if isinstance(self.embedder, str) else "custom"
        return d


@dataclass(frozen=True)
class Layout:
    """The public shape of a run, fixed before any release: classes and pool sizes."""

    classes: list[str | None]
    label_mode: bool
    documents: int
    pool: int
    queries: int

    @classmethod
    def of(cls, cfg: PateConfig, classes: list[str | None]) -> Layout:
        c = len(classes)
        n = cfg.documents or (cfg.per_class or 100) * c
        label_mode = cfg.labels is not None
        pool = (math.ceil(cfg.candidates_per_doc * n / c) * c if label_mode
                else math.ceil(cfg.candidates_per_doc * n))
        return cls(classes, label_mode, n, pool, min(pool, cfg.max_queries or pool))


def _classes(corpus: Corpus, declared: tuple[str, ...] | None) -> list[str | None] | None:
    """The public classes: [None], the declared labels, or None (the DP label set is to be
    released). Checks the data against declared labels (private values reach the
    curator's terminal only)."""
    check_declared_labels(corpus, declared)
    return _public_classes(corpus.labels is not None, declared)


def _public_split(layout: Layout, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Folds (balanced halves) and the queried candidates: public randomness only."""
    rng = np.random.default_rng([seed, 1])
    folds = rng.permutation(layout.pool) % 2
    queried = np.sort(rng.choice(layout.pool, layout.queries, replace=False))
    return folds, queried


def _public_classes(labelled: bool, declared: tuple[str, ...] | None) -> list | None:
    """[None] (unlabelled), the declared labels, or None (the DP label set is released)."""
    return [None] if not labelled else list(declared) if declared is not None else None


@dataclass
class PateGenerator(BaseGenerator):
    """PATE-style DP augmentation with the options of ``config`` (given flat too; the
    LLM's ``max_tokens``, ``temperature`` and ``top_p`` make its ``sampling``)."""

    name: ClassVar[str] = "pate"
    config: PateConfig

    @classmethod
    def from_options(cls, **options: Any) -> PateGenerator:
        sampling = {k: options.pop(k) for k in ("max_tokens", "temperature", "top_p")
                    if k in options}
        if sampling:
            options["sampling"] = dataclasses.replace(
                options.get("sampling") or PateConfig(epsilon=1.0).sampling, **sampling)
        try:
            return cls(PateConfig(**options))
        except TypeError as e:
            raise TypeError(f"pate: {e}") from None

    @classmethod
    def option_names(cls) -> set[str]:
        return set(PateConfig.__dataclass_fields__) | {"max_tokens", "temperature", "top_p"}

    @property
    def epsilon(self) -> float:
        return self.config.epsilon

    @property
    def delta(self) -> float:
        return self.config.delta

    def release_options(self) -> dict[str, Any]:
        return self.config.to_dict()

    def validate(self) -> None:
        self.config.validate()
        check_resources(vocab=self.config.vocab if self.config.labels is None else None,
                        embedder=self.config.embedder)

    def check(self, corpus: Corpus) -> None:
        _classes(corpus, self.config.labels)

    def _specs(self, classes: list | None) -> dict[str, NoiseSpec]:
        cfg = self.config
        return plan_noise(cfg.epsilon, cfg.delta, tutor=classes is None or len(classes) > 1,
                          vocab=cfg.labels is None, tutor_share=cfg.tutor_share,
                          vocab_share=cfg.vocab_share,
                          label_set_share=cfg.label_set_share if classes is None else None)

    def plan(self, info: CorpusInfo) -> list[Release]:
        return planned_releases(self._specs(_public_classes(info.labelled, self.config.labels)))

    # ------------------------------------------------------------- step 1
    def _first_releases(self, texts: list[str], labels: list, labelled: bool,
                        ctx: RunContext) -> dict:
        cfg = self.config
        classes = _public_classes(labelled, cfg.labels)
        specs = self._specs(classes)
        released: dict[str, Any] = {"tutor": None, "vocabulary": None}
        if classes is None:  # the DP label set: its classes, and no tutor for fewer than 2
            label_set = release_label_set(labels, specs[LABEL_SET], ledger=ctx.ledger)
            classes = list(label_set.values["label"])
            released["label_set"] = label_set.to_dict()
            if not classes:
                ctx.save_ledger()
                raise ValueError(
                    f"no label reached the DP label set's threshold (a noisy count of "
                    f"{label_set.threshold:.0f}): there is no class to write for. Declare "
                    "--labels, or raise --epsilon.")
            if len(classes) < 2:
                specs.pop("tutor", None)
        layout = Layout.of(cfg, classes)
        if "tutor" in specs:
            lab = np.asarray(labels, dtype=object)
            exact = np.array([(lab == c).sum() for c in classes], dtype=np.float64)
            released["tutor"] = release(exact, TUTOR_SENSITIVITY, specs["tutor"],
                                        ledger=ctx.ledger,
                                        name="label histogram (tutor)").tolist()
        if "vocab" in specs:
            released["vocabulary"] = list(self._vocabulary(texts, specs["vocab"], ctx.ledger))
        ctx.save_ledger()  # before the releases are used
        step = {"released": released, "layout": asdict(layout),
                "noise": {s: asdict(n) for s, n in specs.items()},
                "labels_from_data": cfg.labels is None and classes != [None]}
        write_json_atomic(ctx.dir / "released.json", step)
        return step

    def _vocabulary(self, texts: list[str], spec: NoiseSpec, ledger: PrivacyLedger):
        """DP-KPS's vocabulary release (the same function and noise floor)."""
        from dptext.generators.kps import KeyphraseSeeder
        from dptext.generators.kps.releases import release_vocabulary
        from dptext.text.vocabulary import load_vocabulary

        cfg = self.config
        vocab = load_vocabulary(cfg.vocab)
        return release_vocabulary(texts, vocab, spec, ledger, terms_per_doc=cfg.terms_per_doc,
                                  size=min(cfg.vocab_size, len(vocab)),
                                  noise_terms=KeyphraseSeeder.vocab_noise_terms,
                                  min_terms=cfg.words_per_prompt)

    def fit(self, corpus: Corpus, ctx: RunContext) -> dict[str, Any]:
        cfg = self.config
        texts, labels = deduplicate(corpus.texts, corpus.labels)
        path = ctx.dir / "released.json"
        step = (json.loads(path.read_text(encoding="utf-8")) if path.exists()
                else self._first_releases(texts, labels, corpus.labels is not None, ctx))
        layout, released = Layout(**step["layout"]), step["released"]

        # --------------------------------------------------------- step 2: candidates
        params = cfg.sampling
        if layout.label_mode:
            prompts, topics = label_prompts(cfg.document_type, [str(c) for c in layout.classes],
                                            layout.pool // len(layout.classes), params, cfg.seed)
        else:
            prompts = keyword_prompts(cfg.document_type, released["vocabulary"], layout.pool,
                                      cfg.words_per_prompt, params, cfg.seed)
            topics = [None] * layout.pool
        ctx.say(f"public generator: {len(prompts)} candidate prompts to {ctx.llm.identity}")
        # loops and refusals asked again, as DP-KPS's documents are
        written = complete_checked(reseeding(prompts), len(prompts), ctx.llm,
                                   DocumentOptions(document_type=cfg.document_type,
                                                   guess_truncation=False,
                                                   concurrency=ctx.concurrency,
                                                   progress=ctx.progress),
                                   ctx.journal, ctx.cache, ctx.stats, description="candidates")
        folds, queried = _public_split(layout, cfg.seed)
        cands = [Candidate(c.text, t, int(f))
                 for c, t, f in zip(written, topics, folds, strict=True)]
        write_jsonl((c.to_dict() for c in cands), ctx.dir / "candidates.jsonl")

        # --------------------------------------------------------- step 3: teachers
        emb = cfg.embedder
        if isinstance(emb, str):
            from dptext.embed import load_embedder

            emb = load_embedder(emb, cache_dir="")
        ctx.say(f"embedding {len(cands)} candidates")
        x_cand = np.asarray(emb.encode([c.text for c in cands]), dtype=np.float64)
        votes_path = ctx.dir / "votes.json"
        if votes_path.exists():
            noisy = np.asarray(json.loads(votes_path.read_text())["noisy_votes"])
        else:
            noisy = self._vote(texts, labels, layout, step, ctx, emb, x_cand, folds, queried)
            ctx.save_ledger()  # before the votes leave the process
            write_json_atomic(votes_path, {"queried": queried.tolist(),
                                           "noisy_votes": noisy.tolist()})
        del texts, labels

        # --------------------------------------------------------- step 4: student, tutor
        scores = student_scores(x_cand[queried], noisy, x_cand)[:, :len(layout.classes)]
        eligible = np.array([[bool(c.text) and (not layout.label_mode or c.topic == str(k))
                              for k in layout.classes] for c in cands])
        counts = (tutor_counts(np.asarray(released["tutor"]), layout.documents)
                  if released["tutor"] is not None else np.array([layout.documents]))
        chosen = select(scores, eligible, counts)
        records = [{"text": cands[i].text, "label": layout.classes[c],
                    "student_score": round(float(scores[i, c]), 4)} for i, c in chosen]
        summary = []
        if len(records) < layout.documents:
            summary.append(f"warning: only {len(records)} of {layout.documents} documents "
                           "could be chosen (too few candidates for some class); raise "
                           "--candidates-per-doc")
        report_params = {
            **{k: v for k, v in cfg.to_dict().items() if k != "sampling"},
            "sampling": asdict(params), "llm": ctx.llm.identity,
            "llm_calls": sum(c.attempts for c in written), "checks": ctx.stats.checks(),
            "candidates": layout.pool, "queries_answered": layout.queries,
            "documents": len(records), "tutor_counts": counts.tolist(),
            "label_mode": layout.label_mode, "gnmax_sigma_per_query": _vote_sigma(ctx.ledger),
            "rdp_epsilon_cross_check": rdp_cross_check(ctx.ledger.releases, layout.queries,
                                                       _vote_name(ctx.ledger), cfg.delta),
            "data_dependent_analysis": False,
        }
        notes = [PUBLIC_GENERATOR_NOTE, DATA_INDEPENDENT_NOTE,
                 *([LABEL_SET_NOTE] if step["labels_from_data"] else [])]
        return {"records": records, "parameters": report_params, "notes": notes,
                "summary": summary}

    def write_documents(self, state: dict[str, Any], ctx: RunContext) -> Documents:
        """The candidates the student and the tutor chose."""
        params = {**state["parameters"], "llm_calls_computed_this_run": ctx.stats.computed}
        return Documents(records=state["records"], parameters=params,
                         notes=state["notes"], document_type=self.config.document_type,
                         summary=[*state["summary"],
                                  f"{state['parameters']['llm_calls']} LLM calls",
                                  checks_summary(state["parameters"])])

    def _vote(self, texts, labels, layout: Layout, step: dict, ctx: RunContext, emb,
              x_cand: np.ndarray, folds: np.ndarray, queried: np.ndarray) -> np.ndarray:
        """Teachers on keyed-hash shards vote on the queried candidates; GNMax releases it."""
        index = {c: i for i, c in enumerate(layout.classes)}
        # documents of a label outside the public classes (not in the DP label set) take no
        # part
        keep = [i for i, lab in enumerate(labels) if lab in index]
        texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
        y = np.array([index[lab] for lab in labels], dtype=np.int64)
        shards = shard_of(texts, self.config.teachers, new_salt())
        if current_engine().name == "local":
            ctx.say("embedding the private documents (in memory only)")
            x_priv, by = np.asarray(emb.encode(list(texts)), dtype=np.float64), None
        else:  # each teacher's task embeds its own shard on the cluster (no cache)
            ctx.say("the Ray workers embed each teacher's private documents (no cache)")
            x_priv, by = texts, self.config.embedder
        ctx.say(f"training 2 × {self.config.teachers} teachers and answering "
                f"{layout.queries} queries")
        marks = set()

        def step_done(done: int, total: int) -> None:
            quarter = 4 * done // total
            if quarter not in marks and quarter > 0:
                marks.add(quarter)
                ctx.say(f"  teachers: {done}/{total}")

        votes = teacher_votes(x_priv, y, shards, self.config.teachers, x_cand, folds, queried,
                              len(layout.classes), progress=step_done, embedder=by)
        del texts, labels, x_priv
        noisy = gnmax(votes, NoiseSpec(**step["noise"]["votes"]), ctx.ledger)
        # no timing: the teachers' time grows with the private corpus's size
        ctx.say("teachers voted; GNMax released")
        return noisy


def _vote_name(ledger: PrivacyLedger) -> str:
    return next(r.name for r in ledger.releases if r.name.startswith(VOTES_RELEASE))


def _vote_sigma(ledger: PrivacyLedger) -> float:
    r = next(r for r in ledger.releases if r.name == _vote_name(ledger))
    return r.noise_scale
