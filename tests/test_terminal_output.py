"""What the CLI prints, independent of the terminal running the tests: the suite's fixed
terminal (conftest.py), and the privacy report table at 80 columns and at 200."""

from __future__ import annotations

import io
import re

import pytest
from rich.console import Console
from typer.testing import CliRunner

from cli_output import said
from dptext.cli import app
from dptext.cli.app import console as cli_console
from dptext.privacy import PrivacyLedger, Release
from dptext.privacy_report import build_report, print_report

CLASSES = ("business", "entertainment", "politics", "sports", "tech")


def _release(name, *, mechanism="gaussian", scale=96.6, dim=4000, eps=4.152, delta=5e-6,
             partition=None, group=None) -> Release:
    norm = "L1" if mechanism == "laplace" else "L2"
    return Release(name=name, mechanism=mechanism, neighbouring="add/remove one document",
                   sensitivity_norm=norm, sensitivity=89.44, sensitivity_reason="t",
                   noise_scale=scale, noise_multiplier=1.08, dimension=dim, epsilon=eps,
                   delta=0.0 if mechanism == "laplace" else delta, partition=partition,
                   parallel_group=group,
                   **({"sampling_rate": 0.01, "steps": 100} if mechanism == "dp-sgd" else {}))


def _report() -> dict:
    """A report shaped like `dptext keyphrases`' (a vocabulary, one KDE sketch per class),
    plus a Laplace and a DP-SGD release."""
    ledger = PrivacyLedger()
    ledger.record(_release("vocabulary histogram (english:20000)", scale=9.66, dim=20000))
    for c in CLASSES:
        ledger.record(_release("KDE sketch sums", partition=f"class={c}", group="sketches"))
    ledger.record(_release("label histogram", mechanism="laplace", scale=2.0, dim=5, eps=0.5))
    ledger.record(_release("DP-SGD fine-tuning", mechanism="dp-sgd", scale=0.573, dim=1792,
                           eps=2.0, delta=1e-6))
    return build_report(ledger, command="test", parameters={},
                        notes=["The label set was read from the private data and is treated "
                               "as public; declare it with --labels if a label name could "
                               "itself be sensitive."])


def _printed(width: int) -> str:
    out = Console(width=width, record=True, color_system=None, file=io.StringIO())
    print_report(_report(), out)
    return "\n".join(line.rstrip() for line in out.export_text().splitlines())


def test_the_suite_runs_in_a_fixed_terminal():
    # conftest.py: 80 columns, no colour, not a terminal, whatever runs the tests
    assert cli_console.width == 80
    assert not cli_console.is_terminal and cli_console.color_system is None
    res = CliRunner().invoke(app, ["keyphrases", "--help"])
    assert res.exit_code == 0
    assert "\x1b[" not in res.output
    assert max(len(line) for line in res.output.splitlines()) <= 80


def test_release_table_fits_80_columns():
    text = _printed(80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    # the compact layout: short labels, no side borders, one row per numeric release
    header = next(line for line in lines if line.startswith("release"))
    assert header.split() == ["release", "mech.", "sens.", "noise", "values", "ε", "δ", "comp."]
    assert "│" not in text and "┃" not in text
    # every number whole on one line; the five alike sketch releases on one row
    assert re.search(r"^vocabulary histogram +gaussian +L2 89\.44 +σ 9\.66 +20000 +4\.152 "
                     r"+5e-06 +seq\n\(english:20000\)$", text, re.M)  # only the name wraps
    assert re.search(r"^KDE sketch sums +gaussian +L2 89\.44 +σ 96\.6 +4000 +4\.152 +5e-06 "
                     r"+par ×5$", text, re.M)
    assert re.search(r"^label histogram +laplace +L1 89\.44 +b 2 +5 +0\.5 +0 +seq$", text, re.M)
    assert re.search(r"^DP-SGD fine-tuning +dp-sgd +L2 89\.44 +σ 0\.573 +1792 +2 +1e-06 +seq$",
                     text, re.M)
    assert "par ×n = parallel over n disjoint partitions" in said(text)
    assert "Guarantee of this run:" in text and "by PLD accountant" in said(text)
    # a note that wraps keeps its indent under the bullet
    note = lines.index(next(line for line in lines if "• The label set" in line))
    assert lines[note + 1].startswith("    ") and lines[note + 1].strip()


@pytest.mark.parametrize("width", [100, 149])
def test_release_table_is_compact_until_the_full_one_fits(width):
    text = _printed(width)
    assert "par ×5" in text and "│" not in text
    assert max(len(line) for line in text.splitlines()) <= width


def test_release_table_at_200_columns_lists_every_release():
    text = _printed(200)
    rows = [line for line in text.splitlines() if line.startswith("│")]
    assert len(rows) == 8  # one row per release, none wrapped
    assert [cell.strip() for cell in rows[0].split("│")[1:-1]] == [
        "vocabulary histogram (english:20000)", "gaussian", "L2 89.44",
        "Gaussian σ = 9.66 on 20000 values", "4.152", "5e-06", "sequential"]
    for c in CLASSES:  # a partition is shown as written, not taken for rich markup
        assert f"KDE sketch sums [class={c}]" in text
    assert text.count("parallel (disjoint documents)") == 5
    assert "Laplace b = 2 on 5 values" in text
    g = _report()["guarantee"]
    assert f"Guarantee of this run: {g['summary']} — {g['method']}" in text


def test_default_dpkps_table_keeps_its_release_names_at_80_columns():
    """The default model's releases (label set, histogram on the fit fold, report-noisy-max
    on the validation fold) have long mechanism and norm names: the compact table shortens
    them rather than squeezing the release names out."""
    from dataclasses import replace

    ledger = PrivacyLedger()
    ledger.record(_release("label set", scale=2.486, dim=5, eps=1.695))
    ledger.record(replace(_release("class × term histogram (20000 public terms)",
                                   scale=7.411, dim=100000, eps=5.826), fold="fit"))
    ledger.record(replace(_release("model selection (3 candidates)", mechanism="laplace",
                                   scale=0.2323, dim=3, eps=4.304),
                          mechanism="report-noisy-max", sensitivity_norm="Linf (monotone)",
                          delta=0.0, fold="validation"))
    out = Console(width=80, record=True, color_system=None, file=io.StringIO())
    print_report(build_report(ledger, command="test", parameters={}), out)
    text = out.export_text()
    assert max(len(line.rstrip()) for line in text.splitlines()) <= 80
    assert re.search(r"^label set +gaussian", text, re.M)
    assert re.search(r"^class × term +gaussian .* 100000 +5\.826 .* seq fit$", text, re.M)
    assert re.search(r"^model selection +noisy-max +Linf 89\.44 +b 0\.2323 +3 +4\.304 +0 "
                     r"+seq val$", text, re.M)
