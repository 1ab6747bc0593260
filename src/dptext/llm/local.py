"""Local GGUF models run in process with xllamacpp (prebuilt CPU wheel).

``--llm local:qwen2.5-0.5b`` (catalogue alias, see ``models.py``) or
``--llm local:/path/to/model.gguf``. One completion at a time; ``threads`` defaults to the
number of CPU cores available to the process (``$DPTEXT_LLM_THREADS`` overrides).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

from dptext.llm.base import register_backend
from dptext.llm.errors import LLMError
from dptext.llm.models import DEFAULT_LOCAL_MODEL, resolve_model_path
from dptext.llm.openai import build_request, parse_response
from dptext.llm.types import Completion, Prompt


def _cores() -> int:
    """``$DPTEXT_LLM_THREADS`` if set, else the cores available to this process. On a
    machine shared with other busy processes, fewer threads than cores is often faster
    (llama.cpp threads spin while waiting for each other)."""
    if os.environ.get("DPTEXT_LLM_THREADS", "").isdigit():
        return max(1, int(os.environ["DPTEXT_LLM_THREADS"]))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def start_xllamacpp_server(model_path: Path, n_ctx: int = 4096, threads: int | None = None,
                           n_parallel: int = 1, port: int = 0, verbosity: int = -1):
    """An ``xllamacpp.Server`` for ``model_path``; it also answers OpenAI-style HTTP on
    ``server.listening_address`` (127.0.0.1 only)."""
    try:
        import xllamacpp as xlc
    except ImportError:
        raise LLMError("local models need xllamacpp: pip install 'dptext[llm]'") from None
    p = xlc.CommonParams()
    p.model.path = str(model_path)
    p.n_ctx = n_ctx * n_parallel
    p.n_parallel = n_parallel
    p.cpuparams.n_threads = threads or _cores()
    p.cpuparams_batch.n_threads = threads or _cores()
    p.hostnames = ["127.0.0.1"]
    p.port = port
    p.verbosity = verbosity
    p.warmup = False
    return xlc.Server(p)


class LocalGGUFBackend:
    max_concurrency = 1

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, n_ctx: int = 4096,
                 threads: int | None = None) -> None:
        self.model = model
        self.n_ctx = n_ctx
        self.threads = threads
        self.identity = f"local:{Path(model).name}"
        self._server = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"LocalGGUFBackend(model={self.model!r})"

    def _ensure(self):
        if self._server is None:
            self._server = start_xllamacpp_server(resolve_model_path(self.model), self.n_ctx,
                                                  self.threads)
        return self._server

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        out = []
        with self._lock:
            server = self._ensure()
            for prompt in prompts:
                res = server.handle_chat_completions(build_request(self.identity, prompt))
                if isinstance(res, dict) and "error" in res:
                    raise LLMError(f"local model failed: {res['error']}")
                out.append(parse_response(res))
        return out

    def close(self) -> None:
        with self._lock:
            self._server = None  # the Server frees the model when garbage-collected


@register_backend("local")
def _factory(rest: str, **options) -> LocalGGUFBackend:
    return LocalGGUFBackend(rest or DEFAULT_LOCAL_MODEL, **options)
