"""The generators by name: one line each. A new generator is one module under
``generators/`` implementing ``generators.base.Generator`` and one line here
(docs/architecture.md)."""

from __future__ import annotations

from typing import Any

from dptext.lazy import load

GENERATORS: dict[str, str] = {
    "kps": "dptext.generators.kps.generator:KPSGenerator",
    "augpe": "dptext.generators.augpe.generator:AugPEGenerator",
    "pate": "dptext.generators.pate.generator:PateGenerator",
    "dpft": "dptext.generators.dpft.generator:DPFTGenerator",
}


def register(name: str, target: str) -> None:
    """Add a generator (``"package.module:Class"``), e.g. from a plugin or a test."""
    GENERATORS[name] = target


def generator_class(name: str):
    if name not in GENERATORS:
        raise ValueError(f"unknown method {name!r}; use one of " + ", ".join(sorted(GENERATORS)))
    return load(GENERATORS[name])


def make_generator(name: str, **options: Any):
    """The generator ``name`` with ``options`` (its dataclass fields; see its docstring)."""
    return generator_class(name).from_options(**options)
