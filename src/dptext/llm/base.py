"""The backend interface and the registry from ``--llm`` scheme to factory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from dptext.lazy import load
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


#: schemes served over HTTP (they take ``timeout=``)
HTTP_SCHEMES = ("openai", "anthropic", "bedrock")
#: schemes whose members may be HTTP backends (they pass ``timeout=`` on to those)
GROUP_SCHEMES = ("pool", "ray")
#: the backends by scheme: ``factory(rest_of_spec: str, **options) -> LLMBackend``, as
#: ``"package.module:function"`` (``dptext.lazy``: a spec imports only its own client)
BACKENDS: dict[str, str] = {
    "local": "dptext.llm.local:from_spec",
    "openai": "dptext.llm.openai:from_spec",
    "anthropic": "dptext.llm.anthropic:anthropic_from_spec",
    "bedrock": "dptext.llm.anthropic:bedrock_from_spec",
    "pool": "dptext.llm.pool:from_spec",
    "ray": "dptext.llm.ray_pool:from_spec",
    "recording": "dptext.llm.recording:from_spec",
}


def register_backend(scheme: str, target: str) -> None:
    """Add a backend for ``scheme:...`` (``target``: ``"package.module:function"``, a
    ``factory(rest_of_spec: str, **options) -> LLMBackend``), e.g. from a plugin."""
    BACKENDS[scheme] = target


def available_schemes() -> list[str]:
    return sorted(BACKENDS)


def http_options(spec: str, options: dict) -> dict:
    """``options`` (e.g. ``timeout=``) for a spec that is, or may hold, an HTTP backend;
    none for the others (a local model takes no time-out)."""
    return options if spec.partition(":")[0] in (*HTTP_SCHEMES, *GROUP_SCHEMES) else {}


def make_backend(spec: str, **options) -> LLMBackend:
    """Build a backend from a spec such as ``local:qwen2.5-0.5b``, ``openai:MODEL@URL``,
    ``anthropic:MODEL``, ``bedrock:MODEL_ID``, ``pool:SPEC1,SPEC2,...`` (several servers
    of one model, ``pool.py``), ``ray:SPEC`` (SPEC on every node of the ``--engine ray``
    cluster, ``ray_pool.py``) or ``recording:``."""
    scheme, sep, rest = spec.partition(":")
    if not sep:
        scheme, rest = "local", spec
    if scheme not in BACKENDS:
        raise BackendSpecError(
            f"unknown LLM backend {scheme!r} in --llm {spec!r}; use one of "
            + ", ".join(f"{s}:..." for s in sorted(BACKENDS)))
    return load(BACKENDS[scheme])(rest, **options)


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
