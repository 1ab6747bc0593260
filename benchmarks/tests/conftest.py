"""The benchmarks' tests: each gets its own dptext state, as in tests/ (``isolation``), and
runs under pytest-xdist as they do (``xdist_workers``), with the session's privacy-loss
distributions (``accounting_memo``)."""

from accounting_memo import _one_pld_per_gaussian  # noqa: F401  (autouse, session)
from isolation import _dptext_home, _prompt_cache  # noqa: F401  (autouse fixtures)
from xdist_workers import one_thread_per_worker

one_thread_per_worker()  # before numpy or torch is imported
