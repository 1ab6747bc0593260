"""``dptext --help`` and every command's ``--help`` at 80 columns (the suite's terminal,
conftest.py): one-line command summaries, descriptions wrapped only where the terminal
is full, the options of the generating commands grouped in panels, and the Advanced
panel shown by ``--help-all`` only."""

from __future__ import annotations

import re
from itertools import pairwise

import pytest
from typer.testing import CliRunner

from dptext.cli import app

WIDTH = 80
COMMANDS = sorted(info.name or info.callback.__name__ for info in app.registered_commands)
#: the panels of ``generate --help-all``, in order (the options of a first run come first;
#: ``--help`` leaves out the last)
GENERATE_PANELS = ["Options", "Input", "Output", "Privacy", "Keyphrase model (DP-KPS)", "LLM",
                   "Run", "Budget across runs", "Scale-out", "Advanced"]


def _help(*args: str, flag: str = "--help") -> list[str]:
    res = CliRunner().invoke(app, [*args, flag])
    assert res.exit_code == 0, res.output
    return res.output.splitlines()


def _panel_rows(lines: list[str], title: str) -> list[str]:
    """The rows of the panel ``title``, without their borders and required marks."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ {title} "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    return [line[1:-1].strip().lstrip("* ") for line in lines[start + 1:end]]


def _flags(lines: list[str], title: str) -> set[str]:
    """The options of the panel ``title``: its rows that start a column, not a wrapped
    help text."""
    start = next(i for i, line in enumerate(lines) if line.startswith(f"╭─ {title} "))
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("╰"))
    rows = [line[1:].replace("*", " ") for line in lines[start + 1:end]]
    return {row.split()[0] for row in rows if row[:5].strip().startswith("--")}


def _panels(lines: list[str]) -> list[str]:
    return [re.match(r"╭─ (.+?) ─", line).group(1) for line in lines if line.startswith("╭─")]


def _description(lines: list[str]) -> list[list[str]]:
    """The paragraphs between the usage line and the first panel."""
    usage = next(i for i, line in enumerate(lines) if "Usage:" in line)
    first = next(i for i, line in enumerate(lines) if line.startswith("╭"))
    paragraphs: list[list[str]] = [[]]
    for line in lines[usage + 1:first]:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def test_every_command_summary_is_one_line_ending_a_sentence():
    rows = _panel_rows(_help(), "Commands")
    # each row starts with its command's name: no summary continues on a second line
    assert sorted(row.split()[0] for row in rows) == COMMANDS
    for row in rows:
        assert row.endswith("."), row


def _cut(paragraph: list[str]) -> list[str]:
    """Lines rich did not have to break: the next line's first word would have fitted
    (the text starts in column 2 and rich keeps a space at the right edge)."""
    room = WIDTH - 2
    return [line for line, nxt in pairwise(paragraph)
            if len(line) + 1 + len(nxt.split()[0]) < room]


@pytest.mark.parametrize("command", ["", *COMMANDS])
def test_help_fits_80_columns_and_breaks_lines_only_where_full(command):
    lines = _help(*([command] if command else []))
    assert max(len(line) for line in lines) <= WIDTH
    paragraphs = _description(lines)
    assert len(paragraphs[0]) == 1, paragraphs[0]  # the summary: one line
    assert paragraphs[0][0].endswith("."), paragraphs[0]
    for paragraph in paragraphs:
        assert _cut(paragraph) == [], paragraph


def test_the_check_catches_a_hard_line_break():
    # the old generate summary, as rich rendered it with the docstring's line breaks
    old = ["Write a DP synthetic corpus: DP keyphrase sequences, then one LLM document each",
           "(--method kps), or with another generator (--method augpe, pate or dpft; their own",
           "commands have all their options)."]
    assert _cut([line[:60] for line in old[:2]] + old[2:]) != []


def test_generate_help_is_grouped_in_panels():
    lines = _help("generate", flag="--help-all")
    assert _panels(lines) == GENERATE_PANELS
    flags = {p: {row.split()[0] for row in _panel_rows(lines, p) if row.startswith("--")}
             for p in GENERATE_PANELS}
    # what the README's first run uses is outside the Advanced panel
    assert {"--input", "--label-column", "--labels"} <= flags["Input"]
    assert {"--epsilon", "--delta"} <= flags["Privacy"]
    assert {"--model", "--select", "--vocab", "--terms-per-doc"} <= flags[
        "Keyphrase model (DP-KPS)"]
    assert {"--llm", "--document-type", "--max-tokens"} <= flags["LLM"]
    assert {"--out", "--method", "--sequences-per-class"} <= flags["Output"]
    assert {"--resume", "--cache", "--concurrency"} <= flags["Run"]
    assert {"--budget-total", "--dataset-id"} <= flags["Budget across runs"]
    assert {"--engine", "--ray-address"} <= flags["Scale-out"]
    assert {"--features", "--bandwidth", "--timeout", "--encoding", "--epsilon-vocab",
            "--epsilon-kde"} <= flags["Advanced"]


def test_help_leaves_the_advanced_options_to_help_all():
    """``--help`` is the first run's options; every other option is still there, in the
    Advanced panel of ``--help-all``, and still accepted."""
    short, full = _help("generate"), _help("generate", flag="--help-all")
    assert _panels(short) == GENERATE_PANELS[:-1]
    assert len(short) < 200 < len(full)
    assert [row.split()[0] for row in _panel_rows(short, "Options")] == ["--help-all", "--help"]
    advanced = _flags(full, "Advanced")
    assert {"--epsilon-vocab", "--features"} <= advanced
    assert any(f.startswith("--allow-budget-o") for f in advanced)  # cut to the column
    shown = set().union(*(_flags(short, panel) for panel in _panels(short)))
    assert not advanced & shown and "--epsilon" in shown
    res = CliRunner().invoke(app, ["generate", "--input", "x.csv", "--out", "y.jsonl",
                                   "--epsilon-vocab", "0"])
    assert "No such option" not in res.output and res.exit_code == 2  # refused as a value


@pytest.mark.parametrize("command", ["keyphrases", "augpe", "pate", "dpft", "evaluate"])
def test_the_other_commands_are_grouped_in_panels(command):
    lines = _help(command, flag="--help-all")
    panels = _panels(lines)
    assert panels[:3] == ["Options", "Input", "Output"] and panels[-1] == "Advanced", panels
    if command != "evaluate":  # it reads no private corpus to release from
        assert {"Privacy", "Run", "Budget across runs"} <= set(panels), panels
    # the default panel holds the two helps alone
    assert [row.split()[0] for row in _panel_rows(lines, "Options")] == ["--help-all", "--help"]
