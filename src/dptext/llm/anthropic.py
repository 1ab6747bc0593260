"""Anthropic's Messages API and Amazon Bedrock (Claude through ``InvokeModel``).

``--llm anthropic:MODEL`` (key from ``$ANTHROPIC_API_KEY``; base URL from ``@URL`` or
``$ANTHROPIC_BASE_URL``). ``--llm bedrock:MODEL_ID`` (AWS credentials from
``$AWS_ACCESS_KEY_ID``/``$AWS_SECRET_ACCESS_KEY``/``$AWS_SESSION_TOKEN``, region from
``$AWS_REGION``; requests signed with SigV4 by the standard library).

Only ``temperature`` is sent (recent Claude models refuse temperature and top_p together);
``seed`` is not part of these APIs.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import hmac
import json
import os
import urllib.parse
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor

from dptext.llm.base import split_model_url
from dptext.llm.errors import LLMError
from dptext.llm.http import post_json
from dptext.llm.secrets import Secret, secret_from_env
from dptext.llm.types import Completion, Prompt

ANTHROPIC_URL = "https://api.anthropic.com"
ANTHROPIC_VERSION = "2023-06-01"
BEDROCK_ANTHROPIC_VERSION = "bedrock-2023-05-31"
_STOP = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def build_messages_body(prompt: Prompt, model: str | None) -> dict:
    p = prompt.params
    body: dict = {"max_tokens": p.max_tokens, "messages": prompt.chat,
                  "temperature": min(max(p.temperature, 0.0), 1.0)}
    if model is not None:
        body["model"] = model
    if prompt.system:
        body["system"] = prompt.system
    if p.stop:
        body["stop_sequences"] = list(p.stop)
    return body


def parse_messages_response(data: dict) -> Completion:
    try:
        blocks = data["content"]
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
    except (KeyError, TypeError, AttributeError):
        raise LLMError(f"unexpected messages response (keys: {sorted(data)})") from None
    usage = data.get("usage") or {}
    stop = data.get("stop_reason")
    return Completion(text, _STOP.get(stop, stop), usage.get("input_tokens"),
                      usage.get("output_tokens"))


class _PooledBackend:
    max_concurrency: int

    def _one(self, prompt: Prompt) -> Completion:  # pragma: no cover - overridden
        raise NotImplementedError

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        if len(prompts) <= 1:
            return [self._one(p) for p in prompts]
        with ThreadPoolExecutor(min(len(prompts), self.max_concurrency)) as pool:
            return list(pool.map(self._one, prompts))

    def close(self) -> None:
        pass


class AnthropicBackend(_PooledBackend):
    def __init__(self, model: str, api_key: Secret, base_url: str = ANTHROPIC_URL,
                 timeout: float = 300.0, max_concurrency: int = 8) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.identity = f"anthropic:{model}@{self.base_url}"

    def __repr__(self) -> str:
        return f"AnthropicBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _one(self, prompt: Prompt) -> Completion:
        headers = {"x-api-key": self._key.reveal(), "anthropic-version": ANTHROPIC_VERSION}
        data = post_json(f"{self.base_url}/v1/messages", build_messages_body(prompt, self.model),
                         headers, self.timeout, secrets=(self._key,))
        return parse_messages_response(data)


# ---------------------------------------------------------------- AWS Signature V4

def _hmac(key: bytes, msg: str) -> bytes:
    return hmac.new(key, msg.encode("utf-8"), hashlib.sha256).digest()


def sigv4_headers(method: str, url: str, headers: Mapping[str, str], payload: bytes,
                  region: str, service: str, access_key: str, secret_key: Secret,
                  session_token: Secret | None = None,
                  now: _dt.datetime | None = None) -> dict[str, str]:
    """Headers (including ``Authorization``) that sign a request with AWS SigV4."""
    now = now or _dt.datetime.now(_dt.UTC)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    date = amz_date[:8]
    parts = urllib.parse.urlsplit(url)
    out = dict(headers)
    out["host"] = parts.netloc
    out["x-amz-date"] = amz_date
    if session_token is not None:
        out["x-amz-security-token"] = session_token.reveal()
    canon = {k.lower().strip(): " ".join(str(v).split()) for k, v in out.items()}
    signed = ";".join(sorted(canon))
    canonical_headers = "".join(f"{k}:{canon[k]}\n" for k in sorted(canon))
    # Non-S3 services: each path segment is URI-encoded once more on top of the request path
    path = urllib.parse.quote(parts.path or "/", safe="/~")
    query = "&".join(sorted(
        f"{urllib.parse.quote(k, safe='~')}={urllib.parse.quote(v, safe='~')}"
        for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)))
    canonical_request = "\n".join([method, path, query, canonical_headers, signed,
                                   hashlib.sha256(payload).hexdigest()])
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                         hashlib.sha256(canonical_request.encode("utf-8")).hexdigest()])
    key = _hmac(("AWS4" + secret_key.reveal()).encode("utf-8"), date)
    for part in (region, service, "aws4_request"):
        key = _hmac(key, part)
    signature = hmac.new(key, to_sign.encode("utf-8"), hashlib.sha256).hexdigest()
    out["Authorization"] = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope}, "
                            f"SignedHeaders={signed}, Signature={signature}")
    return out


class BedrockBackend(_PooledBackend):
    def __init__(self, model_id: str, region: str, access_key: str, secret_key: Secret,
                 session_token: Secret | None = None, endpoint: str | None = None,
                 timeout: float = 300.0, max_concurrency: int = 8) -> None:
        self.model_id = model_id
        self.region = region
        self._access_key = access_key
        self._secret = secret_key
        self._token = session_token
        self.endpoint = (endpoint or f"https://bedrock-runtime.{region}.amazonaws.com").rstrip("/")
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.identity = f"bedrock:{model_id}@{self.endpoint}"

    def __repr__(self) -> str:
        return f"BedrockBackend(model_id={self.model_id!r}, region={self.region!r})"

    def _one(self, prompt: Prompt) -> Completion:
        body = build_messages_body(prompt, None)
        body["anthropic_version"] = BEDROCK_ANTHROPIC_VERSION
        payload = json.dumps(body).encode("utf-8")
        url = f"{self.endpoint}/model/{urllib.parse.quote(self.model_id, safe='')}/invoke"
        headers = sigv4_headers("POST", url, {"content-type": "application/json",
                                              "accept": "application/json"}, payload,
                                self.region, "bedrock", self._access_key, self._secret,
                                self._token)
        headers.pop("host")  # urllib sets it
        data = post_json(url, {}, headers, self.timeout, data=payload,
                         secrets=(self._secret, self._token))
        return parse_messages_response(data)


def anthropic_from_spec(rest: str, **options) -> AnthropicBackend:
    model, url = split_model_url(rest, os.environ.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL)
    key = secret_from_env(options.pop("api_key_env", "ANTHROPIC_API_KEY"))
    return AnthropicBackend(model, key, url, **options)


def bedrock_from_spec(rest: str, **options) -> BedrockBackend:
    model, sep, url = rest.partition("@")
    if not model:
        raise LLMError("missing Bedrock model id (expected bedrock:MODEL_ID)")
    region = (os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
              or "us-east-1")
    access = secret_from_env("AWS_ACCESS_KEY_ID")
    secret = secret_from_env("AWS_SECRET_ACCESS_KEY")
    token = secret_from_env("AWS_SESSION_TOKEN", required=False)
    endpoint = url if sep else os.environ.get("BEDROCK_ENDPOINT_URL")
    return BedrockBackend(model, region, access.reveal(), secret, token, endpoint, **options)
