"""The suite under pytest-xdist (``make test`` runs ``-n 2 --dist loadfile``: two workers on
CI's two cores), imported by the conftest of each suite (tests/, benchmarks/tests/).

- One compute thread per worker (torch/OpenMP, BLAS, tokenizers, llama.cpp): two workers
  that each spin up a thread per core fight over the cores, and OpenMP and llama.cpp
  threads spin while they wait for each other. Set before numpy or torch is imported,
  in workers only: a run without xdist keeps every core.
- ``--dist loadfile`` sends a file's tests to one worker (a module-scoped fixture is
  built once), and here also the files that share an expensive session fixture, so it is
  built once too: the Ray cluster, the evaluation report (``SHARED_FILES``). xdist's
  own ``xdist_group`` mark cannot do it: pytest 9 ignores the node id it rewrites.
"""

from __future__ import annotations

import os
import warnings

import pytest

WORKER_THREADS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                  "RAYON_NUM_THREADS", "DPTEXT_LLM_THREADS")
#: session fixture -> the files whose tests use it (one worker runs them all)
SHARED_FILES = {
    "cluster": ("tests/test_ray_engine.py", "tests/test_ray_generators.py",
                "tests/test_ray_llm.py"),
    "bbc_report": ("tests/test_eval_cli.py", "tests/test_eval_report_browser.py"),
}
_GROUP_OF_FILE = {f: name for name, files in SHARED_FILES.items() for f in files}


def one_thread_per_worker() -> None:
    if os.environ.get("PYTEST_XDIST_WORKER"):
        for var in WORKER_THREADS:
            os.environ.setdefault(var, "1")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that uses a shared fixture from a file not listed runs (on whichever
    worker) but builds the fixture again: say so, once per file."""
    told = set()
    for item in items:
        file = item.nodeid.split("::", 1)[0]
        for name in SHARED_FILES:
            if (name in getattr(item, "fixturenames", ()) and _GROUP_OF_FILE.get(file) != name
                    and file not in told):
                told.add(file)
                warnings.warn(f"{file} uses the session fixture {name!r}: add it to "
                              "SHARED_FILES in tests/xdist_workers.py, so that one "
                              "pytest-xdist worker builds it once", stacklevel=1)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown without it
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` whose unit is a file, or the files of one shared fixture."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return _GROUP_OF_FILE.get(file, file)

    return SharedFixtureScheduling(config, log)
