"""The InvisibleInk peer runner (benchmarks/peers) neither stores nor prints a class's
exact size: only what its output already shows (documents per class) and whether the
per-class cap n // (B-1) bound. invink itself is replaced by a recording stand-in."""

import json
import re
import sys
import types

import invisibleink_runner
import pytest

CLASS_SIZES = {"sport": 40, "tech": 13}  # 7 references per output: caps 5 and 1


@pytest.fixture
def fake_invink(monkeypatch):
    calls = []

    def generate(refs, model, desc, **kwargs):
        calls.append(len(refs))
        return types.SimpleNamespace(texts=["a synthetic text"], epsilon_spent=[0.5], lens=[4])

    gen = types.ModuleType("invink.generate")
    utils = types.ModuleType("invink.utils")
    utils.preprocess = lambda text: text
    pkg = types.ModuleType("invink")
    pkg.__version__, pkg.generate, pkg.utils = "test", generate, utils
    monkeypatch.setitem(sys.modules, "invink", pkg)
    monkeypatch.setitem(sys.modules, "invink.generate", gen)
    monkeypatch.setitem(sys.modules, "invink.utils", utils)
    return calls


def numbers(obj):
    if isinstance(obj, dict):
        return [n for v in obj.values() for n in numbers(v)]
    if isinstance(obj, list):
        return [n for v in obj for n in numbers(v)]
    return [obj] if isinstance(obj, int | float) and not isinstance(obj, bool) else []


def test_class_sizes_reach_neither_the_meta_file_nor_the_log(tmp_path, fake_invink, capsys):
    private = tmp_path / "private.jsonl"
    private.write_text("".join(
        json.dumps({"text": f"private note {label} {i}", "label": label}) + "\n"
        for label, n in CLASS_SIZES.items() for i in range(n)))
    out = tmp_path / "out.jsonl"
    rc = invisibleink_runner.main([
        "--input", str(private), "--model-dir", str(tmp_path), "--per-class", "2",
        "--epsilon", "6", "--max-tokens", "8", "--description", "news", "--out", str(out)])
    assert rc == 0
    assert fake_invink == [7, 7, 7]  # 2 sport documents, tech capped at 1
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    assert meta["classes"]["tech"]["capped"] and not meta["classes"]["sport"]["capped"]
    assert [meta["classes"][c]["documents"] for c in ("sport", "tech")] == [2, 1]
    leaked = set(CLASS_SIZES.values()) | {n // 7 for n in CLASS_SIZES.values() if n // 7 > 2}
    assert not leaked & set(numbers(meta))
    err = capsys.readouterr().err.replace(str(tmp_path), "TMP")
    assert not any(re.search(rf"\b{n}\b", err) for n in leaked), err
