"""Gold coreference readers on real LitBank files, and their errors on bad input."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from coref_helpers import extract_litbank
from dptext.corpus import InputError
from dptext.evaluate.coref import DEMO, read_gold
from dptext.evaluate.coref.documents import CorefDoc

SHARED_CONLL = Path(__file__).resolve().parents[1].parent / "shared/data/litbank/coref-conll.tar.xz"


def test_demo_archive_holds_litbank():
    docs = read_gold(DEMO)
    assert len(docs) == 100
    assert sum(d.n_tokens for d in docs) == 210_532  # LitBank's own count
    bleak = next(d for d in docs if d.name == "1023_bleak_house_brat")
    assert bleak.sentences[1][11:15] == ("Lincoln", "'s", "Inn", "Hall")
    # 'Lincoln 's Inn Hall' (sentence 1, tokens 11-14) is one chain with the later mention
    # in sentence 17, tokens 7-10 (rows T2 and T26 of the .ann file)
    offsets = [sum(len(s) for s in bleak.sentences[:k]) for k in (1, 17)]
    chain = next(c for c in bleak.clusters if (offsets[0] + 11, offsets[0] + 14) in c)
    assert (offsets[1] + 7, offsets[1] + 10) in chain


def test_folder_of_tsv_files(tmp_path):
    names = extract_litbank(tmp_path / "gold", 3)
    docs = read_gold(tmp_path / "gold")
    assert [d.name for d in docs] == names
    demo = {d.name: d for d in read_gold(DEMO)}
    assert all(d == demo[d.name] for d in docs)


@pytest.mark.skipif(not SHARED_CONLL.exists(), reason="needs ../shared/data/litbank")
def test_conll_and_tsv_agree(tmp_path):
    with tarfile.open(SHARED_CONLL) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("1023_bleak_house_brat.conll"))
        (tmp_path / "bleak.conll").write_bytes(tar.extractfile(member).read())
    (conll,) = read_gold(tmp_path / "bleak.conll")
    tsv = next(d for d in read_gold(DEMO) if d.name == conll.name)
    assert conll.sentences == tsv.sentences
    assert set(conll.clusters) == set(tsv.clusters)


def test_truncation_keeps_whole_sentences_and_inner_mentions():
    d = CorefDoc("d", (("a", "b"), ("c", "d", "e"), ("f",)), (((0, 0), (4, 4)), ((2, 3),)))
    t = d.truncated(4)
    assert t.sentences == (("a", "b"),) and t.clusters == (((0, 0),),)
    assert d.truncated(5).clusters == (((0, 0), (4, 4)), ((2, 3),))


def test_bad_ann_row_names_file_and_line(tmp_path):
    (tmp_path / "x.txt").write_text("A man came .\nHe sat .\n")
    (tmp_path / "x.ann").write_text("MENTION\tT1\t0\t0\t0\t1\tA man\tPER\tNOM\n"
                                    "MENTION\tT2\t5\t0\t5\t0\tHe\tPER\tPRON\n")
    with pytest.raises(InputError, match=r"x\.ann line 2: a MENTION row"):
        read_gold(tmp_path)


def test_coref_row_with_unknown_mention(tmp_path):
    (tmp_path / "x.txt").write_text("A man came .\n")
    (tmp_path / "x.ann").write_text("MENTION\tT1\t0\t0\t0\t1\tA man\tPER\tNOM\nCOREF\tT9\tE1\n")
    with pytest.raises(InputError, match="T9 with no MENTION row"):
        read_gold(tmp_path)


def test_ann_without_txt_and_empty_folder(tmp_path):
    (tmp_path / "x.ann").write_text("")
    with pytest.raises(InputError, match=r"no x\.txt beside it"):
        read_gold(tmp_path)
    (tmp_path / "x.ann").unlink()
    with pytest.raises(InputError, match="no gold coreference documents"):
        read_gold(tmp_path)


def test_bad_conll_names_line(tmp_path):
    text = ("#begin document (d); part 0\n"
            "d\t0\t0\tHe\t_\t(1\n"
            "d\t0\t1\tsat\t_\t2)\n"
            "#end document\n")
    (tmp_path / "d.conll").write_text(text)
    with pytest.raises(InputError, match=r"d\.conll line 3: chain 2 closed but never opened"):
        read_gold(tmp_path)
    (tmp_path / "d.conll").write_text(text.replace("2)", "-"))
    with pytest.raises(InputError, match=r"line 4: '#end document' with chain\(s\) 1 still"):
        read_gold(tmp_path)
    (tmp_path / "d.conll").write_text(text.replace("2)", "1)"))
    (doc,) = read_gold(tmp_path)
    assert doc.sentences == (("He", "sat"),) and doc.clusters == (((0, 1),),)
