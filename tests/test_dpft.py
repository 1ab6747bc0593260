"""dpft: accountant calibration, ledger composition, control codes, DP-SGD training on a
tiny model of SmolLM2's architecture, generation, PPLM, save/load and resume."""

from __future__ import annotations

import math

import dp_accounting
import numpy as np
import pytest

pytest.importorskip("opacus")
pytest.importorskip("peft")

from dp_accounting.rdp import rdp_privacy_accountant

from dptext.corpus import Corpus
from dptext.privacy import NoiseSpec, PrivacyLedger, Sensitivity, compose, release
from dptext.privacy.dpsgd import calibrate_dp_sgd, dp_sgd_release


def test_noise_multiplier_reproduces_target_epsilon():
    rec = calibrate_dp_sgd(epsilon_total=4.0, delta=1e-5, sampling_rate=0.1, steps=30)
    eps = compose([rec]).epsilon
    assert 3.9 < eps <= 4.0
    assert rec.epsilon == pytest.approx(eps)
    # 1 % less noise must overshoot the target: the solved σ is (nearly) the smallest
    lower = dp_sgd_release(name="x", noise_multiplier=rec.noise_multiplier * 0.99,
                           sampling_rate=0.1, steps=30, max_grad_norm=1.0, epsilon=math.inf,
                           delta=1e-5)
    assert compose([lower]).epsilon > 4.0
    # an independent accountant (RDP) is looser, never tighter, at the same σ
    acc = rdp_privacy_accountant.RdpAccountant()
    acc.compose(rec.dp_event())
    assert acc.get_epsilon(1e-5) >= eps - 1e-6


def test_noise_multiplier_agrees_with_opacus():
    from opacus.accountants.utils import get_noise_multiplier

    rec = calibrate_dp_sgd(epsilon_total=8.0, delta=1e-5, sampling_rate=0.05, steps=50)
    theirs = get_noise_multiplier(target_epsilon=8.0, target_delta=1e-5, sample_rate=0.05,
                                  steps=50, accountant="prv")
    assert rec.noise_multiplier == pytest.approx(theirs, rel=0.03)


def test_ledger_composes_code_histogram_with_dp_sgd():
    ledger = PrivacyLedger(epsilon_cap=6.0)
    release(np.array([10.0, 20.0]), Sensitivity(1, 1, "one doc, one cell"),
            NoiseSpec("gaussian", 0.5, 1e-6), ledger=ledger, name="codes")
    rec = calibrate_dp_sgd(epsilon_total=6.0, delta=9e-6, sampling_rate=0.1, steps=20,
                           prior=ledger.releases)
    ledger.record(rec)
    g = ledger.guarantee()
    assert g.delta == pytest.approx(1e-5)
    assert g.epsilon <= 6.0
    # the composition is the PLD of both events, not an assertion
    from dp_accounting.pld import pld_privacy_accountant
    alone = pld_privacy_accountant.PLDAccountant()
    alone.compose(rec.dp_event())
    assert alone.get_epsilon(1e-5) < g.epsilon  # the histogram is charged
    acc = pld_privacy_accountant.PLDAccountant()
    acc.compose(dp_accounting.GaussianDpEvent(ledger.releases[0].noise_multiplier))
    acc.compose(rec.dp_event())
    assert g.epsilon == pytest.approx(acc.get_epsilon(1e-5), rel=1e-6)
    # a ledger saved and loaded keeps the DP-SGD record
    loaded = PrivacyLedger(releases=[*ledger.releases])
    assert loaded.guarantee().epsilon == pytest.approx(g.epsilon)


def test_dp_sgd_record_is_validated():
    with pytest.raises(ValueError):
        dp_sgd_release(name="x", noise_multiplier=1.0, sampling_rate=0.0, steps=3,
                       max_grad_norm=1.0, epsilon=1.0, delta=1e-5)


# ---------------------------------------------------------------- the generator, tiny model
def _corpus(n=24):
    texts = [f"the match ended with a late goal number {i}" for i in range(n // 2)]
    texts += [f"shares fell on the market today by {i} percent" for i in range(n // 2)]
    labels = ["sport"] * (n // 2) + ["business"] * (n // 2)
    sex = ["F", "M"] * (n // 2)
    return Corpus(tuple(texts), tuple(labels), columns={"sex": tuple(sex)})


# the public code values, declared (free); without them they are released as a DP label set
DECLARED = {"label": ("sport", "business"), "sex": ("F", "M")}


def test_encode_truncates_one_sample_per_document(tiny):
    from dptext.generators.dpft.train import encode

    _, tok = tiny()
    long = " ".join(["word"] * 500)
    docs = encode(tok, ["label: a", "label: b"], [long, "short"], max_length=40)
    assert len(docs) == 2  # one sample per document, however long
    assert len(docs[0][0]) == 40
    assert docs[0][0][0] == tok.dpft_bos_id and tok.dpft_sep_id in docs[0][0]
    assert docs[1][0][-1] == tok.eos_token_id


def test_bf16_base_keeps_per_document_gradients_fp32(tiny):
    """A bf16 base: LoRA and head stay fp32, so Opacus clips fp32 per-document gradients,
    and the losses (fp32 logits) agree with the fp32 model's to bf16 precision."""
    import torch
    from opacus import GradSampleModule

    from dptext.generators.dpft.sample import PPLMConfig, SamplingConfig, pplm_generate
    from dptext.generators.dpft.train import DPFTConfig, DPFTModule, add_lora, encode, pad_batch

    lm, tok = tiny()
    cfg = DPFTConfig()
    ref = DPFTModule(add_lora(lm, cfg), n_classes=2)
    lm16, _ = tiny()
    mod = DPFTModule(add_lora(lm16.to(torch.bfloat16), cfg), n_classes=2)
    mod.load_state_dict({k: v for k, v in ref.state_dict().items() if "lora_" in k
                         or k.startswith("head.")}, strict=False)
    trainable = [p for p in mod.parameters() if p.requires_grad]
    assert trainable and all(p.dtype == torch.float32 for p in trainable)
    c = _corpus(8)
    ids, att, text = pad_batch(encode(tok, ["label: x"] * 8, c.texts, 24), tok.pad_token_id)
    with torch.no_grad():
        want, got = ref.lm_losses(ids, att, text), mod.lm_losses(ids, att, text)
    assert got.dtype == torch.float32
    assert torch.allclose(got, want, rtol=0.02)
    gsm = GradSampleModule(mod, loss_reduction="sum")
    gsm(ids, att, text, cls_ids=ids, cls_att=att, cls_text=text,
        labels=torch.zeros(8, dtype=torch.long)).sum().backward()
    assert all(p.grad_sample.dtype == torch.float32 and p.grad_sample.shape[0] == 8
               for p in trainable)
    gsm._close()
    out = pplm_generate(mod.lm, mod.head, tok, ["label: x"] * 2, [1, 0],
                        SamplingConfig(max_new_tokens=3), PPLMConfig(iterations=1))
    assert len(out) == 2


def test_load_base_rejects_an_unknown_dtype():
    from dptext.corpus import InputError
    from dptext.generators.dpft.model import load_base

    with pytest.raises(InputError, match="dtype"):
        load_base(dtype="int8")


@pytest.mark.parametrize(("caps", "want"), [
    ({"avx2": True, "avx512_bf16": False, "amx_bf16": False}, "float32"),
    ({"avx2": True, "avx512_bf16": True}, "bfloat16"),
    ({"amx_bf16": True}, "bfloat16"),
    ({}, "float32"),  # a CPU torch reports nothing about: the safe choice
])
def test_auto_dtype_is_bf16_only_where_the_cpu_multiplies_it_natively(monkeypatch, caps, want):
    """Without AVX512-BF16 / AMX a bf16 DP-SGD step is ~27x slower than fp32, so ``auto``
    (the default) must not pick it there; an explicit dtype is kept as given."""
    import torch

    from dptext.generators.dpft.model import base_dtype
    from dptext.generators.dpft.train import DPFTConfig

    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: caps)
    assert DPFTConfig().dtype == "auto"
    assert base_dtype() == base_dtype("auto") == want
    assert base_dtype("bfloat16") == "bfloat16" and base_dtype("float32") == "float32"


def test_the_run_says_which_dtype_it_loads_and_warns_of_emulated_bf16(monkeypatch):
    import torch

    from dptext.generators.dpft.model import describe_dtype

    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"avx2": True})
    assert describe_dtype() == ("base model in float32 (--dtype auto: no AVX512-BF16 or AMX "
                                "on this CPU)")
    assert describe_dtype("bfloat16").startswith("warning: base model in bfloat16, which "
                                                 "this CPU emulates")
    assert describe_dtype("float32") == "base model in float32"
    monkeypatch.setattr(torch.cpu, "get_capabilities", lambda: {"amx_bf16": True})
    assert describe_dtype() == ("base model in bfloat16 (--dtype auto: the CPU multiplies "
                                "bf16 natively)")
    assert describe_dtype("bfloat16") == "base model in bfloat16"


def test_fit_generate_report_save_load(tiny, tmp_path):
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig, SamplingConfig

    cfg = DPFTConfig(epochs=0.5, batch_size=6, max_length=24, multitask=True)
    gen = DPFineTuneGenerator(6.0, 1e-5, config=cfg, metadata_fields=["sex"], seed=0,
                              code_values=DECLARED, progress=False).fit(_corpus(), base=tiny())
    names = [r.mechanism for r in gen.ledger_.releases]
    assert names == ["gaussian", "dp-sgd"]
    g = gen.guarantee()
    assert g.epsilon <= 6.0
    assert gen.train_log_ == {"steps": gen.plan_.steps, "resumed_at": 0}  # no losses
    docs = gen.generate(4, sampling=SamplingConfig(max_new_tokens=5),
                        rng=np.random.default_rng(0))
    assert len(docs) == 4
    assert all(d["label"] in ("sport", "business") and d["sex"] in ("F", "M") for d in docs)
    rep = gen.privacy_report("test", {})
    assert rep["guarantee"]["epsilon"] == pytest.approx(g.epsilon)
    assert {r["mechanism"] for r in rep["releases"]} == {"gaussian", "dp-sgd"}
    assert "seed" not in rep["parameters"]["train_plan"]
    gen.save(tmp_path / "a")
    again = DPFineTuneGenerator.load(tmp_path / "a", base=tiny())
    assert again.guarantee().epsilon == pytest.approx(g.epsilon)
    same = again.generate(4, sampling=SamplingConfig(max_new_tokens=5),
                          rng=np.random.default_rng(0))
    assert [d["text"] for d in same] == [d["text"] for d in docs]


def test_infinite_epsilon_is_labelled_not_private(tiny):
    from dptext.generators.dpft import NOT_PRIVATE, DPFineTuneGenerator, DPFTConfig, SamplingConfig

    gen = DPFineTuneGenerator(math.inf, config=DPFTConfig(epochs=0.3, batch_size=8,
                                                          max_length=16),
                              seed=0, progress=False).fit(_corpus(), base=tiny())
    assert gen.ledger_.releases == []
    assert gen.code_distribution_.noisy_counts == (12.0, 12.0)  # exact, business/sport
    rep = gen.privacy_report("test", {})
    assert rep["guarantee"]["summary"] == NOT_PRIVATE
    docs = gen.generate(2, sampling=SamplingConfig(max_new_tokens=3))
    assert all(d["private"] is False for d in docs)


def test_resume_reuses_plan_and_state(tiny, tmp_path):
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig
    from dptext.generators.dpft.train import trainable_state

    cfg = DPFTConfig(epochs=0.5, batch_size=6, max_length=16, checkpoint_every=1)
    first = DPFineTuneGenerator(6.0, config=cfg, checkpoint_dir=tmp_path, progress=False,
                                code_values=DECLARED).fit(_corpus(), base=tiny())
    second = DPFineTuneGenerator(6.0, config=cfg, checkpoint_dir=tmp_path, progress=False,
                                 code_values=DECLARED).fit(_corpus(), base=tiny(seed=1))
    # no new noise: the same released histogram and plan; training already complete
    assert second.code_distribution_ == first.code_distribution_
    assert second.plan_ == first.plan_
    a, b = trainable_state(first.module_), trainable_state(second.module_)
    assert all(np.allclose(a[k].numpy(), b[k].numpy()) for k in a)
    with pytest.raises(ValueError, match="other settings"):
        DPFineTuneGenerator(3.0, config=cfg, checkpoint_dir=tmp_path, progress=False
                            ).fit(_corpus(), base=tiny())


def test_code_distribution_sampling_and_negative_counts():
    from dptext.generators.dpft.codes import CodeDistribution

    d = CodeDistribution(("label",), (("a",), ("b",), ("c",)), (-3.0, 5.0, 15.0))
    assert d.probabilities().tolist() == [0.0, 0.25, 0.75]
    assert d.total() == 17.0
    s = d.sample(2000, np.random.default_rng(0))
    assert {x["label"] for x in s} == {"b", "c"}
    allneg = CodeDistribution(("label",), (("a",), ("b",)), (-1.0, -2.0))
    assert allneg.probabilities().tolist() == [0.5, 0.5]


def test_pplm_steers_towards_the_head(tiny):
    """With a strong step, PPLM output differs from plain sampling and the head's
    probability of the target class rises over the steered stream."""
    import torch

    from dptext.generators.dpft.sample import PPLMConfig, SamplingConfig, pplm_generate
    from dptext.generators.dpft.train import DPFTModule

    lm, tok = tiny()
    mod = DPFTModule(lm, 2)
    torch.manual_seed(0)
    cfg = SamplingConfig(max_new_tokens=6, top_k=0, top_p=1.0)
    plain = pplm_generate(lm, mod.head, tok, ["label: a"] * 3, [1, 1, 1], cfg,
                          PPLMConfig(step_size=0.0), seed=3)
    steered = pplm_generate(lm, mod.head, tok, ["label: a"] * 3, [1, 1, 1], cfg,
                            PPLMConfig(step_size=20.0, gm_scale=1.0, kl_scale=0.0), seed=3)
    assert plain != steered


def filter_logits(logits, top_k: int, top_p: float):
    """The kept candidates' logits in place, the others -inf."""
    import torch

    from dptext.generators.dpft.sample import kept_candidates

    values, order = kept_candidates(logits, top_k, top_p)
    return torch.full_like(logits, -float("inf")).scatter(-1, order, values)


def test_filter_logits_top_k_and_top_p():
    import torch

    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    kept = torch.isfinite(filter_logits(logits, 3, 1.0))
    assert kept.tolist() == [[True, True, True, False]]
    kept = torch.isfinite(filter_logits(logits, 0, 0.7))
    assert kept.tolist() == [[True, True, False, False]]
    kept = torch.isfinite(filter_logits(logits, 3, 0.7))  # top-p among the top k
    assert kept.tolist() == [[True, True, False, False]]
    tied = torch.tensor([[2.0, 1.0, 1.0, 0.0]])  # a token tied with the k-th stays
    assert torch.isfinite(filter_logits(tied, 2, 1.0)).tolist() == [[True, True, True, False]]
    x = torch.randn(3, 500, generator=torch.Generator().manual_seed(0))
    ref = x.clone()  # the definition: mask below the k-th, then top-p over the full sort
    ref[ref < torch.topk(ref, 40).values[:, -1:]] = -float("inf")
    srt, order = torch.sort(ref, descending=True)
    p = torch.softmax(srt, -1)
    srt[p.cumsum(-1) - p > 0.9] = -float("inf")
    ref = torch.full_like(ref, -float("inf")).scatter(-1, order, srt)
    assert torch.equal(filter_logits(x, 40, 0.9), ref)


def test_sample_next_draws_from_the_filtered_distribution():
    """Drawn among the kept candidates only, with their softmax probabilities."""
    import torch

    from dptext.generators.dpft.sample import sample_next

    x = torch.randn(1, 200, generator=torch.Generator().manual_seed(1))
    p = torch.softmax(filter_logits(x, 20, 0.9), -1)[0]
    gen = torch.Generator().manual_seed(0)
    ids = sample_next(x.repeat(20000, 1), 20, 0.9, gen).flatten()
    freq = torch.bincount(ids, minlength=200).float() / ids.numel()
    assert freq[p == 0].sum() == 0  # never a dropped token
    assert float((freq - p).abs().max()) < 0.015  # 20,000 draws: sd of a frequency ≤ 0.0036


def test_rows_end_at_the_first_special_token():
    """EOS or any other special token (a chat template's turn marker) ends a document."""
    import torch

    from dptext.generators.dpft.sample import _stop_rows

    rows = torch.tensor([[5, 6, 2, 7], [9, 1, 8, 2], [5, 6, 7, 8], [1, 5, 6, 7]])
    assert _stop_rows(rows, torch.tensor([1, 2])) == [[5, 6], [9], [5, 6, 7, 8], []]


def test_cached_sampling_matches_full_recompute(tiny):
    """The KV cache reaches the model under the name the installed ``transformers`` reads:
    greedy tokens drawn with it are the argmax of the whole sequence recomputed without
    it (a cache silently dropped would condition each step on its last token only)."""
    import torch

    from dptext.generators.dpft.sample import SamplingConfig, _sample_batch, stop_ids

    lm, tok = tiny()
    lm.eval()
    prompt = tok("the market rose on monday", add_special_tokens=False).input_ids
    cfg = SamplingConfig(max_new_tokens=8, top_k=1, min_new_tokens=8)
    drawn = _sample_batch(lm, tok, prompt, 2, cfg, torch.Generator().manual_seed(0))
    assert drawn[0] == drawn[1] and len(drawn[0]) == 8
    with torch.no_grad():
        logits = lm(input_ids=torch.tensor([prompt + drawn[0]])).logits[0].float()
    logits[:, stop_ids(tok)] = -float("inf")
    n = len(prompt)
    assert logits[n - 1: n + 7].argmax(-1).tolist() == drawn[0]


def test_no_stop_token_before_min_new_tokens():
    """A model that would stop at once (EOS, or a chat marker, most likely at every step)
    writes ``min_new_tokens`` tokens first, then stops; the prompts' order is kept."""
    from types import SimpleNamespace

    import torch

    from dptext.generators.dpft.sample import SamplingConfig, generate

    class StopsAtOnce(torch.nn.Module):
        def forward(self, input_ids, cache=None, use_cache=True):
            logits = torch.zeros(input_ids.shape[0], input_ids.shape[1], 10)
            logits[..., 2], logits[..., 1], logits[..., 7] = 10.0, 9.0, 5.0  # EOS, marker
            return SimpleNamespace(logits=logits, cache=None)

    class Tokenizer:
        dpft_bos_id, dpft_sep_id, eos_token_id, all_special_ids = 3, 4, 2, [0, 1, 2]

        def __call__(self, text, add_special_tokens=False):
            return SimpleNamespace(input_ids=[5])

        def decode(self, row, skip_special_tokens=True):
            return " ".join(map(str, row))

    tokenizer = Tokenizer()
    cfg = SamplingConfig(max_new_tokens=6, top_k=1, min_new_tokens=3)
    assert generate(StopsAtOnce(), tokenizer, ["a", "b", "a"], cfg) == ["7 7 7"] * 3
    plain = SamplingConfig(max_new_tokens=6, top_k=1, min_new_tokens=0)
    assert generate(StopsAtOnce(), tokenizer, ["a"], plain) == [""]


@pytest.mark.slow
def test_real_smollm2_through_the_cli(tmp_path):
    """The real default base model (SmolLM2-135M from the GGUF) takes DP-SGD steps via
    ``dptext dpft``, and the run writes documents and its report."""
    import json

    from typer.testing import CliRunner

    from dptext.cli import app
    from dptext.corpus import write_jsonl

    c = _corpus(16)
    write_jsonl(({"text": t, "label": y} for t, y in zip(c.texts, c.labels, strict=True)),
                tmp_path / "in.jsonl")
    out = tmp_path / "out.jsonl"
    res = CliRunner().invoke(app, [
        "dpft", "--epsilon", "8", "-i", str(tmp_path / "in.jsonl"), "--label-column", "label",
        "--labels", "sport,business", "-o", str(out), "--documents", "2", "--seed", "0",
        "--epochs", "0.25", "--batch-size", "4", "--max-length", "24", "--max-new-tokens", "8",
        "--no-progress"])
    assert res.exit_code == 0, res.output
    docs = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(docs) == 2 and all(d["label"] in ("sport", "business") for d in docs)
    rep = json.loads(out.with_name("out.privacy.json").read_text())
    assert 0 < rep["guarantee"]["epsilon"] <= 8.0
    train = next(r for r in rep["releases"] if r["mechanism"] == "dp-sgd")
    assert train["dimension"] > 0 and train["steps"] >= 1


def test_run_dpft_writes_outputs_and_resumes(tiny, tmp_path):
    import json

    from dpft_helpers import dpft_dir, run_dpft
    from dptext.generators.dpft import DPFTConfig, SamplingConfig
    from dptext.privacy_report import report_path

    out = tmp_path / "synth.jsonl"
    kw = dict(epsilon=8.0, n_documents=5, config=DPFTConfig(epochs=0.3, batch_size=8,
                                                            max_length=16),
              sampling=SamplingConfig(max_new_tokens=4), seed=0, chunk=2,
              code_values={"label": DECLARED["label"]})
    rep = run_dpft(_corpus(), out, base=tiny(), **kw)
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(lines) == 5 and all({"text", "label"} <= set(x) for x in lines)
    saved = json.loads(report_path(out).read_text())
    assert saved["guarantee"]["epsilon"] == pytest.approx(rep["guarantee"]["epsilon"])
    assert saved["guarantee"]["epsilon"] <= 8.0
    # an interrupted generation continues: drop the last journal lines and re-run
    journal = dpft_dir(out) / "generated.jsonl"
    journal.write_text("".join(x + "\n" for x in journal.read_text().splitlines()[:2]))
    run_dpft(_corpus(), out, base=tiny(), resume=True, **kw)
    assert [json.loads(x) for x in out.read_text().splitlines()][:2] == lines[:2]
    assert len(out.read_text().splitlines()) == 5


def test_the_run_ledger_records_each_dpft_release_through_its_cap(tiny, tmp_path):
    """Through the run lifecycle, dpft records every release in the run's ledger as it is made:
    that ledger then holds the releases dpft saved with its model (names, noise scales); a
    run ledger capped below what dpft spends refuses it (fresh or resumed) instead of ending
    above its cap; a fit saved by an earlier attempt joins a reloaded, empty run ledger."""
    import json
    from dataclasses import asdict

    from dptext.generators.base import RunContext
    from dptext.generators.dpft import DPFTConfig
    from dptext.generators.dpft.generator import DPFTGenerator
    from dptext.privacy.ledger import BudgetExceededError

    gen = DPFTGenerator(epsilon=8.0, labels=DECLARED["label"], base=tiny(),
                        config=DPFTConfig(epochs=0.3, batch_size=8, max_length=16))

    def context(folder: str, cap: float) -> RunContext:
        return RunContext(dir=tmp_path / folder, ledger=PrivacyLedger(epsilon_cap=cap),
                          save_ledger=lambda: None, progress=False)

    ctx = context("a", 8.0)
    gen.fit(_corpus(), ctx)
    saved = json.loads((tmp_path / "a" / "model" / "dpft.json").read_text())["ledger"]
    assert [r.name for r in ctx.ledger.releases] == ["control-code histogram",
                                                     "DP-SGD fine-tuning"]
    assert [asdict(r) for r in ctx.ledger.releases] == saved
    assert ctx.ledger.guarantee().epsilon <= 8.0 * (1 + 1e-9)
    again = context("a", 8.0)  # resumed after the save: the saved releases, none anew
    gen.fit(_corpus(), again)
    assert again.ledger.releases == ctx.ledger.releases
    with pytest.raises(BudgetExceededError):  # the saved releases go past this cap
        gen.fit(_corpus(), context("a", 2.0))
    refused = context("b", 2.0)
    with pytest.raises(BudgetExceededError, match="DP-SGD"):
        gen.fit(_corpus(), refused)
    assert [r.name for r in refused.ledger.releases] == ["control-code histogram"]
    assert refused.ledger.guarantee().epsilon <= 2.0
    assert not (tmp_path / "b" / "model").exists()


def test_cli_lists_dpft_and_generate_defaults_to_the_one_total_epsilon(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dptext.cli import app
    from dptext.generators.base import DEFAULT_EPSILON

    res = CliRunner().invoke(app, ["dpft", "--help"])
    assert res.exit_code == 0 and "--epsilon" in res.output
    seen = _capture_run(monkeypatch)  # without --epsilon: the API's default, as DP-KPS's
    res = CliRunner().invoke(app, ["generate", "--method", "dpft", "-i", "demo:bbc-news/train",
                                   "-o", str(tmp_path / "x.jsonl"), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert seen["generator"].name == "dpft" and seen["generator"].epsilon == DEFAULT_EPSILON


def _capture_run(monkeypatch) -> dict:
    """Replace the run lifecycle: record the generator and the corpus a command passes."""
    from dptext.run import RunResult

    seen: dict = {}

    def fake(generator, source, out, **kw):
        seen.update(generator=generator, n=len(source.read(generator.columns())), **kw)
        return RunResult([], {"parameters": {}, "releases": [], "assumptions": [],
                              "guarantee": {"summary": "x", "method": "y"}}, None, out,
                         out, out, [])

    monkeypatch.setattr("dptext.run.run", fake)
    return seen


def test_generate_method_dpft_passes_its_options_on(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dptext.cli import app
    from dptext.corpus import write_jsonl

    seen = _capture_run(monkeypatch)
    c = _corpus(6)
    write_jsonl(({"text": t, "label": y} for t, y in zip(c.texts, c.labels, strict=True)),
                tmp_path / "in.jsonl")
    res = CliRunner().invoke(app, [
        "generate", "--method", "dpft", "--epsilon", "4", "--delta", "1e-6",
        "-i", str(tmp_path / "in.jsonl"), "--label-column", "label",
        "-o", str(tmp_path / "o.jsonl"), "--total-sequences", "3", "--no-progress",
        "--labels", "sport,business"])
    assert res.exit_code == 0, res.output
    gen = seen["generator"]
    assert gen.name == "dpft" and gen.epsilon == 4.0 and gen.delta == 1e-6
    assert gen.documents == 3 and seen["n"] == 6
    assert gen.labels == ("sport", "business")  # --labels reaches dpft


def test_canary_scores_match_direct_likelihood(tiny):
    """The trie scoring of all 10,000 secrets equals a direct forward pass."""
    import torch

    from dptext.generators.dpft.canary import (
        CANARY_TEMPLATES,
        Canary,
        canary_prompt,
        exposure,
        rank_of,
        secret_log_probs,
    )

    lm, tok = tiny()
    c = Canary(CANARY_TEMPLATES[0], "0429", 10, "sport")
    prompt = canary_prompt(tok, c, "label: sport")
    scores = secret_log_probs(lm, tok, prompt)
    assert scores.shape == (10_000,)
    for secret in ("0429", "9999", "1000"):
        ids = torch.tensor([prompt + [tok.convert_tokens_to_ids(d) for d in secret]])
        with torch.no_grad():
            logp = torch.log_softmax(lm(input_ids=ids).logits[0], -1)
        n = len(prompt)
        direct = sum(float(logp[n - 1 + i, ids[0, n + i]]) for i in range(4))
        assert scores[int(secret)] == pytest.approx(direct, abs=1e-3)
    r = rank_of(scores, "0429")
    assert 1 <= r <= 10_000 and exposure(1) == pytest.approx(math.log2(10_000))


def test_canary_insertion_counts():
    from dptext.generators.dpft.canary import insert_canaries, make_canaries

    c = _corpus(8)
    canaries = make_canaries((1, 10, 100), c.classes, np.random.default_rng(0))
    poisoned = insert_canaries(c, canaries)
    assert len(poisoned) == 8 + 111
    for k in canaries:
        assert poisoned.texts.count(k.text) == k.insertions


def test_icl_reference_is_opt_in_and_labelled_not_private():
    from dptext.generators.dpft.icl import ICL_NOT_PRIVATE, icl_reference, icl_report
    from dptext.llm.recording import RecordingBackend

    backend = RecordingBackend(answer=lambda p: " a new text ")
    corpus = _corpus(8)
    with pytest.raises(ValueError, match="NOT PRIVATE"):
        icl_reference(corpus, 2, backend=backend)
    docs = icl_reference(corpus, 4, backend=backend, not_private=True, shots=2,
                         metadata_fields=["sex"], rng=np.random.default_rng(0))
    assert all(d["private"] is False and d["privacy"] == ICL_NOT_PRIVATE for d in docs)
    assert [d["text"] for d in docs] == ["a new text"] * 4
    for d, p in zip(docs, backend.prompts, strict=True):
        text = p.text()
        # the target's codes are covered by at least one real example in the prompt
        assert f"label: {d['label']}" in text.rsplit("codes:", 1)[0]
        assert text.rstrip().endswith("text:")
    rep = icl_report("test", {})
    assert rep["guarantee"]["summary"] == ICL_NOT_PRIVATE


def test_dpft_imports_llm_only_in_the_icl_reference():
    import ast
    from pathlib import Path

    import dptext.generators.dpft as pkg

    for f in Path(pkg.__file__).parent.glob("*.py"):
        mods = set()
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                mods.add(node.module)
            elif isinstance(node, ast.Import):
                mods.update(a.name for a in node.names)
        uses_llm = any(m == "dptext.llm" or m.startswith("dptext.llm.") for m in mods)
        assert uses_llm == (f.name == "icl.py"), f.name


def test_dpft_cli_declares_labels_and_code_values(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from dptext.cli import app
    from dptext.corpus import write_jsonl

    seen = _capture_run(monkeypatch)
    c = _corpus(6)
    write_jsonl(({"text": t, "label": y, "sex": s} for t, y, s in
                 zip(c.texts, c.labels, c.columns["sex"], strict=True)), tmp_path / "in.jsonl")
    base = ["dpft", "--epsilon", "4", "-i", str(tmp_path / "in.jsonl"), "--label-column",
            "label", "-o", str(tmp_path / "o.jsonl"), "--metadata", "sex"]
    res = CliRunner().invoke(app, [*base, "--labels", "sport,business",
                                   "--code-values", "sex=F,M"])
    assert res.exit_code == 0, res.output
    assert seen["generator"]._declared() == {"sex": ("F", "M"),
                                             "label": ("sport", "business")}
    res = CliRunner().invoke(app, base)
    # released as a DP label set
    assert res.exit_code == 0 and seen["generator"]._declared() is None
    for bad in ("sex", "age=1,2", "sex="):
        res = CliRunner().invoke(app, [*base, "--code-values", bad])
        assert res.exit_code == 2, bad


def test_undeclared_code_values_are_released_as_a_dp_label_set(tiny):
    """Without declared values, the labels and metadata values are released by DP partition
    selection (one "label set" release, L2 √2 for two fields), inside ε; a label of two
    documents is left out with its documents; declared values outside the data's are
    refused without naming the private values."""
    from dptext.generators.dpft import DPFineTuneGenerator, DPFTConfig, SamplingConfig
    from dptext.privacy.labels import PrivateValuesError

    big = _corpus(400)
    corpus = Corpus((*big.texts, "a rare ward note", "another rare ward note"),
                    (*big.labels, "rareward", "rareward"),
                    columns={"sex": big.columns["sex"] + ("F", "M")})
    cfg = DPFTConfig(epochs=0.05, batch_size=8, max_length=16)
    gen = DPFineTuneGenerator(6.0, 1e-5, config=cfg, metadata_fields=["sex"], seed=0,
                              progress=False).fit(corpus, base=tiny())
    names = [r.name for r in gen.ledger_.releases]
    assert names == ["label set (label, sex)", "control-code histogram", "DP-SGD fine-tuning"]
    assert gen.ledger_.releases[0].sensitivity == pytest.approx(math.sqrt(2))
    assert gen.domains_ == {"label": ("business", "sport"), "sex": ("F", "M")}
    g = gen.guarantee()
    assert g.epsilon <= 6.0 and 0.9e-5 <= g.delta <= 1e-5 * (1 + 1e-9)
    docs = gen.generate(3, sampling=SamplingConfig(max_new_tokens=3),
                        rng=np.random.default_rng(0))
    assert all(d["label"] in ("business", "sport") for d in docs)
    report = gen.privacy_report("test", {})
    assert any("partition selection" in a for a in report["assumptions"])
    assert "rareward" not in str(report)
    with pytest.raises(PrivateValuesError) as err:
        DPFineTuneGenerator(6.0, config=cfg, code_values={"label": ("sport", "business")},
                            progress=False).fit(corpus, base=tiny())
    assert "rareward" not in str(err.value) and "rareward" in err.value.detail
