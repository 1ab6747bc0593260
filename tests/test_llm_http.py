"""Anthropic, Bedrock and OpenAI-protocol request building / response parsing against a
local HTTP server that speaks the same protocol; error mapping; key hygiene."""

import datetime as dt
import hashlib
import json
import logging

import pytest

from dptext.llm import (
    LLMError,
    Prompt,
    PromptBuilder,
    RetryPolicy,
    SamplingParams,
    make_backend,
    run_prompts,
)
from dptext.llm.anthropic import sigv4_headers
from dptext.llm.errors import BackendSpecError, RetryableLLMError
from dptext.llm.secrets import Secret
from llm_helpers import ScriptedServer

KEY = "sk-test-SUPERSECRET-0123456789"


def _claude_reply(text="Patient seen for fever.", stop="end_turn"):
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": text}], "stop_reason": stop,
            "usage": {"input_tokens": 12, "output_tokens": 5}}


def _prompt():
    return PromptBuilder("medical record", params=SamplingParams(max_tokens=64,
                                                                 temperature=0.7,
                                                                 stop=("###",))).build(
        ["fever", "cough"], seed=3)


def test_anthropic_messages_protocol(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ScriptedServer(lambda s: (200, _claude_reply(stop="max_tokens"))) as srv:
        b = make_backend(f"anthropic:claude-test@{srv.url}")
        [c] = b.complete([_prompt()])
    req = srv.seen[0]
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == KEY
    assert req.headers["anthropic-version"] == "2023-06-01"
    body = req.json()
    assert body["model"] == "claude-test" and body["max_tokens"] == 64
    assert body["system"].startswith("You write")
    assert body["messages"] == [{"role": "user", "content": _prompt().messages[-1].content}]
    assert body["stop_sequences"] == ["###"] and body["temperature"] == 0.7
    assert "top_p" not in body and "seed" not in body
    assert (c.text, c.finish_reason, c.prompt_tokens, c.completion_tokens) == \
        ("Patient seen for fever.", "length", 12, 5)


def test_bedrock_invoke_protocol_and_sigv4(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-" + KEY)
    monkeypatch.setenv("AWS_SESSION_TOKEN", "session-tok")
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    model = "anthropic.claude-3-5-sonnet-20240620-v1:0"

    def respond(seen):
        # verify the signature the way AWS does: recompute it from what arrived
        auth = seen.headers["authorization"]
        signed = auth.split("SignedHeaders=")[1].split(",")[0].split(";")
        date = dt.datetime.strptime(seen.headers["x-amz-date"], "%Y%m%dT%H%M%SZ").replace(
            tzinfo=dt.UTC)
        hdrs = {h: seen.headers[h] for h in signed if h != "host"}
        expect = sigv4_headers("POST", srv.url + seen.path, hdrs, seen.body, "eu-west-1",
                               "bedrock", "AKIDEXAMPLE", Secret("aws-secret-" + KEY),
                               None, now=date)
        ok = expect["Authorization"] == auth
        return (200, _claude_reply()) if ok else (403, {"message": "bad signature"})

    with ScriptedServer(respond) as srv:
        b = make_backend(f"bedrock:{model}@{srv.url}")
        [c] = b.complete([_prompt()])
    req = srv.seen[0]
    assert req.path == "/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/invoke"
    body = req.json()
    assert body["anthropic_version"] == "bedrock-2023-05-31" and "model" not in body
    assert body["messages"][-1]["role"] == "user"
    assert req.headers["x-amz-security-token"] == "session-tok"
    assert "Credential=AKIDEXAMPLE/" in req.headers["authorization"]
    assert "/eu-west-1/bedrock/aws4_request" in req.headers["authorization"]
    assert c.text == "Patient seen for fever." and c.finish_reason == "stop"


def test_sigv4_matches_the_aws_documentation_example():
    # the worked example of the AWS SigV4 documentation (IAM ListUsers)
    h = sigv4_headers("GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08",
                      {"content-type": "application/x-www-form-urlencoded; charset=utf-8"},
                      b"", "us-east-1", "iam", "AKIDEXAMPLE",
                      Secret("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
                      now=dt.datetime(2015, 8, 30, 12, 36, tzinfo=dt.UTC))
    assert h["Authorization"].endswith(
        "Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7")


def test_openai_protocol(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    reply = {"choices": [{"message": {"role": "assistant", "content": "Doc."},
                          "finish_reason": "stop"}],
             "usage": {"prompt_tokens": 9, "completion_tokens": 2}}
    with ScriptedServer(lambda s: (200, reply)) as srv:
        [c] = make_backend(f"openai:gpt-test@{srv.url}/v1").complete([_prompt()])
    req = srv.seen[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    body = req.json()
    assert body["model"] == "gpt-test" and body["seed"] == 3 and body["stop"] == ["###"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert c.text == "Doc." and c.completion_tokens == 2


@pytest.mark.parametrize("status, retryable", [(429, True), (500, True), (503, True),
                                               (400, False), (401, False)])
def test_http_errors_map_to_retryable_or_not(status, retryable, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    with ScriptedServer(lambda s: (status, {"error": f"echo {KEY}"},
                                   {"Retry-After": "2"})) as srv:
        b = make_backend(f"anthropic:m@{srv.url}")
        with pytest.raises(LLMError) as ei:
            b.complete([_prompt()])
    assert isinstance(ei.value, RetryableLLMError) == retryable
    assert str(status) in str(ei.value)
    assert KEY not in str(ei.value)           # a server echoing the key is redacted
    if retryable and status == 429:
        assert ei.value.retry_after == 2.0


def test_timeout_is_retryable_and_runner_recovers(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    reply = {"choices": [{"message": {"content": "ok."}, "finish_reason": "stop"}]}
    calls = []

    def respond(seen):
        calls.append(1)
        if len(calls) == 1:
            return None, 1.5   # hang longer than the client time-out
        if len(calls) == 2:
            return 429, {"error": "slow down"}, {"Retry-After": "0"}
        return 200, reply

    with ScriptedServer(respond) as srv:
        b = make_backend(f"openai:m@{srv.url}/v1", timeout=0.5)
        out = run_prompts(b, [_prompt()], retry=RetryPolicy(base_delay=0.01))
    assert out[0].text == "ok." and len(calls) == 3


def test_keys_never_appear_in_repr_logs_journal_or_errors(monkeypatch, tmp_path, caplog):
    from dptext.llm import Journal

    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    caplog.set_level(logging.DEBUG)
    j = Journal(tmp_path / "j.jsonl")
    with ScriptedServer(lambda s: (200, _claude_reply())) as srv:
        for spec in (f"anthropic:m@{srv.url}", f"openai:m@{srv.url}/v1"):
            b = make_backend(spec)
            assert KEY not in repr(b) and KEY not in str(vars(b)) and KEY not in b.identity
        b = make_backend(f"anthropic:m@{srv.url}")
        run_prompts(b, [_prompt()], journal=j)
    assert KEY not in (tmp_path / "j.jsonl").read_text()
    assert KEY not in caplog.text
    assert repr(Secret(KEY)) == "Secret('****')"
    with pytest.raises(TypeError):
        import pickle
        pickle.dumps(Secret(KEY))


def test_missing_key_and_key_file(monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMError, match="ANTHROPIC_API_KEY") as ei:
        make_backend("anthropic:m")
    assert "KEY_FILE" in str(ei.value)
    f = tmp_path / "key"
    f.write_text(KEY + "\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY_FILE", str(f))
    b = make_backend("anthropic:m@http://127.0.0.1:9")
    assert b._key.reveal() == KEY


def test_registry_and_spec_errors():
    from dptext.llm import available_schemes

    assert {"anthropic", "bedrock", "local", "openai", "recording"} <= set(available_schemes())
    with pytest.raises(BackendSpecError, match="unknown LLM backend 'nope'"):
        make_backend("nope:x")
    with pytest.raises(BackendSpecError, match="missing model"):
        make_backend("openai:@http://127.0.0.1:1")
    assert make_backend("recording:").identity == "recording"


def test_prompt_hash_is_stable():
    p = Prompt.user("hi", params=SamplingParams(seed=1))
    assert p.key("x") == hashlib.sha256(json.dumps(
        {"backend": "x", **p.to_dict()}, sort_keys=True).encode()).hexdigest()
