"""The benchmarks' tests: each gets its own dptext state, as in tests/ (``isolation``)."""

from isolation import _dptext_home, _prompt_cache  # noqa: F401  (autouse fixtures)
