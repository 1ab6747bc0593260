import json

from dptext.llm import Completion, DocumentOptions, Journal, PromptBuilder, PromptCache, run_prompts
from dptext.llm.documents import generate_documents
from dptext.llm.recording import RecordingBackend


def _prompts(n):
    b = PromptBuilder("note")
    return [b.build([f"term{i}"], seed=i) for i in range(n)]


def test_journal_roundtrip_and_fsync_append(tmp_path):
    j = Journal(tmp_path / "j.jsonl")
    p = _prompts(1)[0]
    j.put("k1", p, Completion("hello", "stop", 3, 1))
    j2 = Journal(tmp_path / "j.jsonl")
    assert j2.get("k1") == Completion("hello", "stop", 3, 1)
    rec = json.loads((tmp_path / "j.jsonl").read_text().splitlines()[0])
    assert rec["prompt"]["messages"][-1]["content"].endswith(p.messages[-1].content)


def test_torn_last_line_is_tolerated_and_cut(tmp_path):
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    j.put("a", None, Completion("A"))
    with open(path, "ab") as f:
        f.write(b'{"key": "b", "completion": {"te')  # died mid-write
    j2 = Journal(path)
    assert "a" in j2 and "b" not in j2
    j2.put("c", None, Completion("C"))
    assert {json.loads(x)["key"] for x in path.read_text().splitlines()} == {"a", "c"}


def test_resume_skips_finished_prompts(tmp_path):
    prompts = _prompts(6)
    backend = RecordingBackend()
    j = Journal(tmp_path / "j.jsonl")
    first = run_prompts(backend, prompts[:4], journal=j)
    assert len(backend.prompts) == 4
    backend2 = RecordingBackend()
    again = run_prompts(backend2, prompts, journal=Journal(tmp_path / "j.jsonl"))
    assert len(backend2.prompts) == 2           # only the unfinished ones
    assert again[:4] == first


def test_journal_key_depends_on_backend_and_params(tmp_path):
    p1, p2 = _prompts(2)
    assert p1.key("a") != p1.key("b")
    assert p1.key("a") != p2.key("a")
    assert p1.key("a") == _prompts(1)[0].key("a")


def test_identical_prompts_computed_once_and_cached_across_runs(tmp_path):
    p = _prompts(1)[0]
    backend = RecordingBackend()
    cache = PromptCache(tmp_path / "cache.jsonl")
    out = run_prompts(backend, [p, p, p], cache=cache)
    assert len(backend.prompts) == 1 and out[0] == out[2]
    backend2 = RecordingBackend()
    run_prompts(backend2, [p], cache=PromptCache(tmp_path / "cache.jsonl"))
    assert backend2.prompts == []
    # the shared cache stores hashed keys, not prompts
    assert "prompt" not in (tmp_path / "cache.jsonl").read_text().replace('"prompt_tokens"', "")


def test_document_resume_gives_identical_documents(tmp_path):
    class S:
        def __init__(self, label, kp):
            self.label, self.keyphrases = label, kp

    seqs = [S("a", ("fever", "cough")), S("b", ("ankle", "fracture"))]
    j = tmp_path / "j.jsonl"
    docs1 = generate_documents(seqs, RecordingBackend(), PromptBuilder("note"),
                               DocumentOptions(min_coverage=1.0), Journal(j))
    rec = RecordingBackend()
    docs2 = generate_documents(seqs, rec, PromptBuilder("note"),
                               DocumentOptions(min_coverage=1.0), Journal(j))
    assert docs1 == docs2 and rec.prompts == []
