"""Reading synthetic files, keyphrase files and privacy reports."""

from __future__ import annotations

import json

import pytest

from dptext.corpus import InputError
from dptext.evaluate.data import guarantee, read_privacy_report, read_synthetic


def test_synthetic_multilabel_and_keyphrase_files(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text(json.dumps({"text": "t", "label": ["a", "b"], "keyphrases": ["x"]}) + "\n")
    s = read_synthetic(p)
    assert s.labels == (("a", "b"),) and s.multilabel and not s.keyphrase_only
    k = tmp_path / "k.jsonl"
    k.write_text(json.dumps({"label": "a", "keyphrases": ["heart failure", "fever"]}) + "\n")
    s = read_synthetic(k)
    assert s.keyphrase_only and s.texts == ("heart failure, fever",)


def test_bad_synthetic_lines_name_the_line(tmp_path):
    p = tmp_path / "s.jsonl"
    p.write_text('{"text": "ok", "label": "a"}\n{"text": "x", "label": "a", "keyphrases": 3}\n')
    with pytest.raises(InputError, match="line 2"):
        read_synthetic(p)


@pytest.mark.parametrize("name", ["s.privacy.json", "privacy.json"])
def test_privacy_report_beside_the_file(tmp_path, name):
    (tmp_path / name).write_text(json.dumps(
        {"guarantee": {"epsilon": 2.5, "delta": 1e-6, "method": "pld"}, "releases": []}))
    g = guarantee(read_privacy_report(tmp_path / "s.jsonl"))
    assert g == {"epsilon": 2.5, "delta": 1e-6, "method": "pld"}
    assert guarantee(None) is None
