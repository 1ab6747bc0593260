"""A document's form as a bounded vector of public features (DP-KPS's form profile).

Keyphrases carry what a document is about; its form (length, shape, the tokens that are
not dictionary words, tone) is a separate signal. Every feature here is public and fixed
before any run, like the vocabulary: the length buckets, the shape tests, the list of URL
domains (``LINK_DOMAINS``) and the tone lexicon (VADER's, MIT licence, shipped in the
``vaderSentiment`` package).

Each feature is a *block* with a fixed set of values; a document takes exactly one value
per block, so its vector is one-hot per block: ``FORM_BLOCKS`` blocks, L2 norm exactly
√len(FORM_BLOCKS) and L1 norm len(FORM_BLOCKS) for every document, by construction
(``form_sensitivity``). ``FormCounts`` sums those vectors per class over a batch (exact
integers, for ``dptext.compute.map_sum``); the noise is added by ``dptext.privacy``.
``form_instruction`` turns one drawn value per block into plain words for a prompt.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

import numpy as np
import regex

#: URL domains the link block names, public and fixed: general link shorteners, image and
#: video hosts, and news outlets' own shorteners and sites (an outlet's tweets end in its
#: own, so a class's link is often its form's strongest mark)
LINK_DOMAINS = ("bit.ly", "ow.ly", "goo.gl", "tinyurl.com", "t.co", "trib.al", "wp.me",
                "buff.ly", "dlvr.it", "youtu.be", "pbs.twimg.com", "bbc.in", "bbc.co.uk",
                "cnn.it", "at.cnn.com", "cnn.com", "nyti.ms", "nytimes.com", "nbcnews.to",
                "on.today.com", "reut.rs", "reuters.com", "wapo.st", "washingtonpost.com",
                "fxn.ws", "foxnews.com", "cbsn.ws", "abcn.ws", "usat.ly", "lat.ms", "lati.ms",
                "latimes.com", "n.pr", "npr.org", "on.wsj.com", "wsj.com", "blogs.wsj.com",
                "on-msn.com", "khne.ws", "t.usnews.com", "cbc.ca", "gu.com",
                "theguardian.com", "apne.ws", "huff.to", "ti.me", "econ.st", "ind.pn")
#: word-count bucket edges: bucket i holds counts in [edges[i], edges[i+1]); the last, more
LENGTH_EDGES = (0, 8, 15, 25, 40, 70, 120, 200, 350, 600)
#: mean VADER valence (−4 … 4) of a document's lexicon words: bucket upper edges
TONE_EDGES = (-1.5, -0.5, 0.5, 1.5)
TONES = ("very negative", "negative", "neutral", "positive", "very positive")
#: yes/no shape and token features, with how the prompt says "yes"
FLAGS = {
    "title line": "starts with a short title line",
    "paragraphs": "is in several paragraphs",
    "list": "is written as a list",
    "quote": "quotes someone",
    "question": "asks a question",
    "all caps": "has a word in capitals",
    "colon": "uses a colon",
    "title case": "is written in Title Case",
    "hashtags": "uses hashtags",
    "mentions": "mentions an @account",
    "number with unit": "gives a number with a unit",
    "emoji": "uses an emoji",
}
#: block name → its values (a document takes exactly one per block)
FORM_BLOCKS: dict[str, tuple[str, ...]] = {
    "length": tuple(str(e) for e in LENGTH_EDGES),
    "link": ("none", *LINK_DOMAINS, "other"),
    "tone": TONES,
    **{flag: ("no", "yes") for flag in FLAGS},
}
OFFSETS = np.cumsum([0, *(len(v) for v in FORM_BLOCKS.values())])[:-1]
FORM_DIMENSION = sum(len(v) for v in FORM_BLOCKS.values())


def form_blocks(vector) -> list[np.ndarray]:
    """A form vector (or a sum of them) cut into its blocks, in ``FORM_BLOCKS`` order."""
    return np.split(np.asarray(vector, dtype=np.float64), OFFSETS[1:])

WORD_PATTERN = regex.compile(r"[\p{L}\p{N}][\p{L}\p{N}'’\-]*")
URL_PATTERN = regex.compile(r"(?i)\b(?:https?://|www\.)([^\s/?#]+)[^\s]*|"
                     r"\b((?:[a-z0-9-]+\.)+(?:in|it|ms|to|ws|ly|gl|co|be|me|pr|al|st|pn|ca|uk|com|org|net))/[^\s]*")
_LIST_LINE = regex.compile(r"(?m)^\s*(?:[-*•·]|\d{1,2}[.)])\s+\S")
_QUOTE = regex.compile(r"[\"“][^\"“”\n]{3,}[\"”]|(?m)^\s*>")
_CAPS = regex.compile(r"\b\p{Lu}{4,}\b")
_UNIT = regex.compile(
    r"(?i)\b\d+(?:[.,]\d+)?\s?(?:%|percent|mg|mcg|g|kg|lbs?|ml|l|cm|mm|km|miles?|hours?|"
    r"hrs?|minutes?|mins?|days?|weeks?|months?|years?|\$|£|€|m|bn|million|billion)(?!\w)|"
    r"[$£€]\s?\d")
_EMOJI = regex.compile(r"\p{Emoji_Presentation}")


@lru_cache(maxsize=1)
def tone_lexicon() -> dict[str, float]:
    """VADER's lexicon: word → mean valence (−4 … 4), read from the installed package."""
    text = resources.files("vaderSentiment").joinpath("vader_lexicon.txt").read_text(
        encoding="utf-8")
    out = {}
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) >= 2:
            try:
                out[parts[0].lower()] = float(parts[1])
            except ValueError:
                continue
    return out


def _domain(url_match: regex.Match) -> str:
    host = (url_match.group(1) or url_match.group(2) or "").lower().rstrip(".")
    host = host.removeprefix("www.")
    return host if host in LINK_DOMAINS else "other"


def form_values(text: str) -> dict[str, str]:
    """The value of every block of ``FORM_BLOCKS`` for one document (one regex pass each)."""
    stripped = text.strip()
    urls = list(URL_PATTERN.finditer(stripped))
    plain = URL_PATTERN.sub(" ", stripped)
    words = WORD_PATTERN.findall(plain)
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    lexicon = tone_lexicon()
    valences = [lexicon[w] for w in (x.lower() for x in words) if w in lexicon]
    tone = float(np.mean(valences)) if valences else 0.0
    capitalised = [w for w in words if len(w) > 3]
    first = lines[0].strip() if lines else ""
    flags = {
        "title line": len(lines) > 1 and len(WORD_PATTERN.findall(first)) <= 12
        and first[-1:] not in ".!?,;:",
        "paragraphs": len([p for p in regex.split(r"\n\s*\n", stripped) if p.strip()]) > 1,
        "list": len(_LIST_LINE.findall(stripped)) >= 2,
        "quote": bool(_QUOTE.search(plain)),
        "question": "?" in plain,
        "all caps": bool(_CAPS.search(plain)),
        "colon": ":" in plain,
        "title case": len(capitalised) >= 3
        and sum(w[0].isupper() for w in capitalised) >= 0.8 * len(capitalised),
        "hashtags": bool(regex.search(r"(?<!\w)#\p{L}", plain)),
        "mentions": bool(regex.search(r"(?<!\w)@\w", plain)),
        "number with unit": bool(_UNIT.search(plain)),
        "emoji": bool(_EMOJI.search(plain)),
    }
    return {
        "length": str(LENGTH_EDGES[np.searchsorted(LENGTH_EDGES, len(words), "right") - 1]),
        "link": _domain(urls[-1]) if urls else "none",
        "tone": TONES[int(np.searchsorted(TONE_EDGES, tone, "left"))],
        **{flag: "yes" if on else "no" for flag, on in flags.items()},
    }


_VALUE_INDEX = [{v: i for i, v in enumerate(vals)} for vals in FORM_BLOCKS.values()]


@lru_cache(maxsize=2**16)
def _value_indices(text: str) -> tuple[int, ...]:
    """Per block, the index of ``text``'s value. Cached: a fit reads the same documents
    again (the profile, then the selection's validation documents; an audit's thousands
    of fits of one corpus), and only the process holds the cache."""
    values = form_values(text)
    return tuple(idx[values[b]] for idx, b in zip(_VALUE_INDEX, FORM_BLOCKS, strict=True))


def form_indices(texts) -> np.ndarray:
    """(documents, blocks) column of each document's value in the form vector."""
    rows = [_value_indices(t) for t in texts]
    return np.asarray(rows, dtype=np.int64).reshape(-1, len(FORM_BLOCKS)) + OFFSETS


def form_vectors(texts) -> np.ndarray:
    """Each document's one-hot-per-block form vector, (documents, ``FORM_DIMENSION``)."""
    cols = form_indices(texts)
    out = np.zeros((len(cols), FORM_DIMENSION), dtype=np.int64)
    np.put_along_axis(out, cols, 1, axis=1)
    return out


@dataclass(frozen=True)
class FormCounts:
    """Batch function: the per-class sums of the documents' form vectors, (classes,
    ``FORM_DIMENSION``) integers; items are (text, class id), −1 in no class. Picklable."""

    n_classes: int

    def __call__(self, batch) -> np.ndarray:
        out = np.zeros((self.n_classes, FORM_DIMENSION), dtype=np.int64)
        kept = [(t, c) for t, c in batch if c >= 0]
        if kept:
            texts, ids = zip(*kept, strict=True)
            cols = form_indices(texts)
            np.add.at(out, (np.repeat(np.asarray(ids), cols.shape[1]), cols.ravel()), 1)
        return out


def form_norm_bound() -> tuple[float, float]:
    """(L1, L2) norm of every document's form vector: one 1 in each block."""
    return float(len(FORM_BLOCKS)), math.sqrt(len(FORM_BLOCKS))


# ------------------------------------------------------------------ plain words
def length_phrase(edge: str) -> str:
    lo = int(edge)
    i = LENGTH_EDGES.index(lo)
    if i + 1 == len(LENGTH_EDGES):
        return f"more than {lo} words"
    hi = LENGTH_EDGES[i + 1]
    if i == 0:
        return f"fewer than {hi} words"
    return f"about {round(math.sqrt(lo * hi))} words"


def form_instruction(values: dict[str, str]) -> str:
    """One drawn form (a value per block) in plain words for the prompt, e.g. "Its form:
    about 12 words; it ends with a bbc.in link; it uses hashtags; a negative tone."."""
    parts = [length_phrase(values["length"])]
    link = values.get("link", "none")
    if link == "other":
        parts.append("it ends with a link")
    elif link != "none":
        parts.append(f"it ends with a {link} link")
    parts += [f"it {FLAGS[flag]}" for flag in FLAGS if values.get(flag) == "yes"]
    parts.append(f"a {values['tone']} tone")
    return "Its form: " + "; ".join(parts) + "."
