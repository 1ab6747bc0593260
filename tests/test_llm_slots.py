"""How many slots and threads the local backend asks for (no model is loaded)."""

from dptext.llm import make_backend
from dptext.llm.local import DEFAULT_PARALLEL


def test_slots_follow_threads_and_the_environment(monkeypatch):
    monkeypatch.delenv("DPTEXT_LLM_PARALLEL", raising=False)
    monkeypatch.delenv("DPTEXT_LLM_THREADS", raising=False)
    one = make_backend("local:smollm2-135m", threads=1)
    assert one.n_parallel == one.max_concurrency == 1
    two = make_backend("local:smollm2-135m", threads=2)
    assert two.n_parallel == two.max_concurrency == DEFAULT_PARALLEL > 1
    monkeypatch.setenv("DPTEXT_LLM_THREADS", "1")
    assert make_backend("local:smollm2-135m").n_parallel == 1
    monkeypatch.setenv("DPTEXT_LLM_PARALLEL", "6")
    assert make_backend("local:smollm2-135m", threads=1).max_concurrency == 6
    assert make_backend("local:smollm2-135m", n_parallel=3).max_concurrency == 3
