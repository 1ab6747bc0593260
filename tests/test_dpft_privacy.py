"""dpft's private randomness and what its run leaves behind (issue: privacy hardening):
the Poisson sampling and the DP-SGD noise come from generators no public seed touches;
no file of a run holds a sampling seed, a generator state or a batch loss; a resumed
run still does exactly the planned steps; the corpus's budget is charged before the
first release (and ε = ∞ exhausts it)."""

from __future__ import annotations

import json
import math
import struct

import numpy as np
import pytest

pytest.importorskip("opacus")
pytest.importorskip("peft")

import torch

from dptext.generators.dpft import train as train_mod


def _corpus(n=24):
    from dptext.corpus import Corpus

    texts = [f"the match ended with a late goal number {i}" for i in range(n // 2)]
    texts += [f"shares fell on the market today by {i} percent" for i in range(n // 2)]
    return Corpus(tuple(texts), tuple(["sport"] * (n // 2) + ["business"] * (n // 2)))


LABELS = {"label": ("sport", "business")}  # declared: the corpora are too small for a DP label set


def test_secret_generator_ignores_public_seeds():
    torch.manual_seed(0)
    a = torch.rand(8, generator=train_mod.secret_generator())
    torch.manual_seed(0)
    b = torch.rand(8, generator=train_mod.secret_generator())
    public = torch.rand(8, generator=torch.Generator().manual_seed(0))
    assert not torch.equal(a, b) and not torch.equal(a, public)


def _module(tiny, seed: int):
    from dptext.generators.dpft.train import DPFTConfig, DPFTModule, add_lora

    lm, tok = tiny(seed=seed)
    torch.manual_seed(0)  # the LoRA initialisation (peft uses torch's global generator)
    return DPFTModule(add_lora(lm, DPFTConfig()), 0), tok


def _one_step(tiny, noise_multiplier):
    """One DP-SGD step with q = 1 (every document, no sampling randomness), after the
    global generator was re-seeded with a public seed: only the noise can differ."""
    from dptext.generators.dpft.train import (
        DPFTConfig,
        TrainPlan,
        encode,
        train,
        trainable_state,
    )

    module, tok = _module(tiny, 0)
    c = _corpus(8)
    docs = encode(tok, ["label: x"] * len(c), c.texts, 16)
    plan = TrainPlan(sampling_rate=1.0, steps=1, noise_multiplier=noise_multiplier)
    torch.manual_seed(1234)  # the user's public --seed, as sample.py used to set it
    train(module, tok, docs, plan, DPFTConfig(batch_size=8, max_length=16), progress=False)
    return trainable_state(module)


def test_dp_sgd_noise_does_not_follow_the_public_seed(tiny):
    quiet = [_one_step(tiny, None), _one_step(tiny, None)]
    assert all(torch.equal(quiet[0][k], quiet[1][k]) for k in quiet[0])  # same data, no noise
    noisy = [_one_step(tiny, 1.0), _one_step(tiny, 1.0)]
    assert any(not torch.equal(noisy[0][k], noisy[1][k]) for k in noisy[0])


def _float_patterns(values) -> list[bytes]:
    out = []
    for v in values:
        text = {repr(v), f"{v:.6g}", f"{v:.5f}"}
        out += [t.encode() for t in text]
        out += [struct.pack("<d", v), struct.pack(">d", v), struct.pack("<f", v)]
    return out


def test_a_run_folder_holds_no_seed_no_generator_state_and_no_loss(tiny, tmp_path,
                                                                   monkeypatch):
    from dpft_helpers import dpft_dir, run_dpft
    from dptext.generators.dpft import DPFTConfig, SamplingConfig
    from dptext.generators.dpft.train import DPFTModule
    from dptext.run import run_dir_for

    losses: list[float] = []
    forward = DPFTModule.forward

    def recording_forward(self, *a, **k):
        out = forward(self, *a, **k)
        if out.requires_grad:  # a training batch: its per-document losses and their mean
            losses.extend(float(x) for x in out.detach().float())
            losses.append(float(out.detach().mean()))
        return out

    generators: list[tuple[torch.Generator, bytes]] = []
    secret = train_mod.secret_generator

    def recording_secret():
        g = secret()
        generators.append((g, bytes(g.get_state().tolist())))
        return g

    monkeypatch.setattr(DPFTModule, "forward", recording_forward)
    monkeypatch.setattr(train_mod, "secret_generator", recording_secret)
    out = tmp_path / "synth.jsonl"
    cfg = DPFTConfig(epochs=1.0, batch_size=8, max_length=16, checkpoint_every=1)
    run_dpft(_corpus(), out, epsilon=8.0, n_documents=3, config=cfg, base=tiny(),
             code_values=LABELS, sampling=SamplingConfig(max_new_tokens=4), seed=0)
    assert losses and len(generators) == 2  # the sampler and the noise
    patterns = _float_patterns(losses)
    for g, initial in generators:  # 64 bytes of each generator's words, first and last
        patterns += [initial[24:88], bytes(g.get_state().tolist())[24:88]]
    release = out.with_name(out.stem + ".release")
    files = [p for p in [out, *out.parent.glob("*.json"), *run_dir_for(out).rglob("*"),
                         *release.rglob("*")] if p.is_file()]
    assert any(p.name == "train_state.pt" for p in files)
    for p in files:
        data = p.read_bytes()
        leaked = [x for x in patterns if x in data]
        assert not leaked, f"{p.name} holds a secret seed or a batch loss: {leaked[:3]}"
    plan = json.loads((dpft_dir(out) / "plan.json").read_text())
    assert "seed" not in plan["plan"]


def test_the_progress_bar_shows_no_loss(tiny, monkeypatch, capsys):
    """The terminal's stderr ends up in log files: the bar shows steps and ε, no batch loss
    and no running mean of one."""
    from dptext.generators.dpft.train import DPFTConfig, DPFTModule, TrainPlan, encode, train

    batches: list[int] = []  # the training forwards, each a batch whose loss could show
    forward = DPFTModule.forward

    def counting_forward(self, *a, **k):
        batches.append(1)
        return forward(self, *a, **k)

    monkeypatch.setattr(DPFTModule, "forward", counting_forward)
    module, tok = _module(tiny, 0)
    c = _corpus(8)
    docs = encode(tok, ["label: x"] * len(c), c.texts, 16)
    plan = TrainPlan(sampling_rate=1.0, steps=3, noise_multiplier=1.0)
    train(module, tok, docs, plan, DPFTConfig(batch_size=8, max_length=16), progress=True,
          live_epsilon=lambda steps: 0.5 * steps)
    err = capsys.readouterr().err
    assert len(batches) == 3 and "DP fine-tuning" in err and "ε=1.5" in err
    assert "loss" not in err.lower(), err


def test_resume_after_an_interruption_does_exactly_the_planned_steps(tiny, tmp_path,
                                                                      monkeypatch):
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig

    # a large code share: N̂ near 24, so about 6 planned steps
    cfg = DPFTConfig(epochs=1.5, batch_size=6, max_length=16, checkpoint_every=1,
                     code_share=0.5)
    saved_steps: list[int] = []
    save = train_mod._save

    def dying_save(path, module, opt, step, plan):
        save(path, module, opt, step, plan)
        saved_steps.append(step)
        if step == 2:
            raise KeyboardInterrupt  # killed right after the second checkpoint

    monkeypatch.setattr(train_mod, "_save", dying_save)
    with pytest.raises(KeyboardInterrupt):
        DPFineTuneGenerator(6.0, config=cfg, checkpoint_dir=tmp_path, progress=False,
                            code_values=LABELS).fit(_corpus(), base=tiny())
    monkeypatch.setattr(train_mod, "_save", lambda *a: saved_steps.append(a[3]))
    gen = DPFineTuneGenerator(6.0, config=cfg, checkpoint_dir=tmp_path, progress=False,
                            code_values=LABELS).fit(_corpus(), base=tiny())
    steps = gen.plan_.steps
    assert steps >= 4 and saved_steps == list(range(1, steps + 1))  # 2 before, the rest after
    assert gen.train_log_ == {"steps": steps, "resumed_at": 2}
    sgd = next(r for r in gen.ledger_.releases if r.mechanism == "dp-sgd")
    assert sgd.steps == steps and sgd.sampling_rate == gen.plan_.sampling_rate
    assert gen.guarantee().epsilon <= 6.0


# ---------------------------------------------------------------- the corpus's budget
def _cli_corpus(tmp_path, n=16):
    from dptext.corpus import write_jsonl

    c = _corpus(n)
    path = tmp_path / "in.jsonl"
    write_jsonl(({"text": t, "label": y} for t, y in zip(c.texts, c.labels, strict=True)),
                path)
    return path


def _dpft_cli(path, out, epsilon, *extra):
    from typer.testing import CliRunner

    from dptext.cli import app

    return CliRunner().invoke(app, [
        "dpft", "--epsilon", epsilon, "-i", str(path), "--label-column", "label",
        "--labels", "sport,business",
        "-o", str(out), "--documents", "2", "--epochs", "0.25", "--batch-size", "4",
        "--max-length", "16", "--max-new-tokens", "3", "--no-progress", *extra])


def _runs(path):
    from dptext.corpus import read_corpus
    from dptext.privacy.budget import CorpusBudget, corpus_fingerprint

    c = read_corpus(path, label_column="label")
    return CorpusBudget.open(corpus_fingerprint(c.texts, c.labels))


def test_dpft_charges_the_corpus_before_any_model_is_loaded(tiny, tmp_path, monkeypatch):
    import dptext.generators.dpft.api as gen_mod

    path = _cli_corpus(tmp_path)
    loads = []

    def load(*a, **k):
        loads.append(1)
        return tiny()

    monkeypatch.setattr(gen_mod, "load_base", load)
    r = _dpft_cli(path, tmp_path / "a.jsonl", "4", "--budget-total", "4.2")
    assert r.exit_code == 0, r.output
    budget = _runs(path)
    assert [run["command"] for run in budget.runs] == ["generate --method dpft"]
    # charged as a (4, δ) block up front, then settled to the releases the run made
    assert [r["mechanism"] for r in budget.runs[0]["releases"]] == ["gaussian", "dp-sgd"]
    assert 3.9 < budget.spent().epsilon <= 4.0
    # a second run at ε = 2 would take the corpus to 6 > 4.2: refused before the model
    loads.clear()
    r = _dpft_cli(path, tmp_path / "b.jsonl", "2")
    assert r.exit_code != 0 and "budget exceeded" in r.output
    assert loads == [] and not (tmp_path / "b.jsonl.run").exists()
    assert len(_runs(path).runs) == 1


def test_a_dpft_run_killed_after_the_charge_stays_charged(tmp_path, monkeypatch):
    import dptext.generators.dpft.api as gen_mod

    def killed(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(gen_mod, "load_base", killed)
    path = _cli_corpus(tmp_path)
    r = _dpft_cli(path, tmp_path / "a.jsonl", "4", "--budget-total", "10")
    assert r.exit_code != 0
    budget = _runs(path)
    assert [r["mechanism"] for r in budget.runs[0]["releases"]] == ["approx-dp"]
    assert budget.spent().epsilon == pytest.approx(4.0)


def test_an_infinite_epsilon_dpft_run_exhausts_the_budget(tiny, tmp_path, monkeypatch):
    import dptext.generators.dpft.api as gen_mod

    monkeypatch.setattr(gen_mod, "load_base", lambda *a, **k: tiny())
    path = _cli_corpus(tmp_path)
    r = _dpft_cli(path, tmp_path / "a.jsonl", "inf")
    assert r.exit_code == 0, r.output
    budget = _runs(path)
    assert len(budget.runs) == 1 and math.isinf(budget.spent().epsilon)
    r = _dpft_cli(path, tmp_path / "b.jsonl", "1", "--budget-total", "100")
    assert r.exit_code != 0 and "budget exceeded" in r.output
    # with a total, ε = ∞ itself is refused unless the overrun is asked for
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    other = _cli_corpus(fresh, 14)  # another corpus: its own, empty ledger
    r = _dpft_cli(other, fresh / "a.jsonl", "inf", "--budget-total", "100")
    assert r.exit_code != 0 and "budget exceeded" in r.output
    assert np.isinf(_runs(path).spent().epsilon) and _runs(other).runs == []


def test_generate_method_dpft_passes_the_budget_on(tiny, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    import dptext.generators.dpft.api as gen_mod
    from dptext.cli import app

    monkeypatch.setattr(gen_mod, "load_base", lambda *a, **k: tiny())
    path = _cli_corpus(tmp_path)

    def generate(out, epsilon, *extra):
        return CliRunner().invoke(app, [
            "generate", "--method", "dpft", "--epsilon", epsilon, "-i", str(path),
            "--label-column", "label", "--labels", "sport,business", "-o", str(out),
            "--total-sequences", "1",
            "--no-progress", *extra])

    r = generate(tmp_path / "a.jsonl", "4", "--budget-total", "4.2")
    assert r.exit_code == 0, r.output
    budget = _runs(path)
    assert budget.total == 4.2 and 3.9 < budget.spent().epsilon <= 4.0
    r = generate(tmp_path / "b.jsonl", "2")
    assert r.exit_code != 0 and "budget exceeded" in r.output


def test_the_python_api_charges_the_corpus_like_the_engine(tiny, tmp_path):
    """Issue #56: ``DPFineTuneGenerator(...).fit`` (docs/dpft.md) makes releases; they go
    to the corpus's persistent ledger, and a fit past its total is refused before any."""
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig
    from dptext.privacy import BudgetExceededError
    from dptext.privacy.budget import open_budget

    corpus = _corpus(16)
    cfg = DPFTConfig(epochs=0.25, batch_size=4, max_length=16)
    gen = DPFineTuneGenerator(4.0, config=cfg, progress=False, code_values=LABELS)
    gen.fit(corpus, base=tiny())
    budget = open_budget(corpus)
    assert [r["command"] for r in budget.runs] == ["python api: DPFineTuneGenerator.fit"]
    # charged up front, then settled to the releases made
    assert [r["mechanism"] for r in budget.runs[0]["releases"]] == ["gaussian", "dp-sgd"]
    assert budget.spent().epsilon == pytest.approx(gen.guarantee().epsilon)
    again = DPFineTuneGenerator(2.0, config=cfg, progress=False, code_values=LABELS)
    with pytest.raises(BudgetExceededError):
        again.fit(corpus, base=tiny(), budget=open_budget(corpus, total=5.0))
    assert not hasattr(again, "ledger_")  # refused before the first release
    assert len(open_budget(corpus).runs) == 1
    again.fit(corpus, base=tiny(), budget=open_budget(corpus, total=5.0),
              allow_budget_overrun=True)
    assert len(open_budget(corpus).runs) == 2
