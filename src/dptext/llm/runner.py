"""Run many prompts through a backend for hours without losing work.

Bounded concurrency (never above ``backend.max_concurrency``), retries with exponential
back-off and jitter on ``RetryableLLMError`` (time-outs, 429, 5xx; ``Retry-After``
honoured), a journal written as completions arrive (``--resume`` skips them), a shared
cache for identical prompts, and a progress bar with rate and ETA.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from dptext.llm.base import LLMBackend
from dptext.llm.errors import LLMError, RetryableLLMError
from dptext.llm.journal import Journal, PromptCache
from dptext.llm.types import Completion, Prompt


class RetriesExhaustedError(LLMError):
    """A prompt kept failing with retryable errors; other prompts may still succeed."""


#: stop submitting new prompts after this many prompts exhausted their retries
MAX_EXHAUSTED = 5


@dataclass
class RetryPolicy:
    max_retries: int = 6
    base_delay: float = 1.0
    max_delay: float = 60.0
    sleep: Callable[[float], None] = time.sleep

    def delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), self.max_delay)
        return random.uniform(0, min(self.max_delay, self.base_delay * 2 ** attempt))


CHECKS = ("loops_retried", "loops_trimmed", "refusals_retried", "refusals_left",
          "meta_stripped", "forms_retried", "forms_left")


@dataclass
class RunStats:
    total: int = 0
    from_journal: int = 0
    from_cache: int = 0
    computed: int = 0
    retries: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    # the document stage's checks (dptext.llm.quality), counted per completion or document
    loops_retried: int = 0     # completions with a repetition loop, asked again
    loops_trimmed: int = 0     # documents still looping after the last attempt, trimmed
    refusals_retried: int = 0  # completions that refused / spoke as an AI, asked again
    refusals_left: int = 0     # documents still a refusal after the last attempt
    meta_stripped: int = 0     # documents whose meta sentences were removed
    forms_retried: int = 0     # completions that were a form to fill in, asked again
    forms_left: int = 0        # documents still a form after the last attempt

    def checks(self) -> dict[str, int]:
        """The checks' counters, to save beside what they counted."""
        return {k: getattr(self, k) for k in CHECKS}

    def quality_summary(self) -> str:
        """One clause for a summary line: what the loop, refusal and form checks did."""
        return (f"loops {self.loops_retried} retried / {self.loops_trimmed} trimmed, "
                f"refusals {self.refusals_retried} retried / {self.refusals_left} left, "
                f"meta-text stripped from {self.meta_stripped}, placeholders or "
                f"scaffolding {self.forms_retried} retried / {self.forms_left} left")


def call_with_retries(backend: LLMBackend, prompt: Prompt, policy: RetryPolicy,
                      stats: RunStats | None = None) -> Completion:
    attempt = 0
    while True:
        try:
            return backend.complete([prompt])[0]
        except RetryableLLMError as e:
            if attempt >= policy.max_retries:
                raise RetriesExhaustedError(f"gave up after {attempt + 1} attempts: {e}") \
                    from None
            if stats is not None:
                stats.retries += 1
            policy.sleep(policy.delay(attempt, e.retry_after))
            attempt += 1


class _Progress:
    """A rich progress bar with count, docs/min, tokens/s, elapsed and ETA (stderr). The
    rates are this bar's own completions over its own time: a run's ``RunStats`` spans
    every phase (Aug-PE's iterations, retry rounds), so its totals would inflate them."""

    def __init__(self, total: int, description: str, enabled: bool) -> None:
        self._bar = None
        self._done = self._tokens = 0
        if not enabled or total == 0:
            return
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(TextColumn("{task.description}"), BarColumn(),
                             MofNCompleteColumn(), TextColumn("{task.fields[rate]}"),
                             TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
                             console=Console(stderr=True), transient=False)
        self._task = self._bar.add_task(description, total=total, rate="")
        self._start = time.monotonic()
        self._bar.start()

    def advance(self, completion: Completion) -> None:
        """One more completion computed (not from the journal or the cache)."""
        if self._bar is None:
            return
        self._done += 1
        self._tokens += completion.completion_tokens or 0
        el = max(time.monotonic() - self._start, 1e-9)
        rate = f"{self._done / el * 60:.1f} docs/min, {self._tokens / el:.0f} tok/s"
        self._bar.update(self._task, advance=1, rate=rate)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()


def run_prompts(backend: LLMBackend, prompts: Sequence[Prompt], journal: Journal | None = None,
                cache: PromptCache | None = None, concurrency: int = 4,
                retry: RetryPolicy | None = None, progress: bool = False,
                description: str = "generating", stats: RunStats | None = None
                ) -> list[Completion]:
    """One completion per prompt, in order. Identical prompts are computed once."""
    retry = retry or RetryPolicy()
    stats = stats if stats is not None else RunStats()
    t0 = time.monotonic()
    keys = [p.key(backend.identity) for p in prompts]
    results: dict[str, Completion] = {}
    todo: dict[str, Prompt] = {}
    for k, p in zip(keys, prompts, strict=True):
        if k in results or k in todo:
            continue
        if journal is not None and (c := journal.get(k)) is not None:
            results[k] = c
            stats.from_journal += 1
        elif cache is not None and (c := cache.get(k)) is not None:
            results[k] = c
            stats.from_cache += 1
            if journal is not None:
                journal.put(k, p, c)
        else:
            todo[k] = p
    stats.total += len(prompts)
    bar = _Progress(len(todo), description, progress)
    lock = threading.Lock()

    def work(k: str, p: Prompt) -> tuple[str, Completion] | None:
        if halted[0]:  # a prompt queued behind one that raised: not sent
            return None
        try:
            c = call_with_retries(backend, p, retry, stats)
        except LLMError:
            raise
        except BaseException:  # Ctrl-C or a bug, seen first by this thread: halt the queue
            halted[0] = True   # before this thread takes its next prompt
            raise
        if journal is not None:
            journal.put(k, p, c)
        if cache is not None:
            cache.put(k, None, c)
        return k, c

    workers = max(1, min(concurrency, getattr(backend, "max_concurrency", concurrency)))
    failures: list[BaseException] = []
    stop, halted = [False], [False]
    pending_items = iter(todo.items())
    try:
        with ThreadPoolExecutor(workers) as pool:
            running: set[Future] = set()

            def fill() -> None:
                while len(running) < workers * 2 and not (stop[0] or halted[0]):
                    item = next(pending_items, None)
                    if item is None:
                        return
                    running.add(pool.submit(work, *item))

            fill()
            try:
                while running:
                    done, _ = wait(running, return_when=FIRST_COMPLETED)
                    for f in done:
                        running.discard(f)
                        try:
                            done_item = f.result()
                        except LLMError as e:
                            failures.append(e)
                            exhausted = sum(isinstance(x, RetriesExhaustedError)
                                            for x in failures)
                            if not isinstance(e, RetriesExhaustedError) or \
                                    exhausted >= MAX_EXHAUSTED:
                                stop[0] = True
                            continue
                        if done_item is None:  # halted: the exception that halted it is due
                            continue
                        k, c = done_item
                        with lock:
                            results[k] = c
                            stats.computed += 1
                            stats.completion_tokens += c.completion_tokens or 0
                        bar.advance(c)
                    fill()
            except BaseException:  # Ctrl-C or a bug: drop queued prompts; running ones land
                for f in running:
                    f.cancel()
                raise
    finally:
        bar.close()
        stats.seconds += time.monotonic() - t0
    if failures:
        finished = sum(1 for k in todo if k in results)
        raise LLMError(f"{len(failures)} prompt(s) failed ({finished} of {len(todo)} new ones "
                       f"finished and journaled; re-run with --resume to continue): "
                       f"{failures[0]}")
    return [results[k] for k in keys]
