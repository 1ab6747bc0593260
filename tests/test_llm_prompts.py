import pytest

from dptext.llm import (
    FewShotExample,
    PromptBuilder,
    PromptTemplate,
    SamplingParams,
    TemplateError,
    clean_completion,
    keyphrase_coverage,
    load_few_shot,
)
from dptext.llm.prompts import strip_type_label


def test_default_prompt_is_the_papers_generic_prompt():
    p = PromptBuilder("medical record").build(["chest pain", "aspirin"], seed=7)
    user = p.messages[-1].content
    assert "Write a medical record that contains the following terms:" in user
    assert "- chest pain\n- aspirin" in user
    assert p.params.seed == 7
    assert p.messages[0].role == "system"


@pytest.mark.parametrize("tpl, msg", [
    ("Write a {document_type}.", "must contain {keyphrases}"),
    ("Write about {topic}: {keyphrases}", "unknown placeholder {topic}"),
    ("Write a {label} note with {keyphrases}", "not allowed"),
    ("Write {keyphrases!r}", "format spec or conversion"),
    ("Write {keyphrases:>10}", "format spec or conversion"),
    ("Write { keyphrases", "malformed"),
    ("Write {0} {keyphrases}", "unknown placeholder {0}"),
])
def test_bad_templates_are_rejected_before_any_call(tpl, msg):
    with pytest.raises(TemplateError, match=msg.replace("{", r"\{").replace("}", r"\}")):
        PromptTemplate(tpl)


def test_user_template_from_file(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("A {document_type} using {keyphrase_list} ({n_keyphrases} terms). {{literal}}")
    t = PromptTemplate.from_file(f)
    _, user = t.render("ticket", ["a", "b"])
    assert user == "A ticket using a, b (2 terms). {literal}"
    bad = tmp_path / "bad.json"
    bad.write_text('{"user": "no terms here"}')
    with pytest.raises(TemplateError, match=r"bad\.json"):
        PromptTemplate.from_file(bad)


def test_few_shot_examples_become_worked_turns_or_style_examples(tmp_path):
    f = tmp_path / "shots.jsonl"
    f.write_text('{"text": "Pt seen. BP ok.", "keyphrases": ["bp"]}\n\n{"text": "Plain."}\n')
    shots = load_few_shot(f)
    assert shots == [FewShotExample("Pt seen. BP ok.", ("bp",)), FewShotExample("Plain.")]
    p = PromptBuilder("medical record", few_shot=tuple(shots)).build(["fever"])
    roles = [m.role for m in p.messages]
    assert roles == ["system", "user", "assistant", "user"]
    assert "Plain." in p.messages[0].content
    assert p.messages[2].content == "Pt seen. BP ok."
    assert "- bp" in p.messages[1].content and "- fever" in p.messages[3].content
    txt = tmp_path / "shots.txt"
    txt.write_text("one\n---\ntwo\n")
    assert [s.text for s in load_few_shot(txt)] == ["one", "two"]


def test_sampling_params_travel_with_the_prompt():
    b = PromptBuilder("note", params=SamplingParams(max_tokens=50, temperature=0.3))
    p = b.build(["x"], seed=1)
    assert (p.params.max_tokens, p.params.temperature, p.params.seed) == (50, 0.3, 1)


@pytest.mark.parametrize("raw, expected", [
    ("Sure, here is the medical record:\n\nPatient is well.", "Patient is well."),
    ("Certainly! Here's a medical record that contains the terms:\nPatient is well.",
     "Patient is well."),
    ("Here is a medical record.\nPatient is well.", "Patient is well."),
    ("Patient is well.\n\nI hope this helps! Let me know if you need changes.",
     "Patient is well."),
    ("```\nPatient is well.\n```", "Patient is well."),
    ('"Patient is well.', "Patient is well."),
    ("[News Article Title]\n\nShares rose.", "Shares rose."),
    ("Dose [5 mg] given.", "Dose [5 mg] given."),
    ('"Well," he said.', '"Well," he said.'),
    ('"What should I do if my refund is missing?"', "What should I do if my refund is missing?"),
    ("“Ebola cases rise in Guinea bbc.in/1xYz”", "Ebola cases rise in Guinea bbc.in/1xYz"),
    ('"Well," he said. "Go."', '"Well," he said. "Go."'),
    ('"Shares fell" was the headline.', '"Shares fell" was the headline.'),
    ('""', '""'),
    ("Patient is well and resting comfortably. Follow up with the cardi",
     "Patient is well and resting comfortably."),
    ("Vitals:\n- BP 120/80\n- HR 70", "Vitals:\n- BP 120/80\n- HR 70"),
    ("Here is the patient's history: chest pain.", "Here is the patient's history: chest pain."),
    ("# Company Faces Losses\n\nThe firm lost money.",
     "Company Faces Losses\n\nThe firm lost money."),
    ("**Flu Cases Climb**\n\n**LONDON -** Cases rose.",
     "Flu Cases Climb\n\n**LONDON -** Cases rose."),
    ("**Date:**\nMonday.", "**Date:**\nMonday."),  # a label: the scaffolding check's
    ("# 1 acct # XXXX {$450.00} was charged twice.",
     "# 1 acct # XXXX {$450.00} was charged twice."),
    ("#Ebola cases rise in Guinea.", "#Ebola cases rise in Guinea."),
])
def test_clean_completion(raw, expected):
    assert clean_completion(raw) == expected


@pytest.mark.parametrize("text, document_type, expected", [
    ("Consumer complaint: I was charged twice.",
     "consumer complaint about a financial product", "I was charged twice."),
    ("**News Article:**\n\nShares rose.", "news article", "Shares rose."),
    ("Health News: Flu cases climb bbc.in/x", "health news tweet", "Flu cases climb bbc.in/x"),
    ("Reviews: it worked.", "review", "it worked."),  # all of a one-word type, plural
    ("News Article\n\nShares rose.", "news article", "Shares rose."),  # a title line
    ("Shares Rose\n\nShares rose.", "news article", "Shares Rose\n\nShares rose."),
    ("Consumer complaint about fees", "consumer complaint", "Consumer complaint about fees"),
    ("Health: flu cases climb.", "health news tweet", "Health: flu cases climb."),  # one word
    ("Update: shares rose.", "news article", "Update: shares rose."),
    ("Financial advice: save more.", "news article", "Financial advice: save more."),
    ("Consumer complaint:", "consumer complaint", "Consumer complaint:"),  # nothing after it
    ("I filed a consumer complaint: no answer.", "consumer complaint",
     "I filed a consumer complaint: no answer."),  # not at the head
])
def test_a_head_label_restating_the_document_type(text, document_type, expected):
    assert strip_type_label(text, document_type) == expected


def test_clean_up_strips_the_type_label_before_the_quotes():
    assert clean_completion('News article: "Shares rose sharply."', document_type="news article") \
        == "Shares rose sharply."
    assert clean_completion("News article: Shares rose.") == "News article: Shares rose."


def test_truncation_flag_from_backend():
    assert clean_completion("A. B. C", truncated=False) == "A. B. C"
    assert clean_completion("First sentence here. Second one is cut", truncated=True) \
        == "First sentence here."
    # quotes around the whole answer: it ended there, nothing is cut when guessing
    tweet = "Ebola cases rise sharply in Guinea this week. Read more bbc.in/1xYz"
    assert clean_completion(f'"{tweet}"') == tweet
    assert clean_completion(tweet) == "Ebola cases rise sharply in Guinea this week."


def test_keyphrase_coverage():
    text = "The patient had chest pains and took Aspirin; no fever-like signs."
    assert keyphrase_coverage(text, ["chest pain", "aspirin", "fever", "insulin"]) == (3, 4)
    assert keyphrase_coverage("spain", ["pain"]) == (0, 1)
    assert keyphrase_coverage("x", []) == (0, 0)
