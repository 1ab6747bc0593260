"""Issue #56: what a run prints is released values only, whatever the terminal. A
pseudo-terminal (``docker run -t``, ``script``, CI runners) or ``FORCE_COLOR`` /
``TTY_COMPATIBLE`` makes rich call a logged stream a terminal, so nothing may depend on
``is_terminal``; the private facts a curator needs are shown by ``dptext inspect`` only."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli_output import said
from dptext.cli import app
from dptext.cli.app import console as cli_console
from dptext.cli.options import announce_corpus, user_errors
from dptext.corpus import Corpus, PrivateValuesError, read_corpus


@pytest.fixture
def logged_terminal(monkeypatch):
    """The CLI's console believes it writes to a terminal (what FORCE_COLOR=1,
    TTY_COMPATIBLE=1 or a pseudo-terminal make it believe) while the output is logged."""
    monkeypatch.setattr(cli_console, "_force_terminal", True)
    assert cli_console.is_terminal


def _csv(tmp_path, rows: str):
    path = tmp_path / "c.csv"
    path.write_text("text,label\n" + rows)
    return path


def test_the_corpus_size_is_not_announced(logged_terminal, capsys):
    corpus = Corpus(texts=tuple(f"note {i}" for i in range(37)), source="notes.csv")
    with cli_console.capture() as cap:
        announce_corpus(corpus)
    assert "notes.csv" in cap.get() and "37" not in cap.get()


def test_private_detail_of_an_error_is_not_printed(logged_terminal):
    import typer

    with cli_console.capture() as cap, pytest.raises(typer.Exit), user_errors():
        raise PrivateValuesError("some labels are not declared", "labels: ['Zebulon ward']")
    assert "some labels are not declared" in cap.get() and "Zebulon" not in cap.get()


def test_undeclared_labels_name_nothing_and_inspect_names_them(logged_terminal, tmp_path):
    path = _csv(tmp_path, "a goal,sport\nthe ward round,Zebulon ward\nanother goal,sport\n")
    res = CliRunner().invoke(app, [
        "generate", "--method", "augpe", "-i", str(path), "--label-column", "label",
        "--labels", "sport", "--epsilon", "2", "-o", str(tmp_path / "o.jsonl"),
        "--llm", "recording:", "--no-progress"])
    assert res.exit_code == 2, res.output
    assert "not among the declared labels" in said(res.output)
    assert "Zebulon" not in res.output and "dptext inspect" in said(res.output)
    assert "3 documents" not in res.output
    shown = CliRunner().invoke(app, ["inspect", "-i", str(path), "--label-column", "label",
                                     "--labels", "sport"])
    assert shown.exit_code == 0, shown.output
    text = said(shown.output)
    assert "PRIVATE" in text and "3 usable documents" in text
    assert "labels not declared: 'Zebulon ward'" in text


def test_bad_rows_are_not_listed_nor_counted(logged_terminal, tmp_path):
    path = _csv(tmp_path, "a goal,sport\n,sport\nbank profit,business\n\"  \",sport\n")
    with pytest.raises(PrivateValuesError) as err:
        read_corpus(path, label_column="label")
    assert "line" not in str(err.value) and "dptext inspect" in str(err.value)
    assert "line 3" in err.value.detail and "line 5" in err.value.detail
    res = CliRunner().invoke(app, ["budget", "-i", str(path), "--label-column", "label"])
    assert res.exit_code == 2 and "empty or missing field 'text'" in said(res.output)
    assert "line 3" not in said(res.output) and "line 5" not in said(res.output)
    shown = CliRunner().invoke(app, ["inspect", "-i", str(path), "--label-column", "label"])
    assert shown.exit_code == 0, shown.output
    assert "line 3, line 5" in said(shown.output) and "2 usable documents" in said(shown.output)
    empty = _csv(tmp_path, ",sport\n,sport\n")
    with pytest.raises(PrivateValuesError, match="every row is empty") as err:
        read_corpus(empty, label_column="label", skip_invalid=True)
    assert "2" not in str(err.value).replace(str(empty), "")
