"""The dataset card of a DP-KPS run lists the parameters of the model that was used (read
off the fit's plan), the releases in plain words, and nothing that did not shape the
release: no KDE parameter on a histogram run."""

from __future__ import annotations

import re

import numpy as np
import pytest

from dptext.generators.kps.generator import seeder_parameters
from dptext.privacy_report import build_report
from dptext.run.release import write_release
from test_kps_models import _corpus, _seeder

KDE_ONLY = ("epsilon_kde", "bandwidth", "features", "kde_noise", "ensemble", "windows_per_doc",
            "contrastive_keep")


def _card(tmp_path, **options) -> tuple[str, dict]:
    seeder = _seeder(**options).fit(_corpus(), rng=np.random.default_rng(0))
    report = build_report(seeder.ledger_, command="generate",
                          parameters={**seeder_parameters(seeder, labelled=True),
                                      "llm": "recording", "llm_calls": 12})
    records = [{"text": "a", "label": "fruit"}, {"text": "b", "label": "sport"}]
    folder = write_release(tmp_path / "out.jsonl", records, report, method="kps")
    return (folder / "README.md").read_text(encoding="utf-8"), report


def _listed(card: str) -> set[str]:
    return set(re.findall(r"^  - `([\w.]+)`:", card, re.M))


def _plain(card: str) -> list[str]:
    start = card.index("every release, in plain words")
    block = card[start:card.index("The same releases in detail")]
    return [line for line in block.splitlines() if line.startswith("- ")]


@pytest.mark.parametrize("epsilon", [8.0, None])
def test_histogram_run_card_lists_the_histogram_and_no_kde_parameter(tmp_path, epsilon):
    extra = {} if epsilon else {"epsilon": None, "epsilon_vocab": 2.0, "epsilon_kde": 6.0}
    # form=False: no per-class release, so one plain line per release (the form profile's
    # card: tests/test_kps_form_selection.py)
    card, report = _card(tmp_path, form=False, **extra)
    listed = _listed(card)
    assert not listed & set(KDE_ONLY), listed
    assert {"vocab", "terms_per_doc", "terms_per_doc_used", "vocab_noise", "model",
            "select"} <= listed
    assert "llm" in listed and "llm_calls" not in listed  # a count, not a choice
    # the share of ε: a total's split needs no option; per stage, the histogram's own ε
    assert ("epsilon_histogram" in listed) == (epsilon is None)
    assert "- Keyphrase model: histogram (purity power" in card
    assert "chosen privately among" in card
    plain = _plain(card)
    assert len(plain) == len(report["releases"])  # one line each (none partitioned here)
    assert plain[0].startswith("- class × term histogram") and "Gaussian noise" in plain[0]
    assert any("report-noisy-max" in line for line in plain)
    for line, r in zip(plain, report["releases"], strict=True):
        assert f"ε = {r['epsilon']:.4g}" in line


def test_kde_run_card_lists_the_kde_and_its_vocabulary(tmp_path):
    card, _ = _card(tmp_path, model="kde", select="none")
    listed = _listed(card)
    assert {"vocab", "vocab_size", "features", "bandwidth", "kde_noise", "method",
            "sampling"} <= listed
    assert not {"histogram_terms", "histogram_power", "selection_margin", "mixture"} & listed
    plain = _plain(card)
    sketches = [line for line in plain if line.startswith("- KDE sketch sums")]
    # one sketch release per class, one line: they compose in parallel
    assert len(sketches) == 1 and "one per class (2," in sketches[0]
    assert any(line.startswith("- vocabulary histogram") for line in plain)
