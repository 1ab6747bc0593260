"""Making an LLM's answer follow the mechanical parts of its drawn form
(``dptext.text.form_realise``), and DP-KPS applying it to every document that has one."""

from __future__ import annotations

import numpy as np

from dptext.generators.kps.form import follow_forms
from dptext.generators.kps.sampling import KeyphraseSequence
from dptext.llm.documents import SyntheticDocument
from dptext.text.form import FORM_BLOCKS, form_values
from dptext.text.form_realise import cut_to_words, realise_form

ANSWER = ('"Ebola cases rise again in West Africa. Doctors ask for more beds and nurses as '
          'the outbreak spreads to two new districts, officials said on Monday. More at '
          'https://example.com/story"')


def _form(**values) -> dict[str, str]:
    return {b: v[0] for b, v in FORM_BLOCKS.items()} | {"tone": "neutral"} | values


def _rng():
    return np.random.default_rng(0)


def test_the_drawn_link_ends_the_document_and_replaces_the_llms():
    out = realise_form(ANSWER, _form(length="15", link="bbc.in", colon="yes"), (), _rng())
    assert "example.com" not in out and not out.startswith('"')
    assert out.split()[-1].startswith("http://bbc.in/") and len(out.split()[-1]) == 21
    values = form_values(out)
    assert values["link"] == "bbc.in" and values["length"] in ("8", "15")
    assert values["colon"] == "yes"


def test_the_length_is_cut_to_the_drawn_bucket_at_a_sentence_end_when_it_can_be():
    assert cut_to_words(ANSWER.strip('"'), 14) == "Ebola cases rise again in West Africa."
    long = " ".join(["word"] * 30)
    assert cut_to_words(long, 10) == " ".join(["word"] * 10)
    assert cut_to_words("Short one.", 10) == "Short one."
    for length in ("0", "8", "15"):
        out = realise_form(ANSWER, _form(length=length), (), _rng())
        assert int(form_values(out)["length"]) <= int(length)


def test_no_link_and_no_hashtags_take_them_away_and_yes_adds_one():
    text = "New #flu vaccine trial starts today http://t.co/abc"
    plain = realise_form(text, _form(length="8"), (), _rng())
    assert plain == "New flu vaccine trial starts today"
    tagged = realise_form("New vaccine trial starts today", _form(length="0", hashtags="yes"),
                          ("a", "influenza", "of"), _rng())
    assert tagged.endswith("#Influenza") and form_values(tagged)["hashtags"] == "yes"
    other = realise_form(text, _form(length="8", link="other", hashtags="yes"), (), _rng())
    assert "http://t.co/abc" in other  # a link outside the public list is the LLM's to write


def test_the_same_seed_writes_the_same_links():
    seqs = [KeyphraseSequence("a", ("flu",), _form(length="8", link=link))
            for link in ("cnn.it", "n.pr")] + [KeyphraseSequence("a", ("flu",))]
    docs = [SyntheticDocument("Flu season starts early this year", "a", ("flu",), 1.0, 1)] * 3
    first, again = follow_forms(docs, seqs, 7), follow_forms(docs, seqs, 7)
    assert [d.text for d in first] == [d.text for d in again]
    assert "cnn.it/" in first[0].text and "n.pr/" in first[1].text
    assert first[2] == docs[2]  # no form drawn: untouched
    assert follow_forms(docs, seqs, 8)[0].text != first[0].text
