"""Completions under the quality checks of ``dptext.llm.quality``, for any prompts.

Each completion is cleaned, stripped of meta-text and checked for a repetition loop, a
refusal, a form to fill in (placeholders such as "[Insert Date]", scaffolding such as
"**Title:**") and (given keyphrases and ``min_coverage``) too few of its terms. Such an answer is
asked again with a new sampling seed (a loop also a little hotter), up to ``max_attempts``
in all; the best attempt is kept and a loop still in it trimmed. DP-KPS's document stage,
Aug-PE's texts and PATE's candidates all go through here, so that every method's LLM output
gets the same control and the same counts in ``RunStats``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from dptext.llm.base import LLMBackend
from dptext.llm.journal import Journal, PromptCache
from dptext.llm.prompts import clean_completion, keyphrase_coverage
from dptext.llm.quality import Loop, check_meta, find_loop, find_scaffolding, trim_loop
from dptext.llm.runner import RetryPolicy, RunStats, run_prompts
from dptext.llm.types import Prompt

#: ``prompt_for(index, attempt)``: the prompt of text ``index`` at attempt 0, 1, …
PromptFor = Callable[[int, int], Prompt]


@dataclass
class DocumentOptions:
    clean: bool = True
    document_type: str | None = None   # the clean-up strips a head label restating it
    # clean-up of an answer that stopped by itself without final punctuation: cut back to
    # its last full sentence (DP-KPS's documents); False: cut only at the token limit
    guess_truncation: bool = True
    min_coverage: float | None = None  # e.g. 0.5: retry when fewer than half the terms appear
    max_attempts: int = 3              # attempts per text (coverage, loops, refusals)
    concurrency: int = 4
    seed: int = 0                      # DP-KPS: per-sequence sampling seeds derive from it
    progress: bool = False
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    check_loops: bool = True           # retry, then trim, repetition loops (quality.find_loop)
    check_meta: bool = True            # retry refusals, strip meta-text (quality.check_meta)
    check_forms: bool = True           # retry placeholders/scaffolding (quality.find_scaffolding)
    loop_temperature_step: float = 0.1  # a loop's retry samples this much hotter per attempt


@dataclass(frozen=True)
class CheckedText:
    text: str
    coverage: float  # fraction of the keyphrases found in the text (1.0 without keyphrases)
    attempts: int    # LLM calls spent on it


def derive_seed(base: int, index: int, attempt: int) -> int:
    return (base * 1_000_003 + index * 101 + attempt * 7_919_993) % (2 ** 31 - 1)


def reseeding(prompts: Sequence[Prompt]) -> PromptFor:
    """``PromptFor`` of ready-made prompts: attempt 0 is the prompt as given (so journals of
    earlier runs still answer it), a retry the same prompt with a seed derived from its own."""
    def prompt_for(index: int, attempt: int) -> Prompt:
        p = prompts[index]
        if attempt == 0:
            return p
        return replace(p, params=replace(p.params,
                                         seed=derive_seed(p.params.seed or 0, 0, attempt)))
    return prompt_for


@dataclass
class _Attempt:
    text: str
    coverage: float
    loop: Loop | None
    refusal: bool
    stripped: bool
    form: bool  # a form to fill in (placeholders, scaffolding), not a document

    def rank(self) -> tuple:
        return (not self.refusal, not self.form, self.loop is None, self.coverage)


def _check(text: str, keyphrases: Sequence[str] | None, opts: DocumentOptions) -> _Attempt:
    meta = check_meta(text) if opts.check_meta else None
    if meta is not None:
        text = meta.text
    loop = find_loop(text) if opts.check_loops else None
    form = opts.check_forms and find_scaffolding(text) is not None
    return _Attempt(text, _coverage(text, keyphrases), loop, bool(meta and meta.refusal),
                    bool(meta and meta.stripped), form)


def _coverage(text: str, keyphrases: Sequence[str] | None) -> float:
    found, total = keyphrase_coverage(text, keyphrases) if keyphrases else (0, 0)
    return found / total if total else 1.0


def _hotter(prompt: Prompt, loops: int, step: float) -> Prompt:
    """A loop's retry: a new seed alone often falls into the same one."""
    if not loops:
        return prompt
    params = prompt.params
    t = min(params.temperature + loops * step, max(params.temperature, 1.2))
    return replace(prompt, params=replace(params, temperature=round(t, 4)))


def complete_checked(prompt_for: PromptFor, n: int, backend: LLMBackend,
                     options: DocumentOptions | None = None, journal: Journal | None = None,
                     cache: PromptCache | None = None, stats: RunStats | None = None,
                     keyphrases: Sequence[Sequence[str]] | None = None,
                     description: str = "documents") -> list[CheckedText]:
    """``n`` texts, text ``i`` from ``prompt_for(i, attempt)``, retried as the module says;
    ``stats`` counts every loop, refusal and form retried or left and every meta-text
    stripped."""
    opts = options or DocumentOptions()
    stats = stats if stats is not None else RunStats()
    best: list[_Attempt | None] = [None] * n
    attempts = [0] * n
    loops = [0] * n  # how many attempts of each text looped so far
    pending = list(range(n))
    rounds = max(1, opts.max_attempts)
    for attempt in range(rounds):
        if not pending:
            break
        prompts = [_hotter(prompt_for(i, attempt), loops[i], opts.loop_temperature_step)
                   for i in pending]
        desc = description if attempt == 0 else f"{description}, retry {attempt}"
        comps = run_prompts(backend, prompts, journal, cache, opts.concurrency, opts.retry,
                            opts.progress, desc, stats)
        still = []
        last = attempt == rounds - 1
        for i, c in zip(pending, comps, strict=True):
            attempts[i] += 1
            # at the token limit: truncated; stopped by itself: guessed, or taken as whole
            truncated = (True if c.finish_reason == "length"
                         else None if opts.guess_truncation else False)
            text = (clean_completion(c.text, truncated, opts.document_type) if opts.clean
                    else c.text.strip())
            a = _check(text, keyphrases[i] if keyphrases else None, opts)
            if best[i] is None or a.rank() > best[i].rank():  # type: ignore[union-attr]
                best[i] = a
            low = opts.min_coverage is not None and a.coverage < opts.min_coverage
            if (a.refusal or a.form or a.loop is not None or low) and not last:
                still.append(i)
                stats.refusals_retried += a.refusal
                stats.forms_retried += a.form
                stats.loops_retried += a.loop is not None
            loops[i] += a.loop is not None
        pending = still
    out = []
    for i in range(n):
        a: _Attempt = best[i]  # type: ignore[assignment]
        text, cov = a.text, a.coverage
        if a.loop is not None:
            text = trim_loop(text, a.loop)
            cov = _coverage(text, keyphrases[i] if keyphrases else None)
            stats.loops_trimmed += 1
        stats.refusals_left += a.refusal
        stats.forms_left += a.form
        stats.meta_stripped += a.stripped
        out.append(CheckedText(text, cov, attempts[i]))
    return out
