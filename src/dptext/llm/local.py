"""Local GGUF models run in process with xllamacpp (prebuilt CPU wheel).

``--llm local:qwen2.5-0.5b`` (catalogue alias, see ``models.py``) or
``--llm local:/path/to/model.gguf``.

Throughput: the runtime serves ``n_parallel`` slots with continuous batching, and the
backend declares ``max_concurrency = n_parallel`` so the runner keeps that many prompts in
flight (``Server.handle_chat_completions`` releases the GIL and is the same handler the
runtime's HTTP threads call concurrently). A decoding step of a batch reads the weights
once and meets at the threads' barriers once for all its sequences. Default: 4 slots with
several threads, 1 with one thread (see ``DEFAULT_PARALLEL``); ``$DPTEXT_LLM_PARALLEL``
overrides the slot count. ``threads`` defaults to the number of CPU cores available to the
process (``$DPTEXT_LLM_THREADS`` overrides: on a machine shared with other busy work, fewer
threads than cores is faster). Each request asks the runtime to keep the slot's prompt
cache, so the prefix shared by every prompt (system message, template) is not recomputed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from dptext.llm.errors import LLMError
from dptext.llm.models import DEFAULT_LOCAL_MODEL, check_model, resolve_model_path
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


#: slots when neither the caller nor ``$DPTEXT_LLM_PARALLEL`` says, with two or more
#: llama.cpp threads. With one thread the default is one slot: on a busy 2-core machine
#: more slots gave no more tokens per CPU second (docs/benchmarks.md); with several threads
#: the threads meet at a barrier after every operation, and a batch of slots shares those
#: waits (an earlier measurement on an idle 2-core machine: 1.3-1.5x the tokens/s).
DEFAULT_PARALLEL = 4


def _parallel(threads: int) -> int:
    if os.environ.get("DPTEXT_LLM_PARALLEL", "").isdigit():
        return max(1, int(os.environ["DPTEXT_LLM_PARALLEL"]))
    return DEFAULT_PARALLEL if threads > 1 else 1


def start_xllamacpp_server(model_path: Path, n_ctx: int = 4096, threads: int | None = None,
                           n_parallel: int = 1, port: int = 0, verbosity: int = -1):
    """An ``xllamacpp.Server`` for ``model_path`` with ``n_parallel`` slots of ``n_ctx``
    tokens each; it also answers OpenAI-style HTTP on ``server.listening_address``
    (127.0.0.1 only)."""
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
    """``complete`` may be called from ``max_concurrency`` threads at once; each call waits
    for its own prompts while the runtime batches every slot's next token together."""

    def __init__(self, model: str = DEFAULT_LOCAL_MODEL, n_ctx: int = 4096,
                 threads: int | None = None, n_parallel: int | None = None) -> None:
        self.model = model
        self.n_ctx = n_ctx
        self.threads = threads
        self.n_parallel = max(1, n_parallel or _parallel(threads or _cores()))
        self.max_concurrency = self.n_parallel
        self.identity = f"local:{Path(model).name}"
        self._server = None
        self._lock = threading.Lock()  # guards the lazy start only

    def __repr__(self) -> str:
        return f"LocalGGUFBackend(model={self.model!r}, n_parallel={self.n_parallel})"

    def _ensure(self):
        with self._lock:
            if self._server is None:
                self._server = start_xllamacpp_server(
                    resolve_model_path(self.model), self.n_ctx, self.threads, self.n_parallel)
            return self._server

    def _one(self, server, prompt: Prompt) -> Completion:
        res = server.handle_chat_completions(build_request(self.identity, prompt, "llama.cpp"))
        if isinstance(res, dict) and "error" in res:
            raise LLMError(f"local model failed: {res['error']}")
        return parse_response(res)

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        server = self._ensure()
        if len(prompts) <= 1:
            return [self._one(server, p) for p in prompts]
        with ThreadPoolExecutor(min(len(prompts), self.n_parallel)) as pool:
            return list(pool.map(lambda p: self._one(server, p), prompts))

    def close(self) -> None:
        with self._lock:
            self._server = None  # the Server frees the model when garbage-collected


def from_spec(rest: str, **options) -> LocalGGUFBackend:
    check_model(rest or DEFAULT_LOCAL_MODEL)  # a typo is refused before a run is charged
    return LocalGGUFBackend(rest or DEFAULT_LOCAL_MODEL, **options)
