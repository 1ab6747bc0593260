"""Shared fixtures: every test gets its own dptext state folder (ledgers, config)."""

from __future__ import annotations

import pytest

from eval_fixtures import bbc_report  # noqa: F401  (session fixture: a real evaluation report)


@pytest.fixture(autouse=True)
def _dptext_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("dptext-home")
    monkeypatch.setenv("DPTEXT_HOME", str(home))
    return home
