"""Corpus readers: every format, and errors that name the file, the row and the field."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dptext.corpus import Corpus, InputError, PrivateValuesError, read_corpus, write_jsonl
from dptext.datasets import load_demo


def test_csv_labelled(tmp_path):
    p = tmp_path / "notes.csv"
    pd.DataFrame({"text": ["a b", "c d", "e"], "label": ["x", "y", "x"]}).to_csv(p, index=False)
    c = read_corpus(p, label_column="label")
    assert c.texts == ("a b", "c d", "e") and c.labels == ("x", "y", "x")
    assert c.classes == ["x", "y"]
    assert {k: v.tolist() for k, v in c.class_indices().items()} == {"x": [0, 2], "y": [1]}


def test_jsonl_parquet_and_unlabelled(tmp_path):
    rows = [{"body": "first doc", "cls": "a"}, {"body": "second doc", "cls": "b"}]
    j = tmp_path / "c.jsonl"
    write_jsonl(rows, j)
    assert read_corpus(j, text_column="body", label_column="cls").labels == ("a", "b")
    q = tmp_path / "c.parquet"
    pd.DataFrame(rows).to_parquet(q)
    c = read_corpus(q, text_column="body")
    assert c.labels is None and c.classes == [None] and len(c) == 2


def test_folder_per_label_and_flat_folder(tmp_path):
    for label, texts in {"cardio": ["heart", "valve"], "neuro": ["brain"]}.items():
        (tmp_path / "lab" / label).mkdir(parents=True)
        for i, t in enumerate(texts):
            (tmp_path / "lab" / label / f"{i}.txt").write_text(t)
    c = read_corpus(tmp_path / "lab")
    assert sorted(zip(c.labels, c.texts, strict=True)) == [
        ("cardio", "heart"), ("cardio", "valve"), ("neuro", "brain")]
    (tmp_path / "flat").mkdir()
    (tmp_path / "flat" / "a.txt").write_text("only")
    assert read_corpus(tmp_path / "flat").labels is None


def test_missing_column_names_file_and_columns(tmp_path):
    p = tmp_path / "n.csv"
    pd.DataFrame({"note": ["x"], "dx": ["y"]}).to_csv(p, index=False)
    with pytest.raises(InputError, match=r"n\.csv.*no column 'text'.*'note', 'dx'.*--text-column"):
        read_corpus(p)
    with pytest.raises(InputError, match="no column 'label'"):
        read_corpus(p, text_column="note", label_column="label")


def test_empty_documents_named_by_line_and_skippable(tmp_path):
    p = tmp_path / "n.csv"
    pd.DataFrame({"text": ["ok", "  ", "", "fine"], "label": ["a", "a", "b", ""]}).to_csv(
        p, index=False)
    with pytest.raises(PrivateValuesError) as e:
        read_corpus(p, label_column="label")
    msg = str(e.value)  # which rows is private: in the detail `dptext inspect` shows
    assert "'text'" in msg and "'label'" in msg and "--skip-invalid" in msg
    assert "line" not in msg and "dptext inspect" in msg
    detail = e.value.detail
    assert "line 3" in detail and "line 4" in detail and "'text'" in detail  # header: line 1
    assert "line 5" in detail and "'label'" in detail
    c = read_corpus(p, label_column="label", skip_invalid=True)
    assert c.texts == ("ok",)


def test_undecodable_file_names_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_bytes(b"text\nfine\nbad \xff\xfe byte\n")
    with pytest.raises(InputError, match=r"bad\.csv: line 3 is not valid utf-8.*--encoding"):
        read_corpus(p)
    assert read_corpus(p, encoding="latin-1").texts[1].startswith("bad")


def test_bad_jsonl_line(tmp_path):
    p = tmp_path / "x.jsonl"
    p.write_text(json.dumps({"text": "a"}) + "\n{not json\n")
    with pytest.raises(InputError, match="line 2 is not valid JSON"):
        read_corpus(p)
    p.write_text("[1, 2]\n")
    with pytest.raises(InputError, match="line 1 is a JSON list"):
        read_corpus(p)


def test_unknown_extension_and_missing_path(tmp_path):
    (tmp_path / "x.docx").write_text("x")
    with pytest.raises(InputError, match="--format"):
        read_corpus(tmp_path / "x.docx")
    with pytest.raises(InputError, match="no such file"):
        read_corpus(tmp_path / "nope.csv")


def test_demo_corpora_split_is_fixed_and_disjoint():
    train, test = load_demo("bbc-news/train"), load_demo("bbc-news/test")
    assert 2000 < len(train) + len(test) <= 2225  # exact duplicates dropped
    assert len(set(train.texts)) == len(train)
    assert not set(train.texts) & set(test.texts)
    assert set(train.labels) == {"business", "entertainment", "politics", "sports", "tech"}
    assert load_demo("bbc-news/test").texts == test.texts
    with pytest.raises(InputError, match="unknown demo corpus"):
        load_demo("mimic")


@pytest.mark.parametrize(("name", "n_train", "n_test", "n_classes", "some_label"), [
    ("complaints", 10_000, 3_000, 8, "Debt collection"),
    ("banking77", 9_999, 3_073, 77, "card_arrival"),  # 10,003 + 3,080 less duplicates
    ("drug-reviews", 600, 378, 3, "neutral"),  # 979 less one duplicate review
])
def test_demo_corpora_with_their_own_split(name, n_train, n_test, n_classes, some_label):
    train, test = load_demo(f"{name}/train"), load_demo(f"{name}/test")
    assert (len(train), len(test)) == (n_train, n_test)
    assert len(load_demo(name)) == n_train + n_test
    assert len(set(train.labels)) == len(set(test.labels)) == n_classes
    assert some_label in train.labels
    assert all(t.strip() == t and t for t in train.texts + test.texts)
    assert not set(train.texts) & set(test.texts)
    assert not any("&#039;" in t for t in train.texts)  # HTML entities unescaped
    if name == "drug-reviews":  # each review wrapped in quotes in the file
        assert not any(t.startswith('"') for t in train.texts)


def test_corpus_rejects_mismatched_lengths():
    with pytest.raises(ValueError):
        Corpus(texts=("a",), labels=("x", "y"))
