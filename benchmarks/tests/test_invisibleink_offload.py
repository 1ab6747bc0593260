"""InvisibleInk's cells carried to a GPU machine and back (benchmarks/peers/
invisibleink_offload.py): units of one class each, run side by side, land as the one cell a
single run writes, which the runner then resumes without writing anything again. invink is
replaced by a stand-in package that counts its calls."""

import json
import sys
from pathlib import Path

import invisibleink
import invisibleink_offload as offload
import invisibleink_runner

FAKE_INVINK = '''
import os, types
__version__ = "test"
def generate(refs, model, desc, **kw):
    with open(os.environ["FAKE_INVINK_CALLS"], "a") as f:
        f.write(desc + "\\n")
    return types.SimpleNamespace(texts=[f"text for {desc}"], epsilon_spent=[0.5], lens=[4])
'''

CLASSES = {"sport": 21, "tech": 14, "business": 7}  # 7 references per document: 3, 2, 1


def make_plan(tmp_path: Path) -> Path:
    plan = tmp_path / "plan"
    plan.mkdir()
    (plan / "news.private.jsonl").write_text("".join(
        json.dumps({"text": f"note {label} {i}", "label": label}) + "\n"
        for label, n in CLASSES.items() for i in range(n)))
    cell = {"cell": "news-invisibleink-eps6-n100-s0", "input": "news.private.jsonl",
            "labels": sorted(CLASSES),
            "args": ["--per-class", "100", "--epsilon", "6", "--delta", "1e-05",
                     "--max-tokens", "8", "--description", "news", "--seed", "0"]}
    (plan / offload.PLAN).write_text(json.dumps({"cells": [cell]}))
    return plan


def fake_env(tmp_path: Path, monkeypatch) -> Path:
    pkg = tmp_path / "site" / "invink"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from invink.generate import generate\n")
    (pkg / "generate.py").write_text(FAKE_INVINK)
    (pkg / "utils.py").write_text("def preprocess(text):\n    return text\n")
    calls = tmp_path / "calls.txt"
    monkeypatch.setenv("PYTHONPATH", str(pkg.parent))
    monkeypatch.setenv("FAKE_INVINK_CALLS", str(calls))
    monkeypatch.syspath_prepend(str(pkg.parent))
    for name in [m for m in sys.modules if m == "invink" or m.startswith("invink.")]:
        monkeypatch.delitem(sys.modules, name)
    return calls


def test_units_land_as_the_cell_one_run_writes(tmp_path, monkeypatch):
    calls = fake_env(tmp_path, monkeypatch)
    plan, work = make_plan(tmp_path), tmp_path / "work"
    model = tmp_path / "qwen2.5-0.5b"
    assert offload.run(plan, model, work, workers=3, device="cpu", python=sys.executable) == 0
    assert len(calls.read_text().splitlines()) == 6
    unit = work / "news-invisibleink-eps6-n100-s0" / "sport.jsonl"
    with unit.open("a") as f:  # written, but its statistics not yet: the machine went back
        f.write(json.dumps({"text": "cut off", "label": "sport"}) + "\n")

    assert offload.land(work, tmp_path / "bench") == ["news-invisibleink-eps6-n100-s0"]
    cell = tmp_path / "bench" / "cells" / "news-invisibleink-eps6-n100-s0"
    rows = [json.loads(line) for line in (cell / "invisibleink.jsonl").open()]
    assert [r["label"] for r in rows] == ["business"] + ["sport"] * 3 + ["tech"] * 2
    meta = json.loads((cell / "invisibleink.jsonl.meta.json").read_text())
    assert [meta["classes"][c]["documents"] for c in sorted(CLASSES)] == [1, 3, 2]
    assert sorted(c for r in meta["runs"] for c in r["classes"]) == sorted(CLASSES)
    assert sum(r["documents"] for r in meta["runs"]) == 6
    assert json.loads((cell / "seconds.json").read_text())["seconds"] == sum(
        r["seconds"] + r["load_seconds"] for r in meta["runs"])

    # one run over every class, as bench_whole_documents.py resumes a cell: nothing to write
    private = plan / "news.private.jsonl"
    rc = invisibleink_runner.main([
        "--input", str(private), "--model-dir", str(model), "--per-class", "100",
        "--epsilon", "6", "--delta", "1e-05", "--max-tokens", "8", "--description", "news",
        "--seed", "0", "--out", str(cell / "invisibleink.jsonl")])
    assert rc == 0 and len(calls.read_text().splitlines()) == 6
    assert len((cell / "invisibleink.jsonl").read_text().splitlines()) == 6
    assert invisibleink.written_on(cell) == {"cpu": 6}  # the resumed run wrote none


def test_a_resumed_cell_is_not_overwritten_by_an_older_snapshot(tmp_path, monkeypatch):
    fake_env(tmp_path, monkeypatch)
    plan, work = make_plan(tmp_path), tmp_path / "work"
    offload.run(plan, tmp_path / "m", work, workers=1, device="cpu", python=sys.executable)
    offload.land(work, tmp_path / "bench")
    out = tmp_path / "bench" / "cells" / "news-invisibleink-eps6-n100-s0" / "invisibleink.jsonl"
    with out.open("a") as f:
        f.write(json.dumps({"text": "written here since", "label": "tech"}) + "\n")
    try:
        offload.land(work, tmp_path / "bench")
    except ValueError as e:
        assert "resumed since" in str(e)
    else:
        raise AssertionError("land overwrote a cell resumed since")


def test_the_runner_writes_only_the_classes_asked_for(tmp_path, monkeypatch):
    calls = fake_env(tmp_path, monkeypatch)
    plan = make_plan(tmp_path)
    out = tmp_path / "tech.jsonl"
    args = ["--input", str(plan / "news.private.jsonl"), "--model-dir", str(tmp_path),
            "--per-class", "100", "--epsilon", "6", "--max-tokens", "8",
            "--description", "news", "--out", str(out)]
    assert invisibleink_runner.main([*args, "--classes", "tech"]) == 0
    assert {json.loads(line)["label"] for line in out.open()} == {"tech"}
    assert calls.read_text().splitlines() == ["news. Category: tech"] * 2
    assert invisibleink_runner.main([*args, "--classes", "health"]) == 2


def test_pack_plans_every_cell_but_those_the_results_hold(tmp_path, monkeypatch):
    import types

    import bench_whole_documents as bench
    import synthetic_protocol

    train = types.SimpleNamespace(texts=("a note", "b note"), labels=("a", "b"))
    data = types.SimpleNamespace(train=train, classes=("a", "b"), max_tokens=16,
                                 document_type="note")
    monkeypatch.setattr(synthetic_protocol, "load_data", lambda name: data)
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"corpus": "news", "method": "invisibleink", "epsilon": 6.0,
                                   "seed": 1, "per_class": 100, "llm": "local:x"}) + "\n")
    monkeypatch.setattr(bench, "RESULTS", results)
    plan = offload.pack(["news"], [6.0, 3.0], [0, 1], 100, tmp_path / "plan")
    assert [c["cell"] for c in plan["cells"]] == [
        "news-invisibleink-eps6-n100-s0", "news-invisibleink-eps3-n100-s0",
        "news-invisibleink-eps3-n100-s1"]
    private = tmp_path / "plan" / "news.private.jsonl"
    assert private.stat().st_mode & 0o077 == 0  # readable by this user only


def test_throughput_counts_from_the_first_document_of_each_call():
    units = {"c-s0/a": {"device": ["GPU"], "documents": 2, "tokens": [10, 30],
                        "seconds_per_document": [4.0, 6.0]}}
    calls = [["70 s: 0 documents; 0 %, 0 MiB", "100 s: 10 documents; 100 %, 9 MiB",
              "130 s: 40 documents; 90 %, 9 MiB"],
             ["0 s: 45 documents; 100 %, 9 MiB", "30 s: 75 documents; 100 %, 9 MiB"]]
    text = offload.throughput(units, calls, workers=3)
    assert "**1.00 documents/s together** (60 documents in 60 s" in text
    assert "one process wrote 4.0 tokens/s (5.0 s a document)" in text
    assert "busy 98 %" in text
    assert "| c-s0 | 1 | 2 | 20.0 | 5.0 | 4.0 |" in text


def test_land_leaves_scored_cells_alone(tmp_path, monkeypatch):
    import bench_whole_documents as bench

    fake_env(tmp_path, monkeypatch)
    plan, work = make_plan(tmp_path), tmp_path / "work"
    offload.run(plan, tmp_path / "m", work, workers=1, device="cpu", python=sys.executable)
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"corpus": "news", "method": "invisibleink", "epsilon": 6.0,
                                   "seed": 0, "per_class": 100, "llm": "local:x"}) + "\n")
    monkeypatch.setattr(bench, "RESULTS", results)
    assert offload.land(work, tmp_path / "bench") == []
    assert not (tmp_path / "bench" / "cells").exists()
