"""Every test its own dptext state: a DPTEXT_HOME (ledgers, config) and a prompt cache.
Autouse fixtures, imported by the conftest of each suite (tests/, benchmarks/tests/)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _dptext_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("dptext-home")
    monkeypatch.setenv("DPTEXT_HOME", str(home))
    return home


@pytest.fixture(autouse=True)
def _prompt_cache(tmp_path_factory, monkeypatch):
    """Every test its own prompt cache: a completion cached by one test (or by a user of
    this machine) must not answer another test's prompt; the models under $DPTEXT_CACHE
    are shared as before."""
    from dptext.llm.journal import PromptCache

    path = tmp_path_factory.mktemp("prompt-cache") / "llm-cache.jsonl"
    monkeypatch.setattr(PromptCache, "default", classmethod(lambda cls: cls(path)))
