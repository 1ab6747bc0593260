"""Aug-PE (Xie et al. 2024): private evolution of LLM-written texts toward a private corpus.

Iteration 0 asks the LLM for a population of N texts per class from the document type
alone (AugPE) or with random words of the DP vocabulary Ṽ (AugPE+Ṽ, the DP-KPS
paper's variant). Iteration t = 1..T: each private document votes for its nearest
synthetic text of its class, the vote histograms are released with Gaussian noise
(``privacy.py``), parents are drawn from the noisy histograms (``select.py``) and each
parent gets one variation prompt (fill-in-the-blanks or paraphrase, ``prompts.py``).
A run of T iterations makes N·(1+T) prompts; population t is what N·(1+t) prompts buy.

Classes are the public label set; class names stay out of the prompts unless
``class_names`` opts in to the original variant (the report then says so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dptext.compute import DEFAULT_BATCH, current_engine, map_sum
from dptext.corpus import Corpus
from dptext.generators.augpe.privacy import (
    BLOCK,
    VOCAB_STAGE,
    VoteCounts,
    plan_noise,
    release_histograms,
    vote_stage,
)
from dptext.generators.augpe.prompts import (
    BLANK,
    VARIATIONS,
    initial_prompt,
    prompt_seed,
    variation_prompt,
)
from dptext.generators.augpe.select import SELECTIONS, select_parents
from dptext.generators.augpe.state import Population, RunState
from dptext.llm import (
    DocumentOptions,
    Journal,
    LLMBackend,
    Prompt,
    PromptCache,
    RunStats,
    SamplingParams,
    complete_checked,
    reseeding,
)
from dptext.llm.runner import CHECKS
from dptext.privacy import NoiseSpec, PrivacyLedger

CLASS_NAMES_NOTE = ("LEAKS: the class names were put in the prompts in the clear "
                    "(--augpe-class-names, the original Aug-PE variant); the guarantee covers "
                    "the vote histograms only, not what the class names reveal.")
LLM_NOTE = ("The LLM sees only the document type, random words of the DP vocabulary and "
            "earlier synthetic texts: post-processing of the DP releases.")


@dataclass(frozen=True)
class AugPEConfig:
    """What fixes an Aug-PE run besides (ε, δ), the LLM and the seed."""

    document_type: str = "document"
    per_class: int = 10  # population N_c of every class
    iterations: int = 9  # T vote releases; T + 1 prompts per population member
    selection: str = "sample"
    threshold: float = 0.0  # noisy counts below it do not reproduce (selection "sample")
    copies: int = 2  # selection "rank": variations of each of the top N_c / copies
    variation: str = "mixed"
    mask_rate: float = 0.5  # fraction of words blanked for fill-in-the-blanks
    random_words: int = 5  # Ṽ words per initial prompt; 0 = plain AugPE (no vocabulary)
    vocab: str = "english:20000"
    vocab_size: int = 1000
    terms_per_doc: int = 80
    vocab_noise_terms: float = 10.0
    vocab_share: float = 0.2  # share of the budget (in μ²) spent on Ṽ
    label_set_share: float = 0.1  # ... on the DP label set, when the labels are not declared
    embedder: Any = "minilm"
    class_names: bool = False
    target_words: int | None = None  # None: 0.6 words per token of max_tokens
    max_tokens: int = 160
    temperature: float = 0.8
    top_p: float = 0.95
    clean: bool = True

    def validate(self) -> None:
        for name in ("per_class", "iterations", "copies", "vocab_size", "terms_per_doc",
                     "max_tokens"):
            v = getattr(self, name)
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 1):
                raise ValueError(f"{name} must be a positive integer, got {v!r}")
        if not (isinstance(self.random_words, int) and self.random_words >= 0):
            raise ValueError(f"random_words must be an integer >= 0, got {self.random_words!r}")
        if self.selection not in SELECTIONS:
            raise ValueError(f"selection must be one of {', '.join(SELECTIONS)}")
        if self.variation not in VARIATIONS:
            raise ValueError(f"variation must be one of {', '.join(VARIATIONS)}")
        if not 0 < self.mask_rate < 1:
            raise ValueError(f"mask_rate must be in (0, 1), got {self.mask_rate!r}")

    def noise(self, epsilon: float, delta: float, label_set: bool = False
              ) -> dict[str, NoiseSpec]:
        """The plan; ``label_set``: the labels are not declared, so the run releases the DP
        label set first (``privacy.labels``)."""
        self.validate()
        return plan_noise(epsilon, delta, self.iterations,
                          self.vocab_share if self.random_words else None,
                          self.label_set_share if label_set else None)

    def words(self) -> int:
        return self.target_words or max(10, round(0.6 * self.max_tokens))

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["embedder"] = self.embedder if isinstance(self.embedder, str) else "custom"
        return d


@dataclass
class AugPEResult:
    populations: list[Population]  # after iteration t = 0..T
    ledger: PrivacyLedger
    vocabulary: tuple[str, ...] | None
    counts: list[dict]  # population t's LLM calls (retries included) and checks' counts
    stats: RunStats = field(default_factory=RunStats)

    @property
    def prompts(self) -> list[int]:
        """LLM calls the run had made when population t was complete."""
        return [int(n) for n in np.cumsum([c["llm_calls"] for c in self.counts])]

    @property
    def check_counts(self) -> dict[str, int]:
        """The loop / refusal checks' counts over every population, resumed ones too."""
        total = dict.fromkeys(CHECKS, 0)
        for c in self.counts:
            for k, v in c["checks"].items():
                total[k] += v
        return total


def _class_of(corpus: Corpus, classes: list) -> dict:
    index = corpus.class_indices()
    return {c: index.get(c, np.empty(0, dtype=np.int64)) for c in classes}


class _Evolution:
    """One run: its config, budget plan, LLM and state directory."""

    def __init__(self, corpus: Corpus, cfg: AugPEConfig, noise: dict[str, NoiseSpec],
                 backend: LLMBackend, state: RunState, *, classes: list, seed: int,
                 epsilon_cap: float | None, journal: Journal, cache: PromptCache | None,
                 concurrency: int, progress: bool, say: Callable[[str], None],
                 stats: RunStats | None = None) -> None:
        self.corpus, self.cfg, self.noise, self.backend, self.state = (
            corpus, cfg, noise, backend, state)
        self.classes, self.seed, self.say = classes, seed, say
        self.ledger = state.ledger(epsilon_cap)
        self.run_opts = dict(journal=journal, cache=cache)
        self.checks = DocumentOptions(clean=cfg.clean, document_type=cfg.document_type,
                                      guess_truncation=False,
                                      concurrency=concurrency, progress=progress)
        self.stats = stats if stats is not None else RunStats()
        self.params = SamplingParams(cfg.max_tokens, cfg.temperature, cfg.top_p)
        self._embedder = None
        self._private: list | None = None
        self._said_ray = False

    # ---------------------------------------------------------------- helpers
    def embedder(self):
        if self._embedder is None:
            from dptext.embed import load_embedder

            # no cache: private documents must never be written to the embedding cache
            self._embedder = load_embedder(self.cfg.embedder, cache_dir=None) \
                if isinstance(self.cfg.embedder, str) else self.cfg.embedder
        return self._embedder

    def _members(self) -> list[tuple[int, int]]:
        """(document index, class position) of every private document of a public class
        (a document of a label outside them votes nowhere)."""
        by_class = _class_of(self.corpus, self.classes)
        return [(int(i), k) for k, c in enumerate(self.classes) for i in by_class[c]]

    def private_embeddings(self) -> list[tuple[np.ndarray, int]]:
        """The local engine's vote items: (embedding, class position) per private document,
        embedded once per run (no cache) and reused by every iteration."""
        if self._private is None:
            self.say("embedding the private documents (no cache)")
            emb = np.asarray(self.embedder().encode(list(self.corpus.texts)), dtype=np.float32)
            self._private = [(emb[i], k) for i, k in self._members()]
        return self._private

    def vote_counts(self, by_class: dict) -> np.ndarray:
        """Exact votes of every class, int64 ``(classes, max population)``, as a
        ``map_sum`` over the private documents on the current compute engine.

        Local engine: the documents' embeddings from ``private_embeddings`` (embedded once
        per run). Ray: the workers receive (text, class position) batches and the batch
        function with the public synthetic embeddings and the embedder's name (or the
        embedder, pickled), and embed their batch themselves, again every iteration (no
        private embedding is kept on the driver or in the object store between
        iterations); the noise is added afterwards, on the driver, by ``release``.
        """
        synthetic = [by_class[c] for c in self.classes]
        if current_engine().name == "local":
            return map_sum(VoteCounts(synthetic), self.private_embeddings(), BLOCK)
        if not self._said_ray:
            self._said_ray = True
            self.say("the Ray workers embed the private documents (no cache), every "
                     "iteration")
        texts = self.corpus.texts
        return map_sum(VoteCounts(synthetic, self.cfg.embedder),
                       ((texts[i], k) for i, k in self._members()), DEFAULT_BATCH)

    def _name(self, c) -> str | None:
        return str(c) if self.cfg.class_names else None

    def _complete(self, prompts: list[Prompt], fallback: list[str], t: int
                  ) -> tuple[list[str], dict]:
        """The texts (loops and refusals asked again, as DP-KPS's documents are), and the
        LLM calls they took with the checks' counts (``RunState.save_population``)."""
        before = self.stats.checks()
        done = complete_checked(reseeding(prompts), len(prompts), self.backend, self.checks,
                                stats=self.stats, description=f"AugPE iteration {t}",
                                **self.run_opts)
        # an empty answer, or one that left blanks unfilled, keeps the parent
        texts = [d.text if d.text and BLANK not in d.text.split() else f
                 for d, f in zip(done, fallback, strict=True)]
        counts = {k: v - before[k] for k, v in self.stats.checks().items()}
        return texts, {"llm_calls": sum(d.attempts for d in done), "checks": counts}

    # ---------------------------------------------------------------- the steps
    def vocabulary(self) -> tuple[str, ...] | None:
        if not self.cfg.random_words:
            return None
        words = self.state.vocabulary()
        if words is None:
            from dptext.generators.kps.releases import release_vocabulary
            from dptext.text.vocabulary import load_vocabulary

            self.say("releasing the DP vocabulary Ṽ")
            before = len(self.ledger.releases)
            words = release_vocabulary(
                self.corpus.texts, load_vocabulary(self.cfg.vocab), self.noise[VOCAB_STAGE],
                self.ledger, terms_per_doc=self.cfg.terms_per_doc, size=self.cfg.vocab_size,
                noise_terms=self.cfg.vocab_noise_terms, min_terms=self.cfg.random_words)
            self.state.save_vocabulary(words, self.ledger.releases[before:])
        return words

    def initial(self, words: tuple[str, ...] | None) -> tuple[Population, dict]:
        rng = np.random.default_rng([self.seed, 0])
        prompts, labels = [], []
        for c in self.classes:
            for _ in range(self.cfg.per_class):
                picked = tuple(rng.choice(words, size=min(self.cfg.random_words, len(words)),
                                          replace=False)) if words else ()
                params = dataclasses.replace(
                    self.params, seed=prompt_seed(self.seed, 0, len(prompts)))
                prompts.append(initial_prompt(self.cfg.document_type, picked,
                                              self.cfg.words(), params, self._name(c)))
                labels.append(c)
        texts, counts = self._complete(prompts, [""] * len(prompts), 0)
        return list(zip(texts, labels, strict=True)), counts

    def votes(self, t: int, population: Population) -> dict:
        hist = self.state.votes(t)
        if hist is not None:
            return hist
        syn = np.asarray(self.embedder().encode([text for text, _ in population]),
                         dtype=np.float32)
        labels = [label for _, label in population]
        by_class = {c: syn[[i for i, lab in enumerate(labels) if lab == c]]
                    for c in self.classes}
        counts = self.vote_counts(by_class)
        before = len(self.ledger.releases)
        hist = release_histograms(
            {c: counts[k, :len(by_class[c])] for k, c in enumerate(self.classes)},
            self.noise[vote_stage(t)], self.ledger, t)
        self.state.save_votes(t, hist, self.ledger.releases[before:])  # before any prompt
        return hist

    def evolve(self, t: int, population: Population, hist: dict) -> tuple[Population, dict]:
        rng = np.random.default_rng([self.seed, t])
        prompts, parents = [], []
        for c in self.classes:
            members = [text for text, label in population if label == c]
            for j in select_parents(hist[c], self.cfg.per_class, mode=self.cfg.selection,
                                    threshold=self.cfg.threshold, copies=self.cfg.copies,
                                    rng=rng):
                kind = self.cfg.variation if self.cfg.variation != "mixed" else (
                    "blank" if rng.random() < 0.5 else "paraphrase")
                params = dataclasses.replace(
                    self.params, seed=prompt_seed(self.seed, t, len(prompts)))
                prompts.append(variation_prompt(
                    kind, members[j], self.cfg.document_type, self.cfg.words(), params,
                    mask_rate=self.cfg.mask_rate, rng=rng, class_name=self._name(c)))
                parents.append((members[j], c))
        texts, counts = self._complete(prompts, [p for p, _ in parents], t)
        return [(text, c) for text, (_, c) in zip(texts, parents, strict=True)], counts

    def run(self) -> AugPEResult:
        words = self.vocabulary()
        pops: list[Population] = []
        counts: list[dict] = []
        pop = self.state.population(0)
        if pop is None:
            pop, made = self.initial(words)
            self.state.save_population(0, pop, made)
        pops.append(pop)
        counts.append(self.state.counts(0))
        self.say(f"iteration 0: {len(pop)} initial texts")
        for t in range(1, self.cfg.iterations + 1):
            saved = self.state.population(t)
            if saved is None:
                hist = self.votes(t, pop)
                saved, made = self.evolve(t, pop, hist)
                self.state.save_population(t, saved, made)
                self.say(f"iteration {t}/{self.cfg.iterations}: vote histograms released "
                         f"(σ = {self.ledger.releases[-1].noise_scale:.3g}), "
                         f"{len(saved)} variations; spent so far {self.ledger.guarantee()}")
            pop = saved
            pops.append(pop)
            counts.append(self.state.counts(t))
        return AugPEResult(pops, self.ledger, words, counts, self.stats)


def run_augpe(corpus: Corpus, cfg: AugPEConfig, noise: dict[str, NoiseSpec],
              backend: LLMBackend, run_dir, *, classes: list, seed: int,
              epsilon_cap: float | None = None, cache: PromptCache | None = None,
              concurrency: int = 4, progress: bool = False,
              say: Callable[[str], None] = lambda msg: None, journal: Journal | None = None,
              stats: RunStats | None = None) -> AugPEResult:
    """Run (or resume) Aug-PE in ``run_dir``; finished iterations are read back, not redone.

    ``noise`` is ``cfg.noise(ε, δ)``; ``classes`` the public label set (``[None]`` for an
    unlabelled corpus). The caller (the run lifecycle) keeps the run's options and checks
    them before resuming. ``journal``: the run's journal of completions (default
    ``run_dir/journal.jsonl``).
    """
    state = RunState(run_dir)
    journal = journal if journal is not None else Journal(state.dir / "journal.jsonl")
    return _Evolution(corpus, cfg, noise, backend, state, classes=classes, seed=seed,
                      epsilon_cap=epsilon_cap, journal=journal, cache=cache,
                      concurrency=concurrency, progress=progress, say=say, stats=stats).run()

