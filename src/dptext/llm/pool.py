"""A pool of LLM servers that serve one model: ``--llm
pool:openai:MODEL@URL1,openai:MODEL@URL2`` (vLLM, llama.cpp or Ollama servers on several
machines), or ``PoolBackend([...])`` from Python.

Each prompt goes to the member with the most room (fewest prompts in flight for its
``max_concurrency``). A member that fails is set aside for ``cooldown`` seconds and the
prompt goes to the next one, so a server that dies slows the run down but loses nothing:
the journal of completions is written by the driver (``runner.run_prompts``), and a
resumed run repeats no journaled prompt. When every member has failed on a prompt, the
last error is raised as it was (a retryable one is retried by the runner with back-off).

The pool's ``identity`` (part of the journal and cache keys) names the model(s), not the
endpoints: a run resumed with other servers of the same model reuses its journal.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence

from dptext.llm.base import LLMBackend, http_options, make_backend
from dptext.llm.errors import BackendSpecError, LLMError
from dptext.llm.types import Completion, Prompt


def pool_identity(identities: Iterable[str]) -> str:
    """A pool's identity from its members': their models without the endpoints."""
    return "pool:" + ",".join(sorted({i.split("@", 1)[0] for i in identities}))


class PoolBackend:
    def __init__(self, members: Sequence[LLMBackend], cooldown: float = 30.0) -> None:
        if not members:
            raise BackendSpecError("an LLM pool needs at least one member")
        self.members = list(members)
        self.cooldown = cooldown
        self.identity = pool_identity(m.identity for m in self.members)
        self._room = [max(1, getattr(m, "max_concurrency", 1)) for m in self.members]
        self.max_concurrency = sum(self._room)
        self._busy = [0] * len(self.members)
        self._down_until = [0.0] * len(self.members)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"PoolBackend({self.members!r})"

    def _take(self, tried: set[int]) -> int | None:
        """The member to try next (healthy ones first, most room first); None when every
        member has been tried for this prompt."""
        with self._lock:
            now = time.monotonic()
            left = [i for i in range(len(self.members)) if i not in tried]
            if not left:
                return None
            i = min(left, key=lambda j: (self._down_until[j] > now,
                                         self._busy[j] / self._room[j]))
            self._busy[i] += 1
            return i

    def _one(self, prompt: Prompt) -> Completion:
        tried: set[int] = set()
        error: LLMError | None = None
        while (i := self._take(tried)) is not None:
            tried.add(i)
            try:
                return self.members[i].complete([prompt])[0]
            except LLMError as e:
                error = e
                with self._lock:
                    self._down_until[i] = time.monotonic() + self.cooldown
            finally:
                with self._lock:
                    self._busy[i] -= 1
        assert error is not None
        raise error

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return [self._one(p) for p in prompts]

    def close(self) -> None:
        for m in self.members:
            m.close()


def from_spec(rest: str, **options) -> PoolBackend:
    specs = [s.strip() for s in rest.split(",") if s.strip()]
    if not specs:
        raise BackendSpecError("pool: give the members, e.g. "
                               "pool:openai:MODEL@URL1,openai:MODEL@URL2")
    if any(s.startswith("pool:") for s in specs):
        raise BackendSpecError("pool: a pool cannot hold another pool")
    return PoolBackend([make_backend(s, **http_options(s, options)) for s in specs])
