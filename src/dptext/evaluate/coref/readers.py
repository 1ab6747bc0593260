"""Readers of gold coreference documents: LitBank TSV (``NAME.txt`` + ``NAME.ann``) and
CoNLL-2012 (``NAME.conll``), from a folder, a ``.tar.xz``/``.tar.gz`` archive of one, or
``demo:litbank`` (LitBank's coreference layer shipped with dptext, CC BY 4.0).

Bad input stops with an ``InputError`` naming the file and line.
"""

from __future__ import annotations

import re
import tarfile
from collections import defaultdict
from importlib import resources
from pathlib import Path

from dptext.corpus import InputError
from dptext.evaluate.coref.documents import CorefDoc, Span

DEMO = "demo:litbank"
DEMO_ARCHIVE = "litbank-coref-tsv.tar.xz"


def _sentences(text: str) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(line.split()) for line in text.split("\n") if line.strip())


def parse_litbank_tsv(txt: str, ann: str, name: str, where: str = "") -> CorefDoc:
    """A LitBank document: ``txt`` has one sentence a line, tokens split by spaces; ``ann``
    has ``MENTION id sent tok sent_end tok_end ...`` rows (0-based, end inclusive) and
    ``COREF mention_id entity_id`` rows. A mention without a ``COREF`` row is a singleton."""
    where = where or name
    sents = _sentences(txt)
    offsets = [0]
    for s in sents:
        offsets.append(offsets[-1] + len(s))
    mentions: dict[str, Span] = {}
    chains: dict[str, list[str]] = defaultdict(list)
    for i, line in enumerate(ann.split("\n"), 1):
        f = line.rstrip("\r").split("\t")
        if f[0] == "MENTION":
            try:
                s0, t0, s1, t1 = map(int, f[2:6])
                start, end = offsets[s0] + t0, offsets[s1] + t1
                ok = 0 <= t0 < len(sents[s0]) and 0 <= t1 < len(sents[s1]) and start <= end
            except (ValueError, IndexError):
                ok = False
            if not ok:
                raise InputError(f"{where}.ann line {i}: a MENTION row needs 'MENTION id "
                                 "sent_start tok_start sent_end tok_end ...' inside the "
                                 f"{len(sents)} sentences of {where}.txt")
            mentions[f[1]] = (start, end)
        elif f[0] == "COREF":
            if len(f) < 3:
                raise InputError(f"{where}.ann line {i}: a COREF row needs 'COREF mention_id "
                                 "entity_id'")
            chains[f[2]].append(f[1])
    linked: set[str] = set()
    clusters = []
    for entity, ids in chains.items():
        unknown = [m for m in ids if m not in mentions]
        if unknown:
            raise InputError(f"{where}.ann: COREF of entity {entity!r} names mention(s) "
                             f"{', '.join(unknown[:5])} with no MENTION row")
        clusters.append(tuple(sorted({mentions[m] for m in ids})))
        linked.update(ids)
    clusters += [(span,) for m, span in mentions.items() if m not in linked]
    return CorefDoc(name, sents, _disjoint(clusters))


def _disjoint(clusters: list[tuple[Span, ...]]) -> tuple[tuple[Span, ...], ...]:
    """Each span in one chain only (the first that names it), chains sorted by position."""
    seen: set[Span] = set()
    out = []
    for cl in clusters:
        c = tuple(m for m in cl if m not in seen)
        seen.update(c)
        if c:
            out.append(c)
    return tuple(sorted(out))


_BRACKET = re.compile(r"^\(?(\d+)\)?$")


def parse_conll(text: str, where: str) -> list[CorefDoc]:
    """CoNLL-2012 documents (``#begin document (NAME); part P`` … ``#end document``):
    word in column 4, chains in the last column (``(3``, ``3)``, ``(3)``, ``|``-joined)."""
    docs: list[CorefDoc] = []
    name, sents, sent, pos = None, [], [], 0
    open_: dict[str, list[int]] = defaultdict(list)
    chains: dict[str, list[Span]] = defaultdict(list)
    for i, raw in enumerate(text.split("\n"), 1):
        line = raw.rstrip("\r")
        if line.startswith("#begin document"):
            m = re.match(r"#begin document \((.*?)\)", line)
            name = m.group(1) if m else f"{where}:{i}"
            sents, sent, pos = [], [], 0
            open_.clear()
            chains.clear()
            continue
        if line.startswith("#end document"):
            if sent:
                sents.append(tuple(sent))
            dangling = [k for k, v in open_.items() if v]
            if name is None or dangling:
                raise InputError(f"{where} line {i}: '#end document' "
                                 + ("without '#begin document'" if name is None else
                                    f"with chain(s) {', '.join(dangling[:5])} still open"))
            docs.append(CorefDoc(name, tuple(sents), _disjoint(
                [tuple(sorted(set(v))) for v in chains.values()])))
            name, sent = None, []
            continue
        if not line.strip():
            if sent:
                sents.append(tuple(sent))
                sent = []
            continue
        if line.startswith("#"):
            continue
        f = line.split()
        if name is None or len(f) < 4:
            raise InputError(f"{where} line {i}: a token row needs 'doc part index word ... "
                             "coref' columns inside '#begin document' … '#end document'")
        sent.append(f[3])
        col = f[-1] if len(f) > 4 else "-"
        if col not in ("-", "_"):
            for part in col.split("|"):
                m = _BRACKET.match(part)
                if m is None:
                    raise InputError(f"{where} line {i}: bad coreference cell {col!r} (use "
                                     "'(ID', 'ID)', '(ID)' joined by '|', or '-')")
                cid = m.group(1)
                if part.startswith("("):
                    open_[cid].append(pos)
                if part.endswith(")"):
                    if not open_[cid]:
                        raise InputError(f"{where} line {i}: chain {cid} closed but never "
                                         "opened")
                    chains[cid].append((open_[cid].pop(), pos))
        pos += 1
    if name is not None:
        raise InputError(f"{where}: the last document has no '#end document' line")
    return docs


def _from_files(files: dict[str, str], where: str) -> list[CorefDoc]:
    """Documents from ``{relative name: text}``: ``.conll`` files and ``.txt``/``.ann``
    pairs (a ``.txt`` without its ``.ann`` is an error)."""
    docs: list[CorefDoc] = []
    for rel in sorted(files):
        if rel.endswith((".conll", ".gold_conll")):
            docs += parse_conll(files[rel], f"{where}/{rel}")
        elif rel.endswith(".ann"):
            stem = rel[:-4]
            if stem + ".txt" not in files:
                raise InputError(f"{where}/{rel}: no {Path(stem).name}.txt beside it (LitBank "
                                 "TSV needs both files)")
            docs.append(parse_litbank_tsv(files[stem + ".txt"], files[rel], Path(stem).name,
                                          f"{where}/{stem}"))
    if not docs:
        raise InputError(f"{where}: no gold coreference documents (LitBank TSV .txt + .ann "
                         "pairs, or CoNLL-2012 .conll files)")
    return docs


def _read_archive(path: Path | str, where: str) -> dict[str, str]:
    try:
        with tarfile.open(path) as tar:
            return {m.name: tar.extractfile(m).read().decode("utf-8") for m in tar.getmembers()
                    if m.isfile() and m.name.endswith((".txt", ".ann", ".conll",
                                                       ".gold_conll"))}
    except (tarfile.TarError, OSError, UnicodeDecodeError) as e:
        raise InputError(f"{where}: cannot read the archive ({e})") from None


def read_gold(path: str | Path) -> list[CorefDoc]:
    """Gold documents from a folder (searched recursively), an archive, or ``demo:litbank``."""
    if str(path) == DEMO:
        with resources.as_file(resources.files("dptext") / "data" / DEMO_ARCHIVE) as p:
            return _from_files(_read_archive(p, DEMO), DEMO)
    p = Path(path)
    if p.is_dir():
        files = {}
        for f in p.rglob("*"):
            if f.is_file() and f.suffix in (".txt", ".ann", ".conll", ".gold_conll"):
                try:
                    files[f.relative_to(p).as_posix()] = f.read_text(encoding="utf-8")
                except UnicodeDecodeError:
                    raise InputError(f"{f}: not UTF-8 text") from None
        return _from_files(files, str(p))
    if p.is_file() and (p.name.endswith((".tar.xz", ".tar.gz", ".tgz", ".tar"))):
        return _from_files(_read_archive(p, str(p)), str(p))
    if p.is_file() and p.suffix in (".conll", ".gold_conll"):
        return _from_files({p.name: p.read_text(encoding="utf-8")}, str(p.parent))
    raise InputError(f"{path}: not a folder, a .tar.xz archive or a .conll file of gold "
                     f"coreference documents (or use {DEMO})")
