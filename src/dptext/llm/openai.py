"""Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

``--llm openai:MODEL@URL`` where URL is the API base (e.g. ``http://127.0.0.1:8000/v1``);
without ``@URL`` the base is ``$OPENAI_BASE_URL`` or OpenAI's. The key comes from
``$OPENAI_API_KEY`` (or ``$OPENAI_API_KEY_FILE``); local servers need none.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from dptext.llm.base import register_backend, split_model_url
from dptext.llm.errors import LLMError, RetryableLLMError
from dptext.llm.http import post_json
from dptext.llm.secrets import Secret, redact, secret_from_env
from dptext.llm.types import Completion, Prompt

OPENAI_URL = "https://api.openai.com/v1"


def build_request(model: str, prompt: Prompt) -> dict:
    p = prompt.params
    body: dict = {
        "model": model,
        "messages": [{"role": m.role, "content": m.content} for m in prompt.messages],
        "max_tokens": p.max_tokens,
        "temperature": p.temperature,
        "top_p": p.top_p,
    }
    if p.seed is not None:
        body["seed"] = p.seed
    if p.stop:
        body["stop"] = list(p.stop)
    return body


def parse_response(data: dict) -> Completion:
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise LLMError(f"unexpected chat-completions response (keys: {sorted(data)})") from None
    usage = data.get("usage") or {}
    return Completion(text, choice.get("finish_reason"), usage.get("prompt_tokens"),
                      usage.get("completion_tokens"))


class OpenAICompatBackend:
    def __init__(self, model: str, base_url: str, api_key: Secret | None = None,
                 timeout: float = 300.0, max_concurrency: int = 16) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        self._key = api_key
        self.timeout = timeout
        self.max_concurrency = max_concurrency
        self.identity = f"openai:{model}@{self.base_url}"

    def __repr__(self) -> str:
        return f"OpenAICompatBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _one(self, prompt: Prompt) -> Completion:
        headers = {"Authorization": f"Bearer {self._key.reveal()}"} if self._key else {}
        data = post_json(f"{self.base_url}/chat/completions", build_request(self.model, prompt),
                         headers, self.timeout, secrets=(self._key,))
        try:
            return parse_response(data)
        except LLMError as e:  # a malformed answer from a flaky server or proxy: retry
            raise RetryableLLMError(redact(str(e), self._key)) from None

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        if len(prompts) <= 1:
            return [self._one(p) for p in prompts]
        with ThreadPoolExecutor(min(len(prompts), self.max_concurrency)) as pool:
            return list(pool.map(self._one, prompts))

    def close(self) -> None:
        pass


@register_backend("openai")
def _factory(rest: str, **options) -> OpenAICompatBackend:
    model, url = split_model_url(rest, os.environ.get("OPENAI_BASE_URL") or OPENAI_URL)
    key_var = options.pop("api_key_env", "OPENAI_API_KEY")
    # a key is required only for the hosted service; local servers usually need none
    key = secret_from_env(key_var, required=url == OPENAI_URL)
    return OpenAICompatBackend(model, url, key, **options)
