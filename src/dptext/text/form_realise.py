"""Making an LLM's document follow the form drawn for it, where a form is mechanical.

A small local LLM reads "about 12 words; it ends with a bbc.in link" and writes 30 words
and no link: the parts of a drawn form (``dptext.text.form``) that are a matter of
characters, not of writing, are therefore applied to its answer afterwards: the length
cut to the drawn bucket, the drawn link domain put at the end (any link the LLM wrote
replaced), a hashtag added or removed, quotes around the whole answer dropped. The
drawn form is a release and the LLM saw only released text, so this is
post-processing: no privacy cost. Tone, capitals and shape stay the LLM's to write.
"""

from __future__ import annotations

import string

import numpy as np
import regex

from dptext.text.form import LENGTH_EDGES, URL_PATTERN, WORD_PATTERN

_WRAPPING_QUOTES = regex.compile(r'^\s*["“”]([^"“”]+)["“”]\s*$')
_SENTENCE_END = regex.compile(r"[.!?…](?=[\"”’)]?(?:\s|$))")
_HASHTAG = regex.compile(r"(?<!\w)#(\p{L}[\p{L}\p{N}_]*)")
_PATH_CHARS = np.array(list(string.ascii_letters + string.digits))


def _word_limit(length: str) -> int | None:
    """The drawn length bucket's upper edge in words (None: the last, open bucket)."""
    i = LENGTH_EDGES.index(int(length))
    return LENGTH_EDGES[i + 1] - 1 if i + 1 < len(LENGTH_EDGES) else None


def cut_to_words(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` words: at the last sentence end inside the limit
    if that keeps at least half of it, otherwise after the ``limit``-th word."""
    words = list(WORD_PATTERN.finditer(text))
    if len(words) <= limit:
        return text
    cut = words[limit - 1].end()
    ends = [m.end() for m in _SENTENCE_END.finditer(text, 0, cut + 1)]
    half = words[max(limit // 2 - 1, 0)].end()
    if ends and ends[-1] >= half:
        return text[:ends[-1]].rstrip()
    return text[:cut].rstrip(" ,;:-–—")


def short_link(domain: str, rng: np.random.Generator) -> str:
    """A link on ``domain`` with a random path, as a link shortener makes them."""
    return f"http://{domain}/" + "".join(rng.choice(_PATH_CHARS, size=7))


def _hashtag(keyphrases) -> str | None:
    """A hashtag from the longest keyphrase of letters only (or None)."""
    words = sorted((k for k in keyphrases if k.replace(" ", "").isalpha() and len(k) > 3),
                   key=len, reverse=True)
    if not words:
        return None
    return "#" + "".join(w.capitalize() for w in words[0].split())


def realise_form(text: str, values: dict[str, str], keyphrases,
                 rng: np.random.Generator) -> str:
    """``text`` with the mechanical parts of the drawn form ``values`` applied (see the
    module docstring); ``rng`` (public) draws a link's path."""
    quoted = _WRAPPING_QUOTES.match(text)
    out = quoted.group(1).strip() if quoted else text.strip()
    link = values.get("link", "none")
    if link != "other":
        out = regex.sub(r"[ \t]{2,}", " ", URL_PATTERN.sub("", out)).strip()
    if values.get("hashtags") == "no":
        out = _HASHTAG.sub(r"\1", out)
    tag = (_hashtag(keyphrases) if values.get("hashtags") == "yes"
           and not _HASHTAG.search(out) else None)
    limit = _word_limit(values["length"])
    if limit is not None:
        out = cut_to_words(out, max(limit - (tag is not None), 1))
    if tag:
        out = f"{out} {tag}"
    if link not in ("none", "other"):
        sep = ": " if values.get("colon") == "yes" and ":" not in out else " "
        out = out.rstrip(" :") + sep + short_link(link, rng)
    return out
