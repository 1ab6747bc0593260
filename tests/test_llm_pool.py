"""A pool of OpenAI-compatible servers of one model (``--llm pool:...``): a server that
dies mid-run loses no prompt and none is journaled twice; the journal is keyed by the
model, not the endpoints, so a run resumed on other servers repeats no prompt."""

from __future__ import annotations

from dptext.llm import Journal, PromptBuilder, RetryPolicy, SamplingParams, make_backend
from dptext.llm.recording import RecordingBackend
from dptext.llm.runner import run_prompts
from fault_server import FaultServer

RETRY = RetryPolicy(max_retries=4, base_delay=0.01, max_delay=0.05)


def _prompts(n: int):
    builder = PromptBuilder("medical record", params=SamplingParams(max_tokens=32))
    return [builder.build([f"finding{i}", "cough"], seed=i) for i in range(n)]


def test_a_server_that_dies_mid_run_loses_no_prompt(tmp_path):
    prompts = _prompts(24)
    with FaultServer(die_after=4, delay=0.05) as a, FaultServer(delay=0.05) as b:
        pool = make_backend(f"pool:openai:m@{a.url}/v1,openai:m@{b.url}/v1", timeout=5)
        journal = Journal(tmp_path / "journal.jsonl")
        done = run_prompts(pool, prompts, journal, concurrency=4, retry=RETRY)
        assert a.dead.is_set() and len(a.ok_prompts) >= 4 and b.ok_prompts
        answered = a.ok_prompts + b.ok_prompts
    assert len(done) == 24 and all(c.text for c in done)
    assert set(answered) == {p.messages[-1].content for p in prompts}  # none lost
    # none answered twice, except one the dying server computed but never delivered
    assert len(answered) - len(set(answered)) <= len(a.ok_prompts) - 4
    assert len(journal.path.read_text().splitlines()) == 24  # each journaled once


def test_the_journal_is_keyed_by_the_model_so_other_servers_resume_it(tmp_path):
    prompts = _prompts(10)
    journal = Journal(tmp_path / "journal.jsonl")
    with FaultServer() as a, FaultServer() as b:
        first = make_backend(f"pool:openai:m@{a.url}/v1,openai:m@{b.url}/v1")
        run_prompts(first, prompts[:6], journal, retry=RETRY)  # then the driver stops
    with FaultServer() as c:
        again = make_backend(f"pool:openai:m@{c.url}/v1")
        assert again.identity == first.identity == "pool:openai:m"
        done = run_prompts(again, prompts, journal, retry=RETRY)
        assert len(c.ok_prompts) == 4  # only the prompts not journaled before
    assert len(done) == 10


def test_every_member_failing_raises_the_last_error_and_a_good_member_is_preferred():
    from dptext.llm import LLMError
    from dptext.llm.pool import PoolBackend

    class Broken(RecordingBackend):
        def complete(self, prompts):
            raise LLMError("server gone (simulated)")

    good = RecordingBackend()
    pool = PoolBackend([Broken(), good], cooldown=60)
    pool.complete(_prompts(3))  # the broken member is tried once, then set aside
    assert len(good.prompts) == 3
    try:
        PoolBackend([Broken(), Broken()]).complete(_prompts(1))
    except LLMError as e:
        assert "server gone" in str(e)
    else:  # pragma: no cover
        raise AssertionError("a pool with no working member answered")


def test_the_cli_time_out_reaches_http_backends_and_members_only():
    from dptext.llm.base import http_options

    pool = make_backend("pool:openai:m@http://127.0.0.1:9/v1,local:qwen2.5-0.5b",
                        **http_options("pool:...", {"timeout": 7.0}))
    assert pool.members[0].timeout == 7.0  # the local member was made without it
    assert http_options("ray:openai:m@http://127.0.0.1:9/v1", {"timeout": 7.0})
    assert http_options("local:qwen2.5-0.5b", {"timeout": 7.0}) == {}
