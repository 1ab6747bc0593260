"""Shared fixtures: every test gets its own dptext state folder (ledgers, config), and
every test sees the same terminal.

The terminal: whatever runs the suite (an 80- or a 200-column terminal, a CI runner with
no terminal at all, ``pytest -s``), rich and typer see an 80-column terminal without
colour or cursor control, so CLI output is laid out the same everywhere. 80 columns is
the narrowest common terminal and what rich assumes when there is none, so the suite
always exercises the layout a new user and CI get. The variables are rich's own
(COLUMNS, LINES, NO_COLOR, TTY_COMPATIBLE) and typer's; they are set here, before rich,
typer or dptext is imported, because the CLI's console is built at import and reads them
then. Tests of how output looks at another width build their own ``Console(width=...)``.
"""

from __future__ import annotations

import os

TEST_TERMINAL = {
    "COLUMNS": "80",
    "LINES": "24",
    "NO_COLOR": "1",
    "TTY_COMPATIBLE": "0",  # not a terminal: no colour, no live spinners or progress bars
    "_TYPER_FORCE_DISABLE_TERMINAL": "1",  # typer's --help, even where GITHUB_ACTIONS is set
}
os.environ.update(TEST_TERMINAL)
for _var in ("FORCE_COLOR", "PY_COLORS", "CLICOLOR_FORCE", "TTY_INTERACTIVE", "TERMINAL_WIDTH"):
    os.environ.pop(_var, None)

from xdist_workers import (  # noqa: E402,F401  (the hooks: grouped files under xdist)
    one_thread_per_worker,
    pytest_collection_modifyitems,
    pytest_xdist_make_scheduler,
)

one_thread_per_worker()  # before numpy or torch is imported

import pytest  # noqa: E402

from accounting_memo import _one_pld_per_gaussian  # noqa: E402,F401  (autouse, session)
from eval_fixtures import bbc_report  # noqa: E402,F401  (session fixture: a real evaluation report)
from isolation import _dptext_home, _prompt_cache  # noqa: E402,F401  (autouse: own state)
from ray_cluster import cluster  # noqa: E402,F401  (session fixture: a loopback Ray cluster)


@pytest.fixture(scope="session")
def tiny():
    """The dpft tests' tiny causal LM factory (no weights to load)."""
    from dptext.generators.dpft.model import tiny_model

    return tiny_model


@pytest.fixture
def offline_datasets(tmp_path, monkeypatch):
    """``datasets`` with its cache in tmp_path and no hub (none is reachable)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "hf-datasets"))
    import datasets

    return datasets
