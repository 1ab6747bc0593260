"""The backend interface and the registry from ``--llm`` scheme to factory."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from dptext.llm.errors import BackendSpecError
from dptext.llm.types import Completion, Prompt


@runtime_checkable
class LLMBackend(Protocol):
    """A batch of prompts in, one completion per prompt out (same order).

    ``identity`` names the model and endpoint (never a key); it is part of the journal
    and cache key. ``max_concurrency`` is how many ``complete`` calls may run at once.
    """

    identity: str
    max_concurrency: int

    def complete(self, prompts: Sequence[Prompt]) -> list[Completion]: ...

    def close(self) -> None: ...


BackendFactory = Callable[..., LLMBackend]
#: schemes served over HTTP (they take ``timeout=``)
HTTP_SCHEMES = ("openai", "anthropic", "bedrock")
#: schemes whose members may be HTTP backends (they pass ``timeout=`` on to those)
GROUP_SCHEMES = ("pool", "ray")
_REGISTRY: dict[str, BackendFactory] = {}


def register_backend(scheme: str) -> Callable[[BackendFactory], BackendFactory]:
    """Register ``factory(rest_of_spec: str, **options) -> LLMBackend`` for ``scheme:...``."""

    def deco(factory: BackendFactory) -> BackendFactory:
        _REGISTRY[scheme] = factory
        return factory

    return deco


def available_schemes() -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY)


def _load_builtin() -> None:
    # Importing the modules registers their schemes (lazy: keeps `import dptext.llm` cheap).
    from dptext.llm import anthropic, local, openai, pool, ray_pool, recording  # noqa: F401


def http_options(spec: str, options: dict) -> dict:
    """``options`` (e.g. ``timeout=``) for a spec that is, or may hold, an HTTP backend;
    none for the others (a local model takes no time-out)."""
    return options if spec.partition(":")[0] in (*HTTP_SCHEMES, *GROUP_SCHEMES) else {}


def make_backend(spec: str, **options) -> LLMBackend:
    """Build a backend from a spec such as ``local:qwen2.5-0.5b``, ``openai:MODEL@URL``,
    ``anthropic:MODEL``, ``bedrock:MODEL_ID``, ``pool:SPEC1,SPEC2,...`` (several servers
    of one model, ``pool.py``), ``ray:SPEC`` (SPEC on every node of the ``--engine ray``
    cluster, ``ray_pool.py``) or ``recording:``."""
    _load_builtin()
    scheme, sep, rest = spec.partition(":")
    if not sep:
        scheme, rest = "local", spec
    factory = _REGISTRY.get(scheme)
    if factory is None:
        raise BackendSpecError(
            f"unknown LLM backend {scheme!r} in --llm {spec!r}; use one of "
            + ", ".join(f"{s}:..." for s in sorted(_REGISTRY)))
    return factory(rest, **options)


def split_model_url(rest: str, default_url: str | None) -> tuple[str, str]:
    """``MODEL@URL`` -> (MODEL, URL); ``MODEL`` -> (MODEL, default_url)."""
    model, sep, url = rest.partition("@")
    if not model:
        raise BackendSpecError(f"missing model name in {rest!r} (expected MODEL or MODEL@URL)")
    if not sep:
        if default_url is None:
            raise BackendSpecError(f"missing endpoint in {rest!r} (expected MODEL@URL)")
        url = default_url
    return model, url.rstrip("/")
