"""One ``pate`` run end to end: the function behind ``dptext pate`` and ``dptext generate
--method pate``.

Steps (releases marked DP; everything else is public or post-processing):

1. read and de-duplicate the private corpus; DP: without declared label names, the DP
   label set (documents of a label not released are left out) and DP-KPS's vocabulary;
   the tutor's label histogram; saved before the first prompt;
2. the public generator writes the candidate pool (journaled, resumable);
3. teachers on disjoint keyed-hash shards vote on the queried candidates; DP: GNMax;
4. the student learns from the noisy argmax and scores every candidate; the tutor's
   counts decide how many documents each class gets, best student scores first.

Run directory ``<out>.run/``: ``ledger.json`` + ``released.json`` + ``run.json`` (step 1,
``run.json`` last: its presence means step 1 is complete), ``journal.jsonl`` (every
completion), ``candidates.jsonl``, ``votes.json`` (the noisy votes, with the ledger updated
before it). A resumed run reuses every saved release (no new DP noise) and every journaled
completion (no repeated prompt); the private corpus is read only while a release is still
to be made. Nothing private is written there: the files hold released values, public
candidates and the configuration.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dptext.corpus import Corpus, InputError, write_jsonl
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
from dptext.llm import Journal, PromptCache, RunStats, SamplingParams, clean_completion, run_prompts
from dptext.privacy import NoiseSpec, PrivacyLedger, Release, release
from dptext.privacy.labels import LABEL_SET, check_declared, release_label_set
from dptext.reporting import LABELS_FROM_DATA, build_report, report_path, write_report

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

    epsilon: float
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
    embedder: str = "minilm"
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
        d = asdict(self)
        d["labels"] = list(self.labels) if self.labels else None
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


@dataclass
class BudgetHooks:
    """The corpus's persistent budget (``privacy.budget.CorpusBudget``): ``charge`` checks
    the run's whole plan and charges it before the first release (it raises to refuse),
    so a run that fails or is abandoned afterwards is still counted."""

    charge: Callable[[Corpus, list[Release]], Any]


def run_dir_for(out: Path) -> Path:
    return out.with_name(out.name + ".run")


def _write_atomic(path: Path, obj: Any) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    tmp.replace(path)


def _save_ledger(ledger: PrivacyLedger, path: Path) -> None:
    _write_atomic(path, {"releases": [asdict(r) for r in ledger.releases]})


def _classes(corpus: Corpus, declared: tuple[str, ...] | None) -> list[str | None] | None:
    """The public classes: [None], the declared labels, or None (the DP label set is to be
    released). Checks the data against declared labels (private values reach the
    curator's terminal only)."""
    if corpus.labels is None:
        if declared:
            raise InputError("labels were declared but the corpus has no label column")
        return [None]
    if declared is None:
        return None
    check_declared(corpus.labels, declared, source=corpus.source)
    return list(declared)


def _public_split(layout: Layout, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Folds (balanced halves) and the queried candidates: public randomness only."""
    rng = np.random.default_rng([seed, 1])
    folds = rng.permutation(layout.pool) % 2
    queried = np.sort(rng.choice(layout.pool, layout.queries, replace=False))
    return folds, queried


class _Run:
    def __init__(self, load_corpus: Callable[[], Corpus], out: Path, cfg: PateConfig,
                 echo: Callable[[str], None]) -> None:
        self.out, self.cfg, self.echo = out, cfg, echo
        self.dir = run_dir_for(out)
        self._load = load_corpus
        self._corpus: tuple[list[str], list[str | None]] | None = None

    def corpus(self) -> tuple[list[str], list[str | None]]:
        """The de-duplicated private corpus, read on first use only."""
        if self._corpus is None:
            c = self._load()
            self.echo(f"read {c.source}: {len(c)} documents")
            self._source = c
            self._corpus = deduplicate(c.texts, c.labels)
        return self._corpus

    # ------------------------------------------------------------- step 1
    def first_releases(self, budget: BudgetHooks | None) -> tuple[dict, PrivacyLedger]:
        cfg = self.cfg
        texts, labels = self.corpus()
        classes = _classes(self._source, cfg.labels)
        specs = plan_noise(cfg.epsilon, cfg.delta, tutor=classes is None or len(classes) > 1,
                           vocab=cfg.labels is None, tutor_share=cfg.tutor_share,
                           vocab_share=cfg.vocab_share,
                           label_set_share=cfg.label_set_share if classes is None else None)
        if budget is not None:  # checked and charged before any release
            budget.charge(self._source, planned_releases(specs))
        ledger = PrivacyLedger()
        released: dict[str, Any] = {"tutor": None, "vocabulary": None}
        if classes is None:  # the DP label set: its classes, and no tutor for fewer than 2
            label_set = release_label_set(labels, specs[LABEL_SET], ledger=ledger)
            classes = list(label_set.values["label"])
            released["label_set"] = label_set.to_dict()
            if not classes:
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
            released["tutor"] = release(exact, TUTOR_SENSITIVITY, specs["tutor"], ledger=ledger,
                                        name="label histogram (tutor)").tolist()
        if "vocab" in specs:
            released["vocabulary"] = list(self._vocabulary(texts, specs["vocab"], ledger))
        self.dir.mkdir(parents=True, exist_ok=True)
        _save_ledger(ledger, self.dir / "ledger.json")
        _write_atomic(self.dir / "released.json", released)
        state = {"config": cfg.to_dict(), "layout": asdict(layout),
                 "noise": {s: asdict(n) for s, n in specs.items()},
                 "labels_from_data": cfg.labels is None and classes != [None]}
        _write_atomic(self.dir / "run.json", state)  # last: step 1 is complete
        return state, ledger

    def _vocabulary(self, texts: list[str], spec: NoiseSpec, ledger: PrivacyLedger):
        """DP-KPS's vocabulary release (the same function and noise floor), charged to this
        run's ledger."""
        from dptext.generators.kps import KeyphraseSeeder, release_vocabulary
        from dptext.text.vocabulary import load_vocabulary

        cfg = self.cfg
        vocab = load_vocabulary(cfg.vocab)
        return release_vocabulary(texts, vocab, spec, ledger, terms_per_doc=cfg.terms_per_doc,
                                  size=min(cfg.vocab_size, len(vocab)),
                                  noise_terms=KeyphraseSeeder.vocab_noise_terms,
                                  min_terms=cfg.words_per_prompt)


def run_pate(load_corpus: Callable[[], Corpus], out: str | Path, cfg: PateConfig, backend, *,
             resume: bool = False, cache: PromptCache | None = None, concurrency: int = 4,
             progress: bool = True, budget: BudgetHooks | None = None, embedder=None,
             echo: Callable[[str], None] = print) -> dict[str, Any]:
    """Run (or resume) ``pate``; write ``out`` (JSONL) and its privacy report; return the
    report. ``load_corpus`` is called only while a DP release is still to be made."""
    cfg.validate()
    out = Path(out)
    run = _Run(load_corpus, out, cfg, echo)
    run_json = run.dir / "run.json"
    if run_json.exists():
        if not resume:
            raise ValueError(f"{run.dir} exists from an earlier run: pass --resume to continue "
                             "it, or remove it to start a new one")
        state = json.loads(run_json.read_text(encoding="utf-8"))
        changed = sorted(k for k, v in cfg.to_dict().items()
                         if json.loads(json.dumps(v)) != state["config"].get(k))
        if changed:
            raise ValueError(f"--resume: {', '.join(changed)} differ from the interrupted run "
                             f"in {run.dir}; use the same options, or remove that folder to "
                             "start a new run (new DP noise)")
        ledger = PrivacyLedger.load(run.dir / "ledger.json")
        echo(f"resuming {run.dir}: {len(ledger.releases)} saved releases, no new DP noise")
    else:
        if run.dir.exists() and any(run.dir.iterdir()):
            raise ValueError(f"{run.dir} holds no complete first release (an earlier run "
                             "stopped before it); remove it to start a new run")
        state, ledger = run.first_releases(budget)
    layout = Layout(**state["layout"])
    released = json.loads((run.dir / "released.json").read_text(encoding="utf-8"))

    # ------------------------------------------------------------- step 2: candidates
    params = cfg.sampling
    if layout.label_mode:
        prompts, topics = label_prompts(cfg.document_type, [str(c) for c in layout.classes],
                                        layout.pool // len(layout.classes), params, cfg.seed)
    else:
        prompts = keyword_prompts(cfg.document_type, released["vocabulary"], layout.pool,
                                  cfg.words_per_prompt, params, cfg.seed)
        topics = [None] * layout.pool
    stats = RunStats()
    echo(f"public generator: {len(prompts)} candidate prompts to {backend.identity}")
    comps = run_prompts(backend, prompts, Journal(run.dir / "journal.jsonl"), cache,
                        concurrency, progress=progress, description="candidates", stats=stats)
    folds, queried = _public_split(layout, cfg.seed)
    cands = [Candidate(clean_completion(c.text, c.finish_reason == "length"), t, int(f))
             for c, t, f in zip(comps, topics, folds, strict=True)]
    write_jsonl((c.to_dict() for c in cands), run.dir / "candidates.jsonl")

    # ------------------------------------------------------------- step 3: teachers
    from dptext.embed import load_embedder

    emb = embedder if embedder is not None else load_embedder(cfg.embedder, cache_dir="")
    echo(f"embedding {len(cands)} candidates")
    x_cand = np.asarray(emb.encode([c.text for c in cands]), dtype=np.float64)
    votes_path = run.dir / "votes.json"
    if votes_path.exists():
        noisy = np.asarray(json.loads(votes_path.read_text())["noisy_votes"])
    else:
        noisy = _vote(run, layout, state, ledger, emb, x_cand, folds, queried)
        _save_ledger(ledger, run.dir / "ledger.json")  # before the votes leave the process
        _write_atomic(votes_path, {"queried": queried.tolist(), "noisy_votes": noisy.tolist()})

    # ------------------------------------------------------------- step 4: student, tutor
    scores = student_scores(x_cand[queried], noisy, x_cand)[:, :len(layout.classes)]
    eligible = np.array([[bool(c.text) and (not layout.label_mode or c.topic == str(k))
                          for k in layout.classes] for c in cands])
    counts = (tutor_counts(np.asarray(released["tutor"]), layout.documents)
              if released["tutor"] is not None else np.array([layout.documents]))
    chosen = select(scores, eligible, counts)
    records = [{"text": cands[i].text, "label": layout.classes[c],
                "student_score": round(float(scores[i, c]), 4)} for i, c in chosen]
    write_jsonl(records, out)
    if len(records) < layout.documents:
        echo(f"warning: only {len(records)} of {layout.documents} documents could be chosen "
             "(too few candidates for some class); raise --candidates-per-doc")

    report_params = {
        "method": "pate", **{k: v for k, v in cfg.to_dict().items() if k != "sampling"},
        "sampling": asdict(params), "llm": backend.identity, "llm_calls": len(prompts),
        "llm_calls_computed_this_run": stats.computed, "candidates": layout.pool,
        "queries_answered": layout.queries, "documents": len(records),
        "tutor_counts": counts.tolist(), "label_mode": layout.label_mode,
        "gnmax_sigma_per_query": _vote_sigma(ledger),
        "rdp_epsilon_cross_check": rdp_cross_check(ledger.releases, layout.queries,
                                                   _vote_name(ledger), cfg.delta),
        "data_dependent_analysis": False,
    }
    notes = [PUBLIC_GENERATOR_NOTE, DATA_INDEPENDENT_NOTE,
             *([LABELS_FROM_DATA] if state["labels_from_data"] else [])]
    report = build_report(ledger, command="generate --method pate", parameters=report_params,
                          notes=notes)
    write_report(report, report_path(out))
    return report


def _vote_name(ledger: PrivacyLedger) -> str:
    return next(r.name for r in ledger.releases if r.name.startswith(VOTES_RELEASE))


def _vote_sigma(ledger: PrivacyLedger) -> float:
    r = next(r for r in ledger.releases if r.name == _vote_name(ledger))
    return r.noise_scale


def _vote(run: _Run, layout: Layout, state: dict, ledger: PrivacyLedger, emb,
          x_cand: np.ndarray, folds: np.ndarray, queried: np.ndarray) -> np.ndarray:
    """Teachers on keyed-hash shards vote on the queried candidates; GNMax releases it."""
    texts, labels = run.corpus()
    index = {c: i for i, c in enumerate(layout.classes)}
    # documents of a label outside the public classes (not in the DP label set) take no part
    keep = [i for i, lab in enumerate(labels) if lab in index]
    texts, labels = [texts[i] for i in keep], [labels[i] for i in keep]
    y = np.array([index[lab] for lab in labels], dtype=np.int64)
    run.echo("embedding the private documents (in memory only)")
    x_priv = np.asarray(emb.encode(list(texts)), dtype=np.float64)
    shards = shard_of(texts, run.cfg.teachers, new_salt())
    started = time.perf_counter()
    run.echo(f"training 2 × {run.cfg.teachers} teachers and answering {layout.queries} queries")
    marks = set()

    def step(done: int, total: int) -> None:
        quarter = 4 * done // total
        if quarter not in marks and quarter > 0:
            marks.add(quarter)
            run.echo(f"  teachers: {done}/{total}")

    votes = teacher_votes(x_priv, y, shards, run.cfg.teachers, x_cand, folds, queried,
                          len(layout.classes), progress=step)
    del texts, labels, x_priv
    spec = NoiseSpec(**state["noise"]["votes"])
    noisy = gnmax(votes, spec, ledger)
    run.echo(f"teachers voted in {time.perf_counter() - started:.0f} s; GNMax released")
    return noisy
