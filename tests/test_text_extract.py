"""Tokenisation and phrase extraction: hand-checked cases and properties."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dptext.text.extract import PhraseExtractor, normalize_phrase, tokenize


def terms_of(ex: PhraseExtractor, indices) -> list[str]:
    return [ex.terms[i] for i in indices]


# -- tokenize ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("Acute heart-failure.", ["acute", "heart", "failure"]),
        ("snake_case and it's", ["snake", "case", "and", "it", "s"]),
        ("  ", []),
        ("", []),
        ("COVID-19 at 10:30", ["covid", "19", "at", "10", "30"]),
        ("Café naïve Ärzte", ["café", "naïve", "ärzte"]),
        ("Здоровье 健康 x", ["здоровье", "健康", "x"]),
        ("हिन्दी भाषा", ["हिन्दी", "भाषा"]),  # vowel signs are combining marks
        ("cafe\u0301 ＡＢＣ", ["café", "ａｂｃ"]),  # NFC: decomposed accent composes
        ("tab\there\nnewline", ["tab", "here", "newline"]),
        ("#hashtag @user http://t.co/AbC", ["hashtag", "user", "http", "t", "co", "abc"]),
    ],
)
def test_tokenize(text, tokens):
    assert tokenize(text) == tokens


def test_normalize_phrase():
    assert normalize_phrase("  Heart   Failure, ") == "heart failure"
    assert normalize_phrase("--") == ""
    assert normalize_phrase(normalize_phrase("A-b C")) == "a b c"


# -- extract ----------------------------------------------------------------------


@pytest.fixture
def ex():
    return PhraseExtractor(
        ["heart", "heart failure", "failure", "art", "acute heart failure", "blood", "café"]
    )


def test_word_boundaries(ex):
    assert terms_of(ex, ex.extract("the art of the heart")) == ["art", "heart"]
    assert list(ex.extract("hearts, smart, partial, bloody")) == []


def test_leftmost_longest(ex):
    assert terms_of(ex, ex.extract("acute heart failure.")) == ["acute heart failure"]
    assert terms_of(ex, ex.extract("chronic heart failure")) == ["heart failure"]
    assert terms_of(ex, ex.extract("heart and failure")) == ["heart", "failure"]
    # Punctuation is not a token, so a phrase matches across it (documented behaviour).
    assert terms_of(ex, ex.extract("heart, failure")) == ["heart failure"]
    assert terms_of(ex, ex.extract("Acute HEART-failure!")) == ["acute heart failure"]


def test_non_overlapping_and_repeats(ex):
    text = "heart failure failure heart heart art"
    assert terms_of(ex, ex.extract(text)) == ["heart failure", "failure", "heart", "heart", "art"]


def test_unicode(ex):
    assert terms_of(ex, ex.extract("Un CAFÉ, s'il vous plaît")) == ["café"]
    assert list(ex.extract("cafés")) == []


def test_returns_int32(ex):
    out = ex.extract("heart")
    assert out.dtype == np.int32
    empty = ex.extract("nothing here")
    assert empty.dtype == np.int32 and empty.shape == (0,)


def test_first_distinct(ex):
    text = "heart art heart blood failure art café"
    assert terms_of(ex, ex.first_distinct(text, 3)) == ["heart", "art", "blood"]
    assert terms_of(ex, ex.first_distinct(text, 10)) == ["heart", "art", "blood", "failure", "café"]
    assert list(ex.first_distinct(text, 0)) == []
    assert ex.first_distinct(text, 2).dtype == np.int32
    with pytest.raises(ValueError):
        ex.first_distinct(text, -1)


def test_extract_many(ex):
    texts = ["heart art heart blood", "", "acute heart failure, failure"]
    full = ex.extract_many(texts)
    assert [terms_of(ex, r) for r in full] == [
        ["heart", "art", "heart", "blood"],
        [],
        ["acute heart failure", "failure"],
    ]
    capped = ex.extract_many(texts, max_terms=2)
    assert [terms_of(ex, r) for r in capped] == [
        ["heart", "art"],
        [],
        ["acute heart failure", "failure"],
    ]
    distinct = ex.extract_many(texts, distinct=True)
    assert terms_of(ex, distinct[0]) == ["heart", "art", "blood"]
    distinct2 = ex.extract_many(texts, max_terms=2, distinct=True)
    assert terms_of(ex, distinct2[0]) == ["heart", "art"]
    assert all(r.dtype == np.int32 for r in full + capped + distinct + distinct2)
    assert [list(r) for r in ex.extract_many(texts, max_terms=0)] == [[], [], []]


def test_empty_extractor():
    ex = PhraseExtractor([])
    assert list(ex.extract("anything")) == []
    assert list(ex.first_distinct("anything", 3)) == []


def test_rejects_unnormalised_or_duplicate_terms():
    with pytest.raises(ValueError, match="normalised"):
        PhraseExtractor(["Heart"]).extract("heart")
    with pytest.raises(ValueError, match="more than once"):
        PhraseExtractor(["heart", "heart"]).extract("heart")


def test_match_pending_at_end_of_text():
    # pyahocorasick's iter_long misses these (a shorter term inside a failed longer one).
    ex = PhraseExtractor(["a", "b a a"])
    assert terms_of(ex, ex.extract("b a")) == ["a"]
    assert terms_of(ex, ex.extract("b a b a a")) == ["a", "b a a"]
    ex = PhraseExtractor(["a a a", "c", "a a", "a b c a", "b c a"])
    assert terms_of(ex, ex.extract("a b c")) == ["c"]
    assert terms_of(ex, ex.extract("a b c a a a")) == ["a b c a", "a a"]


def test_pickles_without_automaton(ex):
    ex.extract("heart")  # build
    clone = pickle.loads(pickle.dumps(ex))
    assert clone._automaton is None
    assert list(clone.extract("heart failure")) == list(ex.extract("heart failure"))


# -- properties -------------------------------------------------------------------

WORDS = ["a", "b", "c", "ab", "é", "1"]
word = st.sampled_from(WORDS)
term_st = st.lists(word, min_size=1, max_size=3).map(" ".join)
seps = st.sampled_from([" ", "  ", "-", ", ", "_", "'", "\n", ". "])
text_st = st.lists(st.tuples(word, seps), max_size=25).map(
    lambda pairs: "".join(w + s for w, s in pairs)
)


def reference_extract(terms: list[str], text: str) -> list[int]:
    """Leftmost-longest, non-overlapping, whole-token matching, the slow way."""
    index = {tuple(t.split(" ")): i for i, t in enumerate(terms)}
    longest = max((len(k) for k in index), default=0)
    tokens = tokenize(text)
    out, i = [], 0
    while i < len(tokens):
        for n in range(min(longest, len(tokens) - i), 0, -1):
            hit = index.get(tuple(tokens[i : i + n]))
            if hit is not None:
                out.append(hit)
                i += n
                break
        else:
            i += 1
    return out


@settings(max_examples=300, deadline=None)
@given(terms=st.lists(term_st, min_size=1, max_size=8, unique=True), text=text_st)
def test_extract_matches_reference(terms, text):
    ex = PhraseExtractor(terms)
    got = ex.extract(text)
    assert list(got) == reference_extract(terms, text)
    padded = " " + normalize_phrase(text) + " "
    for i in got:
        assert 0 <= i < len(terms)
        assert f" {terms[i]} " in padded  # a word-bounded substring of the normalised text


dense_word = st.sampled_from(["a", "b", "c"])


@settings(max_examples=500, deadline=None)
@given(
    terms=st.lists(
        st.lists(dense_word, min_size=1, max_size=5).map(" ".join), max_size=15, unique=True
    ),
    text=st.lists(dense_word, max_size=30).map(" ".join),
)
def test_extract_matches_reference_dense(terms, text):
    # Few distinct words: long terms share prefixes and contain each other.
    ex = PhraseExtractor(terms)
    assert list(ex.extract(text)) == reference_extract(terms, text)


@settings(max_examples=200, deadline=None)
@given(
    terms=st.lists(term_st, min_size=1, max_size=8, unique=True),
    text=text_st,
    k=st.integers(min_value=0, max_value=6),
)
def test_first_distinct_is_capped_first_occurrence_order(terms, text, k):
    ex = PhraseExtractor(terms)
    full = list(ex.extract(text))
    first = list(ex.first_distinct(text, k))
    assert len(first) <= k
    assert len(set(first)) == len(first)
    expected = list(dict.fromkeys(full))[:k]
    assert first == expected
    # a subsequence of extract, in order
    it = iter(full)
    assert all(any(x == y for y in it) for x in first)
    many = ex.extract_many([text, text], max_terms=k, distinct=True)
    assert [list(r) for r in many] == [first, first]


@settings(max_examples=200, deadline=None)
@given(
    terms=st.lists(term_st, min_size=1, max_size=8, unique=True),
    text=text_st,
    k=st.integers(min_value=0, max_value=6),
    deferred=st.sets(st.integers(min_value=0, max_value=7)),
)
def test_deferred_terms_only_fill_what_the_others_leave(terms, text, k, deferred):
    """Deferred terms (function words) come after every other term: the first k distinct
    terms are the first other terms, then the first deferred ones; pickling keeps them."""
    ex = PhraseExtractor(terms, deferred=deferred)
    order = list(dict.fromkeys(PhraseExtractor(terms).extract(text)))
    expected = ([t for t in order if t not in deferred]
                + [t for t in order if t in deferred])[:k]
    assert list(ex.first_distinct(text, k)) == expected
    again = pickle.loads(pickle.dumps(ex))
    assert again.deferred == ex.deferred
    assert list(again.first_distinct(text, k)) == expected
