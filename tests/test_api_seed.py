"""``dptext.synthesize(seed=...)`` reaches a generator's own public seed (PATE's candidate
prompts, folds and queried subset) as ``--seed`` does on the command line; generators
without one take the seed through the run only."""

from __future__ import annotations

import pytest

import dptext
import dptext.api


@pytest.fixture
def made(monkeypatch):
    """The generator ``synthesize`` would run, and the seed it would hand the run."""
    seen = {}

    def run(generator, source, out, **kw):
        seen.update(generator=generator, seed=kw["seed"])

    monkeypatch.setattr(dptext.api, "run", run)
    return seen


def test_the_runs_seed_becomes_pates_public_seed(made, tmp_path):
    dptext.synthesize("demo:x", "pate", out=tmp_path / "a.jsonl", epsilon=4.0, seed=7)
    assert made["generator"].config.seed == 7 and made["seed"] == 7
    dptext.synthesize("demo:x", "pate", out=tmp_path / "a.jsonl", epsilon=4.0)
    assert made["generator"].config.seed == 0 and made["seed"] is None


def test_generators_without_a_public_seed_option_take_it_through_the_run(made, tmp_path):
    for method in ("kps", "augpe", "dpft"):
        dptext.synthesize("demo:x", method, out=tmp_path / "a.jsonl", epsilon=4.0, seed=7)
        assert made["seed"] == 7
