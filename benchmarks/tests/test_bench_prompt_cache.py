"""The whole-document cells of one work dir share a prompt cache kept in that folder, so
PATE's ε cells of one seed write their public candidate pool once, on any machine the
folder is committed to (the machine's own cache starts empty on a fresh one)."""

from bench_whole_documents import PROMPT_CACHE, generator_documents
from dptext.corpus import Corpus
from dptext.embed import load_embedder
from dptext.evaluate.data import Labelled
from dptext.llm import PromptCache, SamplingParams
from dptext.llm.recording import RecordingBackend
from synthetic_protocol import BenchData


def test_a_pate_cell_on_a_fresh_machine_reuses_its_siblings_candidates(tmp_path,
                                                                        monkeypatch):
    texts = [f"the match ended with a late goal number {i}" for i in range(12)]
    texts += [f"shares fell on the market today by {i} percent" for i in range(12)]
    labels = ["sport"] * 12 + ["business"] * 12
    data = BenchData("tiny", Corpus(tuple(texts), tuple(labels)),
                     Labelled(texts=tuple(texts[:4]), labels=("sport",) * 2 + ("business",) * 2),
                     "news article", 20)
    options = dict(teachers=4, embedder=load_embedder("model2vec", cache_dir=""),
                   sampling=SamplingParams(max_tokens=20))
    work = tmp_path / "work"
    asked = []
    for machine, eps in (("first", 4.0), ("fresh", 6.0)):
        mine = tmp_path / machine / "llm-cache.jsonl"  # this machine's own cache
        monkeypatch.setattr(PromptCache, "default", classmethod(lambda cls, p=mine: cls(p)))
        backend = RecordingBackend()
        folder = work / "cells" / f"tiny-pate-eps{eps:g}-n2-s3"
        folder.mkdir(parents=True)
        pairs, _, _ = generator_documents(
            "pate", data, eps, 2, 3, folder, backend, 2,
            prompt_cache=PromptCache(work / PROMPT_CACHE), **options)
        assert len(pairs) == 4
        asked.append(len(backend.prompts))
    assert asked == [16, 0]  # 2 a class × 4 candidates each, written once for both cells
    assert not any((tmp_path / m / "llm-cache.jsonl").exists() for m in ("first", "fresh"))
