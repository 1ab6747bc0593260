import threading
import time

import pytest

from dptext.llm import (
    DocumentOptions,
    Journal,
    LLMError,
    PromptBuilder,
    RetryPolicy,
    RunStats,
    generate_documents,
    run_prompts,
)
from dptext.llm.errors import RetryableLLMError
from dptext.llm.recording import RecordingBackend
from dptext.llm.types import Completion


class Seq:
    def __init__(self, label, keyphrases):
        self.label, self.keyphrases = label, tuple(keyphrases)


def _prompts(n):
    return [PromptBuilder("note").build([f"t{i}"], seed=i) for i in range(n)]


def test_retries_with_backoff_on_retryable_errors():
    sleeps = []
    backend = RecordingBackend(fail_first=3)
    stats = RunStats()
    out = run_prompts(backend, _prompts(2), retry=RetryPolicy(sleep=sleeps.append),
                      concurrency=1, stats=stats)
    assert len(out) == 2 and stats.retries == 3 and len(sleeps) == 3
    assert sleeps == [0.0, 0.0, 0.0]  # Retry-After: 0 honoured


def test_backoff_grows_and_is_capped():
    pol = RetryPolicy(base_delay=1, max_delay=5)
    import random
    random.seed(0)
    assert all(0 <= pol.delay(a, None) <= min(5, 2 ** a) for a in range(10))
    assert pol.delay(3, 100.0) == 5


def test_gives_up_after_max_retries_and_keeps_finished_work(tmp_path):
    class Flaky(RecordingBackend):
        def complete(self, prompts):
            if "t3" in prompts[0].text():
                raise RetryableLLMError("HTTP 503 from server")
            return super().complete(prompts)

    j = Journal(tmp_path / "j.jsonl")
    with pytest.raises(LLMError, match="--resume"):
        run_prompts(Flaky(), _prompts(5), journal=j, concurrency=1,
                    retry=RetryPolicy(max_retries=2, sleep=lambda s: None))
    assert len(Journal(tmp_path / "j.jsonl")) == 4


def test_permanent_error_is_not_retried():
    class Bad(RecordingBackend):
        def complete(self, prompts):
            self.calls += 1
            raise LLMError("HTTP 401 from server: bad key")

    b = Bad()
    with pytest.raises(LLMError, match="401"):
        run_prompts(b, _prompts(1), retry=RetryPolicy(sleep=lambda s: None))
    assert b.calls == 1


def test_concurrency_is_bounded():
    active, peak, lock = [0], [0], threading.Lock()

    class Slow(RecordingBackend):
        max_concurrency = 3

        def complete(self, prompts):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.02)
            with lock:
                active[0] -= 1
            return super().complete(prompts)

    out = run_prompts(Slow(), _prompts(20), concurrency=16)
    assert len(out) == 20 and peak[0] <= 3 and peak[0] >= 2



def test_a_progress_bar_rates_only_its_own_completions(capsys):
    """A run's stats span its phases (Aug-PE's iterations, retry rounds); a later phase's
    bar must not divide the run's totals by its own few seconds."""
    import re

    class Slow(RecordingBackend):
        def complete(self, prompts):
            time.sleep(0.05)
            return [Completion("ten words " * 5, "stop", 5, 10) for _ in prompts]

    stats = RunStats(computed=100_000, completion_tokens=1_000_000)  # earlier phases
    run_prompts(Slow(), _prompts(4), concurrency=1, progress=True, stats=stats)
    err = capsys.readouterr().err
    docs, tokens = (float(x) for x in re.search(r"([\d.]+) docs/min, (\d+) tok/s",
                                                 err).groups())
    # 4 completions of 10 tokens, one at a time, each at least 0.05 s
    assert 0 < docs <= 4 / 0.2 * 60 and 0 < tokens <= 40 / 0.2
    assert stats.computed == 100_004 and stats.completion_tokens == 1_000_040

def test_results_keep_prompt_order():
    out = run_prompts(RecordingBackend(), _prompts(30), concurrency=4)
    assert [c.text.split("mentions ")[1].rstrip(".") for c in out] == [f"t{i}" for i in
                                                                       range(30)]


def test_documents_carry_labels_but_prompts_do_not():
    seqs = [Seq("SECRET_LABEL_sport", ["goal", "match"]), Seq(None, ["vote"])]
    rec = RecordingBackend()
    docs = generate_documents(seqs, rec, PromptBuilder("news article"))
    assert [d.label for d in docs] == ["SECRET_LABEL_sport", None]
    assert docs[0].text == "The note mentions goal. The note mentions match."
    assert docs[0].coverage == 1.0
    assert all("SECRET_LABEL" not in p.text() for p in rec.prompts)
    assert docs[0].to_dict() == {"text": docs[0].text, "label": "SECRET_LABEL_sport",
                                 "keyphrases": ["goal", "match"]}


def test_low_coverage_retries_with_a_new_seed_and_keeps_the_best():
    seen_seeds = []

    def answer(prompt):
        seen_seeds.append(prompt.params.seed)
        return "Mentions alpha only." if len(seen_seeds) < 3 else "alpha and beta."

    rec = RecordingBackend(answer=answer)
    docs = generate_documents([Seq("x", ["alpha", "beta"])], rec, PromptBuilder("note"),
                              DocumentOptions(min_coverage=1.0, max_attempts=3))
    assert len(set(seen_seeds)) == 3
    assert docs[0].attempts == 3 and docs[0].coverage == 1.0
    assert docs[0].text == "alpha and beta."


def test_no_retry_when_coverage_check_off():
    rec = RecordingBackend(answer=lambda p: "nothing.")
    docs = generate_documents([Seq("x", ["alpha"])], rec, PromptBuilder("note"))
    assert docs[0].coverage == 0.0 and docs[0].attempts == 1 and len(rec.prompts) == 1


def test_a_head_label_restating_the_document_type_is_stripped():
    rec = RecordingBackend(answer=lambda p: 'Consumer complaint: "My card was charged twice."')
    seqs = [Seq("x", ["card"])]
    docs = generate_documents(seqs, rec, PromptBuilder("consumer complaint"),
                              DocumentOptions(document_type="consumer complaint"))
    assert docs[0].text == "My card was charged twice."
    kept = generate_documents(seqs, rec, PromptBuilder("consumer complaint"))
    assert kept[0].text.startswith("Consumer complaint:")  # no type given: nothing to match


def test_truncated_completion_is_cut_to_last_sentence():
    class Trunc(RecordingBackend):
        def complete(self, prompts):
            return [Completion("Alpha was seen. Beta was se", "length") for _ in prompts]

    docs = generate_documents([Seq(None, ["alpha"])], Trunc(), PromptBuilder("note"))
    assert docs[0].text == "Alpha was seen."


def test_interrupt_cancels_queued_prompts_and_keeps_journaled_ones(tmp_path):
    class Interrupting(RecordingBackend):
        max_concurrency = 1

        def complete(self, prompts):
            out = super().complete(prompts)
            if len(self.prompts) == 3:
                raise KeyboardInterrupt
            return out

    j = Journal(tmp_path / "j.jsonl")
    b = Interrupting()
    with pytest.raises(KeyboardInterrupt):
        run_prompts(b, _prompts(10), journal=j, concurrency=1)
    assert len(b.prompts) == 3                   # the queued prompt was not sent
    done = len(Journal(tmp_path / "j.jsonl"))
    assert done == 2
    b2 = RecordingBackend()
    run_prompts(b2, _prompts(10), journal=Journal(tmp_path / "j.jsonl"))
    assert len(b2.prompts) == 8
