"""Shared fixtures: every test gets its own dptext state folder (ledgers, config)."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _dptext_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("dptext-home")
    monkeypatch.setenv("DPTEXT_HOME", str(home))
    return home
