"""Sparse features of candidate mention heads and of (antecedent, anaphor) pairs, as lists
of ``name=value`` strings for a feature hasher."""

from __future__ import annotations

import numpy as np

from dptext.evaluate.coref.parsing import Parsed

CANDIDATE_POS = frozenset({"NOUN", "PROPN", "PRON"})
_DETS = frozenset({"the", "a", "an", "this", "that", "these", "those", "his", "her", "its",
                   "their", "my", "our", "your", "'s"})


def candidates(p: Parsed) -> np.ndarray:
    """Tokens that may head a mention: nouns, proper nouns, pronouns, named-entity tokens."""
    return np.array([i for i in range(len(p)) if p.pos[i] in CANDIDATE_POS or p.ent[i]],
                    dtype=np.int64)


def mention_features(p: Parsed, i: int) -> list[str]:
    h = int(p.head[i])
    prev = p.lower[i - 1] if i > 0 else "<s>"
    nxt = p.lower[i + 1] if i + 1 < len(p) else "</s>"
    return [f"w={p.lower[i]}", f"p={p.pos[i]}", f"t={p.tag[i]}", f"d={p.dep[i]}",
            f"e={p.ent[i]}", f"pd={p.pos[i]}|{p.dep[i]}", f"hp={p.pos[h]}|{p.dep[i]}",
            f"hw={p.lower[h]}|{p.dep[i]}", f"pw={prev}", f"nw={nxt}", f"np={p.pos[i]}|{nxt}",
            f"title={p.words[i][:1].isupper()}|{p.pos[i]}", f"m={p.morph[i]}",
            f"len={min(i - int(p.left[i]), 4)}|{p.pos[i]}"]


def _bucket(d: int) -> str:
    return str(d) if d < 5 else "5-9" if d < 10 else "10-19" if d < 20 else "20+"


def _kind(p: Parsed, i: int) -> str:
    return p.pos[i] if p.pos[i] in CANDIDATE_POS else "X"


def _phrase(p: Parsed, i: int) -> str:
    """The words from the head's left edge to the head, determiners dropped."""
    return " ".join(w for w in p.lower[int(p.left[i]): i + 1] if w not in _DETS)


def _agree(a: str, b: str) -> str:
    return "?" if not a or not b else "y" if set(a.split(",")) & set(b.split(",")) else "n"


def pair_features(p: Parsed, a: int, m: int, dist: int) -> list[str]:
    """Features of antecedent head ``a`` for anaphor head ``m``, ``dist`` mentions apart."""
    ka, km = _kind(p, a), _kind(p, m)
    tt = f"{ka}|{km}"
    ma, mm = p.morph[a].split("|"), p.morph[m].split("|")
    head_match = p.lower[a] == p.lower[m]
    out = [f"tt={tt}", f"hm={head_match}|{tt}", f"sm={_phrase(p, a) == _phrase(p, m)}|{tt}",
           f"md={_bucket(dist)}|{km}", f"sd={_bucket(int(p.sent[m] - p.sent[a]))}|{tt}",
           f"num={_agree(ma[0], mm[0])}|{tt}", f"gen={_agree(ma[1], mm[1])}|{tt}",
           f"per={_agree(ma[2], mm[2])}|{tt}", f"ee={p.ent[a]}|{p.ent[m]}",
           f"da={p.dep[a]}|{km}", f"dm={p.dep[m]}|{ka}",
           f"in={int(p.head[a]) == m or int(p.head[m]) == a}|{tt}"]
    if km == "PRON":
        out += [f"pm={p.lower[m]}|{ka}", f"pme={p.lower[m]}|{p.ent[a]}"]
        if ka == "PRON":
            out.append(f"pp={p.lower[a]}|{p.lower[m]}")
    if head_match and ka != "PRON":
        out.append(f"hmw={p.lower[m]}")
    return out
