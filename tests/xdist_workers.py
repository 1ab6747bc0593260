"""The suite under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``: two workers
on CI's two cores), imported by the conftest of each suite (tests/, benchmarks/tests/).

- One compute thread per worker (torch/OpenMP, BLAS, tokenizers, llama.cpp): two workers
  that each spin up a thread per core fight over the cores, and OpenMP and llama.cpp
  threads spin while they wait for each other. Set before numpy or torch is imported,
  in workers only: a run without xdist keeps every core.
- Tests that share an expensive fixture run on one worker, so it is built once: the Ray
  cluster and the evaluation report (session fixtures) each a group of their own, and a
  module-scoped fixture's tests a group per module (``pytest.mark.xdist_group``; without
  ``--dist loadgroup`` the marks do nothing).
"""

from __future__ import annotations

import os

import pytest

WORKER_THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "RAYON_NUM_THREADS", "DPTEXT_LLM_THREADS")
SHARED_SESSION_FIXTURES = ("cluster", "bbc_report")  # expensive; ``tiny`` is not


def one_thread_per_worker() -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for var in WORKER_THREADS:
            os.environ.setdefault(var, "1")


def shared_fixture_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that uses an expensive shared fixture, else None."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:  # not a Python test function (a doctest, say)
        return None
    for name in SHARED_SESSION_FIXTURES:
        if name in info.name2fixturedefs:
            return name
    for defs in info.name2fixturedefs.values():
        if defs and defs[-1].scope == "module":
            return item.nodeid.split("::")[0]
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):  # its mark is unknown without it
        return
    for item in items:
        group = shared_fixture_group(item)
        if group and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(group))
