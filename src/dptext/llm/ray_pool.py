"""The LLM stage on a Ray cluster: ``--llm ray:SPEC`` with ``--engine ray`` (for example
``--llm ray:local:qwen2.5-0.5b``): one copy of the backend ``SPEC`` per node of the
cluster, in a Ray actor placed on that node, and the prompts spread over them.

* A local model is loaded once per node, with as many llama.cpp threads as the node has
  CPUs (one LLM job per node, one thread per core). The actors reserve no Ray CPU: the LLM
  stage and the corpus-wide counting stages take turns (Aug-PE votes between its LLM
  iterations), and an actor holding every CPU would starve the counting tasks.
* The prompts are built from released values only (DP keyphrases, public instructions,
  synthetic texts), so the workers of the LLM stage see nothing private.
* The journal stays on the driver (``runner.run_prompts``): an actor, or its node, that
  dies loses only its prompts in flight, which go to another actor (``PoolBackend``'s
  fail-over); a driver killed mid-stage resumes with ``--resume`` and repeats no
  journaled prompt. Nodes that join after the stage started are used from the next run
  (or resume) on.
* ``identity`` is the inner backend's: the same model gives the same journal and cache
  keys whether it runs on the cluster or on one machine, so a run started on Ray can be
  resumed locally and the other way round.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence

from dptext.llm.base import LLMBackend, http_options, make_backend
from dptext.llm.errors import BackendSpecError, LLMError, RetryableLLMError
from dptext.llm.pool import PoolBackend
from dptext.llm.types import Completion, Prompt

Factory = Callable[[], LLMBackend]


class _Worker:
    """Inside a Ray actor: one backend, called from up to its ``max_concurrency`` threads."""

    def __init__(self, factory: Factory) -> None:
        self.backend = factory()

    def room(self) -> int:
        return max(1, int(getattr(self.backend, "max_concurrency", 1)))

    def complete(self, prompt: Prompt) -> Completion:
        return self.backend.complete([prompt])[0]


class _SpecFactory:
    """Makes the backend ``spec`` on a node (picklable; ``threads`` only for ``local:``)."""

    def __init__(self, spec: str, options: dict, threads: int | None) -> None:
        self.spec, self.options, self.threads = spec, options, threads

    def __call__(self) -> LLMBackend:
        options = dict(self.options)
        if self.spec.split(":", 1)[0] == "local" and self.threads and "threads" not in options:
            options["threads"] = self.threads
        return make_backend(self.spec, **options)


class _ActorMember:
    """A ``PoolBackend`` member that forwards each prompt to its actor; an actor that died
    (or whose node did) becomes an ``LLMError``, so the pool sets it aside and moves on."""

    def __init__(self, ray, actor, identity: str, room: int, node: str) -> None:
        self._ray, self.actor, self.identity = ray, actor, identity
        self.max_concurrency, self.node = room, node

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        ray = self._ray
        try:
            return ray.get([self.actor.complete.remote(p) for p in prompts])
        except ray.exceptions.RayTaskError as e:  # the backend itself failed
            cause = getattr(e, "cause", None)
            raise cause if isinstance(cause, LLMError) else LLMError(
                f"LLM worker on node {self.node[:8]} failed: {type(cause).__name__}") from None
        except ray.exceptions.RayError as e:  # the actor or its node went away
            raise RetryableLLMError(f"LLM worker on node {self.node[:8]} is gone "
                                    f"({type(e).__name__})") from None

    def close(self) -> None:
        with contextlib.suppress(Exception):  # already gone with its node
            self._ray.kill(self.actor)


def _ray_engine():
    """The current compute engine, which must be Ray (checked when the backend is made,
    so a run is refused before its budget is charged)."""
    from dptext.compute import current_engine

    engine = current_engine()
    if engine.name != "ray":
        raise BackendSpecError("--llm ray:SPEC runs on the cluster of --engine ray: add "
                               "--engine ray (and --ray-address auto|local|ADDRESS)")
    return engine


class RayLLMBackend:
    """``member``: a backend spec (``local:MODEL``, ``openai:MODEL@URL``, …) made on every
    node, or a picklable zero-argument factory (tests). ``workers``: at most this many
    nodes (default: every alive node with a CPU)."""

    def __init__(self, member: str | Factory, *, workers: int | None = None,
                 **options) -> None:
        self._engine = _ray_engine()
        if isinstance(member, str):
            if member.split(":", 1)[0] in ("ray", "pool"):
                raise BackendSpecError("ray: give one backend, e.g. ray:local:qwen2.5-0.5b")
            probe = make_backend(member, **options)  # loads nothing: names the model only
        else:
            probe = member()
        self.identity = probe.identity
        probe.close()
        self.member, self.options, self.workers = member, options, workers
        self._pool: PoolBackend | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RayLLMBackend({self.identity!r})"

    def _start(self) -> PoolBackend:
        with self._lock:
            if self._pool is not None:
                return self._pool
            ray = self._engine.connect()
            from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

            nodes = [n for n in ray.nodes()
                     if n.get("Alive") and n.get("Resources", {}).get("CPU", 0) >= 1]
            nodes = nodes[:self.workers] if self.workers else nodes
            if not nodes:
                raise LLMError("the Ray cluster has no alive node with a CPU")
            cls = ray.remote(num_cpus=0, max_restarts=0)(_Worker)
            actors = []
            for n in nodes:
                cpus = int(n["Resources"]["CPU"])
                factory = self.member if not isinstance(self.member, str) else _SpecFactory(
                    self.member, self.options, cpus)
                strategy = NodeAffinitySchedulingStrategy(n["NodeID"], soft=False)
                actors.append((cls.options(scheduling_strategy=strategy,
                                           max_concurrency=64).remote(factory), n["NodeID"]))
            rooms = ray.get([a.room.remote() for a, _ in actors])
            self._pool = PoolBackend([_ActorMember(ray, a, self.identity, r, node)
                                      for (a, node), r in zip(actors, rooms, strict=True)])
            return self._pool

    @property
    def max_concurrency(self) -> int:
        return self._start().max_concurrency

    @property
    def members(self) -> list:
        return self._start().members

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]:
        return self._start().complete(prompts)

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None


def from_spec(rest: str, **options) -> RayLLMBackend:
    if not rest:
        raise BackendSpecError("ray: give the backend each node runs, e.g. "
                               "ray:local:qwen2.5-0.5b or ray:openai:MODEL@URL")
    return RayLLMBackend(rest, **http_options(rest, options))
