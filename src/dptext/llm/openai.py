"""Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

``--llm openai:MODEL@URL`` where URL is the API base (e.g. ``http://127.0.0.1:8000/v1``);
without ``@URL`` the base is ``$OPENAI_BASE_URL`` or OpenAI's. The key comes from
``$OPENAI_API_KEY`` (or ``$OPENAI_API_KEY_FILE``); local servers need none.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from dptext.llm.base import split_model_url
from dptext.llm.errors import LLMError, RetryableLLMError
from dptext.llm.http import post_json
from dptext.llm.secrets import Secret, redact, secret_from_env
from dptext.llm.types import Completion, Prompt

OPENAI_URL = "https://api.openai.com/v1"


#: Request dialects. "openai": the standard chat-completions fields only (OpenAI itself
#: refuses unknown fields). "llama.cpp": also llama.cpp's sampler fields and prompt cache.
#: "extended": any other server (vLLM, llama.cpp server, Ollama, SGLang): the standard
#: fields plus both names of the repetition penalty and llama.cpp's DRY fields; servers
#: ignore fields they do not know (vLLM logs that it ignored them).
DIALECTS = ("openai", "llama.cpp", "extended")
#: DRY's other settings, as llama.cpp and the DRY author recommend
DRY_BASE, DRY_ALLOWED_LENGTH = 1.75, 2


def build_request(model: str, prompt: Prompt, dialect: str = "openai") -> dict:
    if dialect not in DIALECTS:
        raise ValueError(f"unknown request dialect {dialect!r}")
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
    if p.frequency_penalty is not None:
        body["frequency_penalty"] = p.frequency_penalty
    if p.presence_penalty is not None:
        body["presence_penalty"] = p.presence_penalty
    if dialect == "openai":
        return body
    if p.repetition_penalty is not None:
        body["repeat_penalty"] = p.repetition_penalty  # llama.cpp's name
        if dialect == "extended":
            body["repetition_penalty"] = p.repetition_penalty  # vLLM's / HF's name
    if p.dry_multiplier:
        body.update(dry_multiplier=p.dry_multiplier, dry_base=DRY_BASE,
                    dry_allowed_length=DRY_ALLOWED_LENGTH)
    if dialect == "llama.cpp":
        body["cache_prompt"] = True  # reuse the slot's KV cache for the shared prompt prefix
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
                 timeout: float = 300.0, max_concurrency: int = 256,
                 dialect: str | None = None) -> None:
        self.model = model
        self.base_url = base_url.rstrip("/")
        # OpenAI's own API gets the standard fields only; any other server the extensions
        self.dialect = dialect or ("openai" if self.base_url == OPENAI_URL else "extended")
        self._key = api_key
        self.timeout = timeout
        # a ceiling only: --concurrency (the runner's bound) is the knob; a vLLM server on a
        # GPU wants as many requests in flight as its --max-num-seqs
        self.max_concurrency = max_concurrency
        self.identity = f"openai:{model}@{self.base_url}"

    def __repr__(self) -> str:
        return f"OpenAICompatBackend(model={self.model!r}, base_url={self.base_url!r})"

    def _one(self, prompt: Prompt) -> Completion:
        headers = {"Authorization": f"Bearer {self._key.reveal()}"} if self._key else {}
        data = post_json(f"{self.base_url}/chat/completions",
                         build_request(self.model, prompt, self.dialect),
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


def from_spec(rest: str, **options) -> OpenAICompatBackend:
    model, url = split_model_url(rest, os.environ.get("OPENAI_BASE_URL") or OPENAI_URL)
    key_var = options.pop("api_key_env", "OPENAI_API_KEY")
    # a key is required only for the hosted service; local servers usually need none
    key = secret_from_env(key_var, required=url == OPENAI_URL)
    return OpenAICompatBackend(model, url, key, **options)
