"""The document stage of DP-KPS: one LLM document per released keyphrase sequence.

Takes any objects with ``.label`` and ``.keyphrases`` (``KeyphraseSequence`` from
``dptext.generators.kps``, duck-typed so that this layer never imports the layers that
hold private data). The label is attached to the output, never put in the prompt.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from dptext.llm.base import LLMBackend
from dptext.llm.journal import Journal, PromptCache
from dptext.llm.prompts import PromptBuilder, clean_completion, keyphrase_coverage
from dptext.llm.quality import Loop, check_meta, find_loop, trim_loop
from dptext.llm.runner import RetryPolicy, RunStats, run_prompts
from dptext.llm.types import Prompt


class SeedSequence(Protocol):
    @property
    def label(self) -> str | None: ...

    @property
    def keyphrases(self) -> tuple[str, ...]: ...


@dataclass(frozen=True)
class SyntheticDocument:
    text: str
    label: str | None
    keyphrases: tuple[str, ...]
    coverage: float  # fraction of seed keyphrases found in the text
    attempts: int

    def to_dict(self) -> dict:
        return {"text": self.text, "label": self.label, "keyphrases": list(self.keyphrases)}


@dataclass
class DocumentOptions:
    clean: bool = True
    min_coverage: float | None = None  # e.g. 0.5: retry when fewer than half the terms appear
    max_attempts: int = 3              # attempts per sequence (coverage, loops, refusals)
    concurrency: int = 4
    seed: int = 0                      # per-sequence LLM sampling seeds derive from it
    progress: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    check_loops: bool = True           # retry, then trim, repetition loops (quality.find_loop)
    check_meta: bool = True            # retry refusals, strip meta-text (quality.check_meta)
    loop_temperature_step: float = 0.1  # a loop's retry samples this much hotter per attempt


def _seed(base: int, index: int, attempt: int) -> int:
    return (base * 1_000_003 + index * 101 + attempt * 7_919_993) % (2 ** 31 - 1)


def first_attempt_seed(opts: DocumentOptions, index: int) -> int:
    """The sampling seed of sequence ``index``'s first prompt."""
    return _seed(opts.seed, index, 0)


@dataclass
class _Attempt:
    text: str
    coverage: float
    loop: Loop | None
    refusal: bool
    stripped: bool

    def rank(self) -> tuple:
        return (not self.refusal, self.loop is None, self.coverage)


def _check(text: str, keyphrases: Sequence[str], opts: DocumentOptions) -> _Attempt:
    meta = check_meta(text) if opts.check_meta else None
    if meta is not None:
        text = meta.text
    loop = find_loop(text) if opts.check_loops else None
    found, total = keyphrase_coverage(text, keyphrases)
    return _Attempt(text, found / total if total else 1.0, loop,
                    bool(meta and meta.refusal), bool(meta and meta.stripped))


def _prompt(builder: PromptBuilder, keyphrases: Sequence[str], opts: DocumentOptions,
            index: int, attempt: int, hotter: int) -> Prompt:
    prompt = builder.build(keyphrases, _seed(opts.seed, index, attempt))
    if hotter:  # a loop: a new seed alone often falls into the same one
        params = prompt.params
        t = min(params.temperature + hotter * opts.loop_temperature_step,
                max(params.temperature, 1.2))
        prompt = replace(prompt, params=replace(params, temperature=round(t, 4)))
    return prompt


def generate_documents(sequences: Sequence[SeedSequence], backend: LLMBackend,
                       builder: PromptBuilder, options: DocumentOptions | None = None,
                       journal: Journal | None = None, cache: PromptCache | None = None,
                       stats: RunStats | None = None) -> list[SyntheticDocument]:
    """One document per sequence. An answer with a repetition loop or a refusal, or (with
    ``min_coverage``) too few of its keyphrases, is asked again with a new sampling seed
    (a loop also a little hotter), up to ``max_attempts`` in all; the best attempt is kept,
    a loop still in it is trimmed, meta sentences are stripped; ``stats`` counts each."""
    opts = options or DocumentOptions()
    stats = stats if stats is not None else RunStats()
    n = len(sequences)
    best: list[_Attempt | None] = [None] * n
    attempts = [0] * n
    loops = [0] * n  # how many attempts of each sequence looped so far
    pending = list(range(n))
    rounds = max(1, opts.max_attempts)
    for attempt in range(rounds):
        if not pending:
            break
        prompts = [_prompt(builder, sequences[i].keyphrases, opts, i, attempt, loops[i])
                   for i in pending]
        desc = "documents" if attempt == 0 else f"retry {attempt}"
        comps = run_prompts(backend, prompts, journal, cache, opts.concurrency, opts.retry,
                            opts.progress, desc, stats)
        still = []
        last = attempt == rounds - 1
        for i, c in zip(pending, comps, strict=True):
            attempts[i] += 1
            truncated = True if c.finish_reason == "length" else None
            text = clean_completion(c.text, truncated) if opts.clean else c.text
            a = _check(text, sequences[i].keyphrases, opts)
            if best[i] is None or a.rank() > best[i].rank():  # type: ignore[union-attr]
                best[i] = a
            low = opts.min_coverage is not None and a.coverage < opts.min_coverage
            if (a.refusal or a.loop is not None or low) and not last:
                still.append(i)
                stats.refusals_retried += a.refusal
                stats.loops_retried += a.loop is not None
            loops[i] += a.loop is not None
        pending = still
    out = []
    for i, s in enumerate(sequences):
        a: _Attempt = best[i]  # type: ignore[assignment]
        text, cov = a.text, a.coverage
        if a.loop is not None:
            text = trim_loop(text, a.loop)
            found, total = keyphrase_coverage(text, s.keyphrases)
            cov = found / total if total else 1.0
            stats.loops_trimmed += 1
        stats.refusals_left += a.refusal
        stats.meta_stripped += a.stripped
        out.append(SyntheticDocument(text, s.label, tuple(s.keyphrases), cov, attempts[i]))
    return out
