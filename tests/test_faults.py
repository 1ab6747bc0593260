"""Fault injection against a real HTTP server on 127.0.0.1 (``fault_server.FaultServer``).

The LLM backend times out, answers 429 or 500, returns malformed JSON, a body cut short or
a truncated text, resets connections, or dies mid-run; the ``dptext generate`` process is
killed with SIGKILL mid-run and resumed. Each time: every document is produced, none is
lost or duplicated, finished ones are not recomputed, and no extra privacy is spent.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from dptext.generators.kps import KeyphraseSequence
from dptext.llm import (
    DocumentOptions,
    Journal,
    LLMError,
    PromptBuilder,
    RetryPolicy,
    RunStats,
    SamplingParams,
    generate_documents,
    make_backend,
)
from fault_server import FAULTS, FaultServer, cycle, first_attempts

SRC = Path(__file__).parents[1] / "src"
FAST_RETRY = RetryPolicy(max_retries=8, base_delay=0.01, max_delay=0.05)


def _sequences(n: int) -> list[KeyphraseSequence]:
    words = ["market", "football", "election", "bank", "film", "goal", "vote", "album",
             "profit", "team", "court", "music", "price", "coach", "party", "actor"]
    rng = random.Random(0)
    return [KeyphraseSequence(f"c{i % 3}", tuple(rng.sample(words, 3))) for i in range(n)]


def _run(server: FaultServer, seqs, journal: Path, *, retry=FAST_RETRY, concurrency=3,
         stats: RunStats | None = None):
    backend = make_backend(f"openai:test-model@{server.url}", timeout=0.5)
    builder = PromptBuilder("news article", params=SamplingParams(max_tokens=50))
    opts = DocumentOptions(concurrency=concurrency, seed=1, retry=retry)
    try:
        return generate_documents(seqs, backend, builder, opts, Journal(journal), None, stats)
    finally:
        backend.close()


def _journal_keys(path: Path) -> list[str]:
    return [json.loads(line)["key"] for line in path.read_text().splitlines() if line.strip()]


@pytest.mark.parametrize("fault", [f for f in FAULTS if f not in ("ok", "truncated-text")])
def test_each_fault_is_retried_until_every_document_is_done(tmp_path, fault):
    seqs = _sequences(8)
    with FaultServer(first_attempts(fault, 2), hang=1.0) as server:
        stats = RunStats()
        docs = _run(server, seqs, tmp_path / "j.jsonl", stats=stats)
    assert len(docs) == 8 and all(d.text.startswith("Document ") for d in docs)
    assert [d.keyphrases for d in docs] == [s.keyphrases for s in seqs]  # in order
    assert server.served[fault] == 16 and stats.retries == 16
    assert len(server.ok_prompts) == 8  # each document computed exactly once
    keys = _journal_keys(tmp_path / "j.jsonl")
    assert len(keys) == len(set(keys)) == 8


def test_truncated_text_is_cut_back_to_the_last_full_sentence(tmp_path):
    with FaultServer(cycle("truncated-text")) as server:
        docs = _run(server, _sequences(4), tmp_path / "j.jsonl")
    assert server.served["truncated-text"] == 4
    assert all(d.text.endswith("was complete.") for d in docs)


def test_chaos_every_fault_at_random(tmp_path):
    rng = random.Random(7)
    plan_faults = [rng.choice(FAULTS) if rng.random() < 0.5 else "ok" for _ in range(2000)]
    seqs = _sequences(24)
    with FaultServer(lambda n, attempt: plan_faults[n] if attempt < 4 else "ok",
                     hang=1.0) as server:
        docs = _run(server, seqs, tmp_path / "j.jsonl", concurrency=4)
    assert len(docs) == 24 and len({d.text for d in docs}) == 24
    keys = _journal_keys(tmp_path / "j.jsonl")
    assert len(keys) == len(set(keys)) == 24
    assert sum(server.served[f] for f in FAULTS if f not in ("ok", "truncated-text")) >= 10


def test_server_dies_mid_run_then_resume_loses_and_repeats_nothing(tmp_path):
    seqs = _sequences(12)
    journal = tmp_path / "j.jsonl"
    with FaultServer(die_after=5) as first:
        port = first.port
        with pytest.raises(LLMError, match="--resume"):
            _run(first, seqs, journal, concurrency=2,
                 retry=RetryPolicy(max_retries=2, base_delay=0.01, max_delay=0.02))
    before = {json.loads(x)["key"]: json.loads(x)["completion"]["text"]
              for x in journal.read_text().splitlines()}
    assert len(before) >= 5
    with FaultServer(port=port) as second:  # the server comes back on the same address
        stats = RunStats()
        docs = _run(second, seqs, journal, stats=stats)
    assert len(docs) == 12
    assert stats.from_journal == len(before)
    assert len(second.ok_prompts) == 12 - len(before)  # finished ones not recomputed
    texts = {d.text for d in docs}
    assert set(before.values()) <= texts  # no finished document lost
    keys = _journal_keys(journal)
    assert len(keys) == len(set(keys)) == 12  # none duplicated


# ------------------------------------------------------------------ secrets
API_KEY = "sk-dptext-test-4f9c2b7e1a0d-DO-NOT-LEAK"


def test_a_server_echoing_the_key_never_gets_it_into_errors_or_journal(tmp_path, monkeypatch,
                                                                         caplog):
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    journal = tmp_path / "j.jsonl"
    with FaultServer(first_attempts("echo-500", 1)) as server:
        docs = _run(server, _sequences(3), journal)
    assert len(docs) == 3 and set(server.auth) == {f"Bearer {API_KEY}"}
    with FaultServer(first_attempts("echo-401", 1)) as server, \
            pytest.raises(LLMError) as err:
        _run(server, _sequences(2), tmp_path / "j2.jsonl")
    assert "HTTP 401" in str(err.value) and "****" in str(err.value)
    for text in (str(err.value), repr(err.value), caplog.text, journal.read_text(),
                 repr(make_backend(f"openai:m@{server.url}"))):
        assert API_KEY not in text


def test_key_file_is_read_and_stripped(tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    (tmp_path / "k").write_text(f"  {API_KEY}\n")
    monkeypatch.setenv("OPENAI_API_KEY_FILE", str(tmp_path / "k"))
    with FaultServer() as server:
        _run(server, _sequences(1), tmp_path / "j.jsonl")
    assert server.auth == [f"Bearer {API_KEY}"]


# ------------------------------------------------------------------ SIGKILL and resume


@pytest.fixture(scope="module")
def corpus_csv(tmp_path_factory):
    import pandas as pd

    from dptext.corpus import read_corpus

    train = read_corpus("demo:bbc-news/train")
    idx = np.random.default_rng(0).choice(len(train), 150, replace=False)
    path = tmp_path_factory.mktemp("corpus") / "c.csv"
    pd.DataFrame({"text": [train.texts[i] for i in idx],
                  "label": [train.labels[i] for i in idx]}).to_csv(path, index=False)
    return path


def _generate(corpus_csv, out, url, home, extra=(), key_file=None):
    env = {**os.environ, "PYTHONPATH": str(SRC), "DPTEXT_HOME": str(home),
           "DPTEXT_CACHE": str(home / "cache"), "OPENAI_API_KEY": API_KEY}
    if key_file is not None:
        env.pop("OPENAI_API_KEY")
        env["OPENAI_API_KEY_FILE"] = str(key_file)
    args = [sys.executable, "-m", "dptext", "generate", "-i", str(corpus_csv), "-o", str(out),
            "--label-column", "label", "--llm", f"openai:test-model@{url}",
            "--vocab", "english:3000", "--embedder", "minilm", "--features", "50",
            "--vocab-size", "200", "--length", "4", "--sequence-method", "independent",
            "--sequences-per-class", "8", "--no-progress",
            "--labels", "business,entertainment,politics,sports,tech",
            "--no-cache", "--concurrency", "2", "--timeout", "2", "--seed", "3",
            "--budget-total", "10",
            # no form profile: the documents stay the journaled completions (with "auto",
            # a private selection that chose the form would append a link to each)
            "--form", "off", *extra]
    return subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)


@pytest.mark.slow
def test_sigkill_mid_run_and_resume(tmp_path, corpus_csv):
    home = tmp_path / "home"
    out = tmp_path / "synthetic.jsonl"
    run = tmp_path / "synthetic.jsonl.run"
    journal = run / "journal.jsonl"
    key_file = tmp_path / "key.txt"
    key_file.write_text(API_KEY + "\n")
    faults = ("429", "500", "malformed", "ok")  # a first attempt may fail; the retry succeeds

    def plan(n: int, attempt: int) -> str:
        return faults[n % len(faults)] if attempt == 0 else "ok"

    with FaultServer(plan, delay=0.3, max_seconds=240) as server:
        proc = _generate(corpus_csv, out, server.url, home)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and proc.poll() is None:
            if journal.exists() and len(journal.read_text().splitlines()) >= 6:
                break
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[0][-3000:]
        proc.send_signal(signal.SIGKILL)
        first_log = proc.communicate(timeout=30)[0]
        assert proc.returncode == -signal.SIGKILL
        assert not out.exists()
        before = {json.loads(x)["key"]: json.loads(x)["completion"]["text"]
                  for x in journal.read_text().splitlines() if x.strip()}
        ledger_before = (run / "ledger.json").read_text()
        seqs_before = (run / "state.json").read_text()  # the released sequences
        (budget_file,) = (home / "ledgers").glob("*.json")
        budget_before = json.loads(budget_file.read_text())
        ok_before = len(server.ok_prompts)

        again = _generate(corpus_csv, out, server.url, home, ["--resume"], key_file=key_file)
        second_log = again.communicate(timeout=240)[0]
        assert again.returncode == 0, second_log[-3000:]
    docs = [json.loads(x) for x in out.read_text().splitlines()]
    n = len(json.loads(seqs_before)["sequences"])
    assert len(docs) == n == 40  # 5 classes × 8
    assert len({d["text"] for d in docs}) == n  # none duplicated
    assert set(before.values()) <= {d["text"] for d in docs}  # none lost
    keys = _journal_keys(journal)
    assert len(keys) == len(set(keys)) == n
    # resumed: the journaled documents were not requested again
    assert len(server.ok_prompts) - ok_before <= n - len(before)
    assert (run / "ledger.json").read_text() == ledger_before  # no new DP noise
    assert (run / "state.json").read_text() == seqs_before
    budget_after = json.loads(budget_file.read_text())
    assert len(budget_after["runs"]) == len(budget_before["runs"]) == 1  # no extra privacy
    assert budget_after["spent"] == budget_before["spent"]
    assert f"{len(before)} from the journal" in second_log
    print(f"\nSIGKILL after {len(before)} of {n} documents journaled; resumed: "
          f"{len(server.ok_prompts) - ok_before} generated, {dict(server.served)} served")
    # the key reached the server (from the environment, then from the key file) ...
    assert set(server.auth) == {f"Bearer {API_KEY}"}
    # ... and nothing the runs wrote or printed holds it
    for path in [*tmp_path.rglob("*")]:
        if path.is_file() and path != key_file:
            assert API_KEY not in path.read_text(errors="replace"), path
    assert API_KEY not in first_log + second_log
