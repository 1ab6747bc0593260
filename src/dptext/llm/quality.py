"""Checks on what the LLM wrote: repetition loops, refusal / meta-text, and a form to fill
in instead of a document (placeholders, scaffolding).

Small models fall into loops ("The album will be released on Saturday, marking …" five
times) and now and then answer as an assistant instead of writing the document ("I'm
sorry, but …", "As a news editor, I am committed to …"), or write a form to fill in
("**Title:** … **Date:** [Insert Date]"). These pure functions find all three; the
document stage (``dptext.llm.documents``) retries such answers with a new sampling seed
and trims or strips what is left, and counts each case in ``RunStats``.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

_WORD = re.compile(r"\w+(?:['’]\w+)*")
# a sentence ends after . ! ? … (and closing quotes/brackets) followed by space, or at a line
# break; the whitespace stays with the sentence so that joining kept sentences keeps layout
_SENTENCE = re.compile(r".*?(?:[.!?…]+[\"'”’)\]]*(?:\s+|$)|\n+|$)", re.S)


@dataclass(frozen=True)
class Loop:
    """A repetition loop: ``span`` (lower-cased words) occurs ``repeats`` times; the text
    before character ``cut`` (where its second occurrence starts) holds it once."""

    kind: str  # "ngram" or "sentence"
    span: str
    repeats: int
    cut: int


def _words(text: str) -> list[re.Match]:
    return list(_WORD.finditer(text))


def sentences(text: str) -> list[tuple[int, int]]:
    """(start, end) of each sentence, its trailing whitespace included; they tile ``text``."""
    out, pos = [], 0
    while pos < len(text):
        m = _SENTENCE.match(text, pos)
        end = m.end() if m and m.end() > pos else len(text)
        out.append((pos, end))
        pos = end
    return out


def find_loop(text: str, n: int = 6, min_repeats: int = 3, min_share: float = 0.2,
              min_sentence_words: int = 8) -> Loop | None:
    """The earliest loop in ``text``, or ``None``. Two kinds: runs of ``n`` words (case and
    punctuation ignored) that occur ``min_repeats`` times or more and together cover at
    least ``min_share`` of the words (a model stuck in a phrase), or a sentence of at least
    ``min_sentence_words`` words that occurs twice (a model repeating itself sentence by
    sentence). Among several, the one whose second occurrence comes first.

    Real text repeats phrases too (titles, names, the award categories of a list): on the
    2,127 BBC News articles a 6-gram occurs three times in 15 articles, but such 6-grams
    never cover more than 16 % of an article's words, and one article repeats a sentence
    (a duplicate in the source), so the defaults flag 1 article in 2,127.
    """
    words = _words(text)
    low = [w.group().lower() for w in words]
    best: Loop | None = None
    starts: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for i in range(len(low) - n + 1):
        starts[tuple(low[i:i + n])].append(i)
    looping = {g: idx for g, idx in starts.items() if len(idx) >= min_repeats}
    covered = {i for idx in looping.values() for s in idx for i in range(s, s + n)}
    if looping and len(covered) >= min_share * len(low):
        gram, idx = min(looping.items(), key=lambda kv: kv[1][1])
        best = Loop("ngram", " ".join(gram), len(idx), words[idx[1]].start())
    seen: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for start, end in sentences(text):
        key = tuple(w.lower() for w in _WORD.findall(text[start:end]))
        if len(key) >= min_sentence_words:
            seen[key].append(start)
    for key, idx in seen.items():
        if len(idx) >= 2 and (best is None or idx[1] < best.cut):
            best = Loop("sentence", " ".join(key), len(idx), idx[1])
    return best


def trim_loop(text: str, loop: Loop) -> str:
    """``text`` up to the loop's second occurrence, cut back to the last full sentence."""
    from dptext.llm.prompts import clean_completion

    return clean_completion(text[:loop.cut], truncated=True)


# ------------------------------------------------------------------ refusal / meta-text

# declining the task, at the head of a sentence, quoted or not: "I'm sorry, but …", "\"Sorry,
# but I can't help with that.\"", "We are unable to provide …"
_DECLINE = (r"(?:i|we)(?: (?:can(?:no|['’])t|cannot|won['’]t|will not)|"
            r"(?:['’]m| am|['’]re| are) (?:unable|not able) to)"
            r" (?:help|assist|write|create|provide|generate|produce|comply|fulfil|fulfill|do that)")
# a short label the model put before its answer ("Consumer complaint: I'm sorry, but I
# can't …"); after one only an outright decline counts ("Update: I'm sorry to say …" stays)
_LABEL = r"(?:[a-z][\w '-]{0,60}:\s*[*\"'“‘]*\s*)?"
_REFUSAL = re.compile(
    rf"^[\s*#>\"'“‘-]*(?:i(?:'m| am) sorry\b|"
    rf"{_LABEL}(?:(?:i(?:['’]m| am)|we(?:['’]re| are)) )?sorry,? but {_DECLINE}|"
    rf"{_LABEL}{_DECLINE}|i apologi[sz]e\b|unfortunately,? i\b|"
    r"as an ai\b|as a (?:large )?language model\b|i(?:'m| am) (?:just )?an ai\b)",
    re.IGNORECASE)
# the writer speaking as an AI or about its role: never part of the document, anywhere
_PERSONA = re.compile(
    r"^[\s*#>-]*(?:as an ai\b|as a (?:large )?language model\b|i(?:'m| am) (?:just )?an ai\b|"
    r"as i (?:was |am )?(?:writing|drafting|composing) (?:this|the)\b|"
    r"as (?:an? |your )(?:[\w-]+ ){0,3}(?:ai|assistant|language model|editor|writer|"
    r"journalist|reporter|author|copywriter|content (?:creator|writer)|chatbot)\b[^.!?\n]*"
    r"\b(?:i|i'm|i am|my|me|we)\b)", re.IGNORECASE)
# the writer restating or grading its task ("… a product that contains the following terms:
# fee, late, …", "This tweet includes all the specified terms", "… a medicine containing
# the terms "have", "years", …"); no document of BBC News, the health tweets, the
# complaints, Banking77 or the drug reviews (91,392, train and test) matches
_USING = (r"(?:contain(?:s|ed|ing)?|includ(?:e|es|ed|ing)|us(?:e|es|ed|ing)|"
          r"incorporat(?:e|es|ed|ing))")
_TERMS = r"(?:terms|keywords|key\s?words|key\s?phrases)"
_QUOTE = "[\"'“”‘’]?"
_ECHO = re.compile(
    r"\b(?:the|these|all(?:\s+of)?\s+the)\s+(?:following|given|specified|provided|listed|above|"
    rf"required|requested)\s+{_TERMS}\b(?!\s+(?:and|&)\s+conditions)|"
    rf"\b{_USING}\s+(?:all\s+(?:of\s+)?)?these\s+{_TERMS}\b(?!\s+(?:and|&)\s+conditions)|"
    # the prompt's terms listed back: two or more after "contains the terms"
    rf"\b(?:{_USING}|featur(?:e|es|ed|ing)|mention(?:s|ed|ing)?)\s+(?:the\s+)?(?:term|{_TERMS})"
    rf"(?:\s+like|\s+such\s+as)?\s*:?\s*{_QUOTE}[\w-]+(?:,{_QUOTE}|{_QUOTE}\s*,)\s*{_QUOTE}[\w-]+",
    re.IGNORECASE)
# the form the prompt stated (``text.form.form_instruction``), restated at the head of a
# sentence ("About 155 words: …", "Its form: …"); no sentence of the five corpora above
# starts so
_FORM_ECHO = re.compile(
    r"^[\s*#>\"'-]*(?:(?:about|around|approximately|roughly)\s+\d+\s+words\b|"
    r"its form\s*:)", re.IGNORECASE)
# chatty openings and sign-offs: removed only at the start or the end of the text
_OPENING = re.compile(
    r"^[\s*#>-]*(?:(?:sure|certainly|of course|absolutely|okay|ok|great)\b[!,.]?\s*"
    r"(?:here\b.*)?$|here(?:['’]s| is| are) (?:a|an|the|your|my|some)\b|"
    r"(?:below|following) is\b|i(?:['’]ve| have) (?:written|created|generated|drafted)\b)",
    re.IGNORECASE)
_CLOSING = re.compile(
    r"^[\s*#>-]*(?:i hope\b|let me know\b|feel free\b|(?:please )?note:? (?:that )?"
    r"(?:this|the above|all names|names|any resemblance)\b|"
    r"(?:is there )?anything else\b|this (?:article|document|record|note|story|text|report) "
    r"(?:is|was) (?:entirely )?(?:fictional|fictitious|generated|written|created)\b|"
    r"i(?:['’]ve| have) (?:included|used|incorporated)\b)", re.IGNORECASE)


@dataclass(frozen=True)
class MetaCheck:
    """``text`` without meta sentences; ``refusal``: the answer declines or speaks as an AI
    instead of writing the document (retry it); ``stripped``: meta sentences were removed."""

    text: str
    refusal: bool
    stripped: bool


def check_meta(text: str, min_words: int = 5) -> MetaCheck:
    """Find refusals and meta-text: persona sentences and echoes of the task anywhere ("As a
    news editor, I am committed to …", "As an AI, I …", "… contains the following terms:
    …", "About 155 words: …"); refusals ("I'm sorry, but …") and chatty openings
    ("Sure! Here is …") at the start, refusals and sign-offs ("I hope this helps") at the
    end (in the middle such sentences are usually quotes). The answer counts as a
    refusal when one of its first two sentences refuses, or fewer than ``min_words`` words
    are left once the meta sentences are removed. An echo in the first two sentences is a
    refusal too: the model restated the prompt instead of writing the document."""
    spans = sentences(text)
    parts = [text[a:b] for a, b in spans]
    echo = [bool(_ECHO.search(p) or _FORM_ECHO.match(p)) for p in parts]
    meta = [bool(_PERSONA.match(p)) or e for p, e in zip(parts, echo, strict=True)]
    refusal = any(_REFUSAL.match(p) for p in parts[:2]) or any(echo[:2])
    i = 0
    while i < len(parts) and (meta[i] or _REFUSAL.match(parts[i]) or _OPENING.match(parts[i])
                              or not parts[i].strip()):
        meta[i] = bool(parts[i].strip())
        i += 1
    j = len(parts) - 1
    while j >= i and (meta[j] or _REFUSAL.match(parts[j]) or _CLOSING.match(parts[j])
                      or not parts[j].strip()):
        meta[j] = bool(parts[j].strip())
        j -= 1
    if not any(meta):
        return MetaCheck(text, refusal, False)
    kept = "".join(p for p, m in zip(parts, meta, strict=True) if not m).strip()
    refusal = refusal or len(_WORD.findall(kept)) < min_words
    return MetaCheck(kept, refusal, True)


# ------------------------------------------------------------------ a form, not a document

# a slot to fill in: "[Insert Date]", "[Your Name]", "[Company Name]", "[Link]", "[XX]", or
# capitalised words that end in what the slot holds: "[Financial Product Name]"
_PLACEHOLDER = re.compile(
    r"\[\s*(?:insert|your|enter|add|name\b|date\b|company|recipient|author|link\b|url\b|"
    r"title\b|location\b|city\b|phone|email|address\b|x{2,}\b|\.\.\.|…)[^\]\n]{0,60}\]|"
    r"\[\s*(?-i:(?:[A-Z][\w'’-]*\s+){1,4}(?:Name|Date|Number|Amount|Address|"
    r"Product))\s*\]",
    re.IGNORECASE)
# a labelled field instead of prose: "**Title:** …", "**Date**: …", "Headline: …"
_SCAFFOLD = re.compile(
    r"(?m)^[ \t>#-]*(?:\*\*[A-Z][\w /&-]{0,30}(?::\*\*|\*\*:)|"
    r"(?:title|headline|subheadline|byline|dateline|hashtags?)"
    r"\s*:(?=\s))", re.IGNORECASE)


def find_scaffolding(text: str) -> str | None:
    """What makes ``text`` a form to fill in rather than a document: its first placeholder
    ("[Insert Date]") or labelled field ("**Title:**", "Headline:"), or None."""
    found = [m for m in (_PLACEHOLDER.search(text), _SCAFFOLD.search(text)) if m]
    return min(found, key=lambda m: m.start()).group().strip() if found else None
