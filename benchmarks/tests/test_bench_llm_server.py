"""The GPU server benchmark (benchmarks/bench_llm_server.py): the arms table (each arm's
best pass, set against the first arm, and only the arms in that table), and several
servers of one model measured as one."""

import json
import sys

import bench_llm_server
from fault_server import FaultServer


def arm(server: str, rates: list[float], **extra) -> dict:
    sweep = [dict(what="runtime", concurrency=256, docs=256, prompts=256, tokens=int(r * 10),
                  wall=10.0, tok_s=r) for r in rates]
    return dict(model="m", url="u", server=server, gpu="G", max_tokens=32, sweep_docs=1,
                compare_docs=0, request_extra=extra, sweep=sweep, compare=[], commit="c")


def test_arms_are_set_against_the_first_by_their_best_pass():
    text = bench_llm_server.render_arms([arm("base", [300.0, 200.0]),
                                         arm("fast", [450.0, 600.0], dry_multiplier=0)])
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert rows[0].endswith("| 300 | ×1.00 |")
    assert rows[1].endswith("| 600 | ×2.00 |") and "dry_multiplier = 0" in rows[1]
    assert "the better of 2 passes" in text


def test_render_of_arms_alone_prints_their_table(tmp_path, monkeypatch, capsys):
    paths = []
    for name, rates in (("a", [100.0]), ("b", [150.0])):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(arm(name, rates)))
    monkeypatch.setattr(sys, "argv", ["bench_llm_server.py", "--render", *map(str, paths)])
    bench_llm_server.main()
    out = capsys.readouterr().out
    assert "×1.50" in out and "dptext / runtime" not in out


def test_several_servers_share_the_plain_clients_and_dptext_pools_them():
    bodies = [{"model": "m", "messages": [{"role": "user", "content": f"note {i}"}],
               "max_tokens": 8} for i in range(9)]
    with FaultServer() as a, FaultServer() as b, FaultServer() as c:
        urls = [f"{s.url}/v1" for s in (a, b, c)]
        d = bench_llm_server.runtime(urls, bodies, 4)
        assert [len(s.ok_prompts) for s in (a, b, c)] == [3, 3, 3]
    assert d["docs"] == 9 and d["tokens"] == 9 * 20
    assert bench_llm_server.backend_spec(urls[:1], "m") == f"openai:m@{urls[0]}"
    assert bench_llm_server.backend_spec(urls[:2], "m") == \
        f"pool:openai:m@{urls[0]},openai:m@{urls[1]}"


def test_stand_in_measures_the_clients_alone(tmp_path, monkeypatch, capsys):
    out = tmp_path / "stand-in.json"
    monkeypatch.setattr(sys, "argv", ["bench_llm_server.py", "--stand-in", "--concurrency", "4",
                                      "--sweep-docs", "2", "--compare-docs", "2",
                                      "--max-tokens", "8", "--out", str(out)])
    bench_llm_server.main()
    d = json.loads(out.read_text())
    assert d["server"] == bench_llm_server.STAND_IN and d["gpu"].startswith("this machine")
    ours = d["compare"][1]
    assert ours["what"] == "dptext" and ours["prompts"] == ours["docs"] == 8
    assert all(r["client_cpu_s"] > 0 for r in d["sweep"] + d["compare"])
    assert "client CPU ms/doc" in capsys.readouterr().out
