"""ICL reference (the fine-tuning paper, §3): an instruction model prompted with REAL
examples. NOT PRIVATE — a reference point for the DP generators, never a release.

For each document to write, codes are drawn from the exact (non-noisy) code
frequencies; the prompt holds ``shots`` private documents as ``codes: ... text: ...``
pairs, chosen so that every target code value appears in at least one example (as in
the paper), then the target codes. Private text goes into the prompt, so this breaks
the project's first promise by design: it must be asked for explicitly
(``not_private=True``), and every output record and its report say NOT PRIVATE.
This is the only part of ``dpft`` that imports ``dptext.llm``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from dptext.corpus import Corpus
from dptext.generators.dpft.codes import document_codes, format_codes
from dptext.privacy import PrivacyLedger
from dptext.privacy_report import build_report, mark_not_private

ICL_NOT_PRIVATE = ("NOT PRIVATE: ICL reference — real private documents were put in the LLM "
                   "prompt; no differential-privacy guarantee of any kind")
SYSTEM = "You write realistic documents that match the given codes."


def build_prompt_text(examples: Sequence[tuple[str, str]], target_codes: str,
                      document_type: str, max_chars: int) -> str:
    parts = [f"Here are examples of {document_type}s with their codes.\n"]
    for codes, text in examples:
        parts.append(f"codes: {codes}\ntext: {text.strip()[:max_chars]}\n")
    parts.append(f"Write one new {document_type} for the codes below. Answer with the text "
                 f"only.\ncodes: {target_codes}\ntext:")
    return "\n".join(parts)


def choose_examples(codes: list[dict[str, str]], target: dict[str, str], shots: int,
                    rng: np.random.Generator) -> list[int]:
    """``shots`` document indices; every target code value is covered when possible."""
    chosen: list[int] = []
    for field_, value in target.items():
        have = [i for i in chosen if codes[i][field_] == value]
        if have:
            continue
        pool = [i for i, c in enumerate(codes) if c[field_] == value and i not in chosen]
        if pool:
            chosen.append(int(rng.choice(pool)))
    rest = [i for i in range(len(codes)) if i not in chosen]
    extra = max(0, shots - len(chosen))
    if extra and rest:
        chosen += [int(i) for i in rng.choice(rest, size=min(extra, len(rest)), replace=False)]
    rng.shuffle(chosen)
    return chosen


def icl_reference(corpus: Corpus, n: int, *, backend, not_private: bool = False,
                  metadata_fields: Sequence[str] = (), shots: int = 3,
                  document_type: str = "document", max_example_chars: int = 600,
                  max_tokens: int = 200, temperature: float = 0.8, top_p: float = 0.9,
                  rng: np.random.Generator | None = None) -> list[dict[str, Any]]:
    """``n`` documents from ``backend`` (a ``dptext.llm`` backend) prompted with real
    examples. Raises unless ``not_private=True``."""
    if not not_private:
        raise ValueError("the ICL reference puts private documents into LLM prompts and is "
                         "NOT PRIVATE; pass not_private=True to run it as a reference")
    from dptext.llm import Prompt, SamplingParams

    rng = rng or np.random.default_rng()
    codes = document_codes(corpus, metadata_fields)
    targets = [codes[i] for i in rng.integers(len(codes), size=n)]  # exact frequencies
    prompts = []
    for t in targets:
        idx = choose_examples(codes, t, shots, rng)
        text = build_prompt_text([(format_codes(codes[i]), corpus.texts[i]) for i in idx],
                                 format_codes(t), document_type, max_example_chars)
        prompts.append(Prompt.user(text, system=SYSTEM, params=SamplingParams(
            max_tokens=max_tokens, temperature=temperature, top_p=top_p,
            seed=int(rng.integers(2**31)))))
    completions = backend.complete(prompts)
    out = []
    for t, c in zip(targets, completions, strict=True):
        rec: dict[str, Any] = {"text": c.text.strip(), "label": t.get("label")}
        rec.update({k: v for k, v in t.items() if k != "label"})
        rec.update({"generator": "icl-reference", "private": False,
                    "privacy": ICL_NOT_PRIVATE})
        out.append(rec)
    return out


def icl_report(command: str, parameters: dict[str, Any]) -> dict[str, Any]:
    report = build_report(PrivacyLedger(), command=command,
                          parameters={"method": "icl-reference", **parameters},
                          notes=[ICL_NOT_PRIVATE])
    return mark_not_private(report, ICL_NOT_PRIVATE)
