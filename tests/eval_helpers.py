"""Shared fixtures-in-code for the evaluation tests: a fast deterministic encoder."""

from __future__ import annotations

import hashlib

import numpy as np

from dptext.evaluate.data import Labelled


class HashEncoder:
    """Bag of hashed words -> unit vector: instant, deterministic, topic-sensitive."""

    def __init__(self, dim: int = 64):
        self.dim = dim

    def encode(self, texts):
        from dptext.evaluate._shared import tokenize

        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in tokenize(t):
                h = int(hashlib.md5(w.encode()).hexdigest()[:8], 16)
                out[i, h % self.dim] += 1.0
        out += 1e-3
        return out / np.linalg.norm(out, axis=1, keepdims=True)


TOPICS = {
    "sport": ["match", "goal", "team", "player", "coach", "league", "season", "win",
              "score", "stadium"],
    "tech": ["software", "computer", "chip", "internet", "phone", "data", "code", "network",
             "device", "app"],
    "health": ["patient", "doctor", "hospital", "drug", "nurse", "clinic", "disease",
               "therapy", "dose", "ward"],
}


def toy_corpus(n_per_class: int, seed: int, groups: bool = False) -> Labelled:
    rng = np.random.default_rng(seed)
    texts, labels, sex = [], [], []
    for label, words in TOPICS.items():
        for _ in range(n_per_class):
            w = list(rng.choice(words, 8)) + list(rng.choice(["the", "a", "of", "and"], 4))
            rng.shuffle(w)
            texts.append(" ".join(w) + ".")
            labels.append(label)
            sex.append(str(rng.choice(["F", "M"])))
    cols = {"sex": tuple(sex)} if groups else {}
    return Labelled(texts=tuple(texts), labels=tuple(labels), columns=cols, source="toy")
