"""``DPFineTuneGenerator``: the ``dpft`` generator's Python API.

    gen = DPFineTuneGenerator(epsilon=8, delta=1e-5).fit(read_corpus("demo:bbc-news/train"))
    # charged to the corpus's persistent budget first, as a run of the run lifecycle is
    docs = gen.generate(500)               # [{"text", "label", ...}, ...]
    write_report(gen.privacy_report("python api", {}), "out.privacy.json")
    gen.save("adapter/"); DPFineTuneGenerator.load("adapter/")

Persistent budget: ``fit`` checks the whole run against the corpus's ledger (its dataset
id from ``config.toml``, else its keyed content fingerprint; or the ``budget`` given) and
charges it as one (ε, δ) block before the first release, then settles it to the releases
made (``privacy.budget.settle_run``), as the run lifecycle does: a release made through
this API is never outside a persistent ledger. ``fit_uncharged`` is for a caller that
charges the run itself (the run lifecycle's ``DPFTGenerator``) or makes no release (the canary
audit).

Budget: ``epsilon`` is the whole run's. ``code_share`` of it (and ``code_delta_share``
of δ) goes to the Gaussian control-code histogram; the DP-SGD noise multiplier is then
solved so that the ledger's composition of both (PLD accountant) is ≤ ε. Code values
(the label, metadata fields) that ``code_values`` does not declare are first released
with DP partition selection (the "label set" release, ``label_set_share`` of ε and δ);
documents outside the public values are left out. ε = ∞ trains without DP and uses the
data's own values and exact code frequencies: the output is then NOT private and the
report says so.

``seed`` is public: it seeds only the decoding (``generate`` without ``rng``). The private
randomness (Poisson sampling, DP-SGD noise) is drawn from OS entropy in ``train``.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from dptext.corpus import Corpus, InputError
from dptext.generators.dpft.codes import (
    LABEL_FIELD,
    code_distribution_from_dict,
    code_domains,
    declared_label_sets,
    document_codes,
    format_codes,
    public_documents,
    release_code_distribution,
    release_set_marginals,
)
from dptext.generators.dpft.model import DEFAULT_MODEL, load_base
from dptext.generators.dpft.sample import PPLMConfig, SamplingConfig, generate, pplm_generate
from dptext.generators.dpft.train import (
    DPFTConfig,
    DPFTModule,
    TrainPlan,
    add_lora,
    encode,
    train,
    trainable_state,
)
from dptext.privacy import PrivacyLedger, Release
from dptext.privacy.budget import CorpusBudget, open_budget, planned_run, settle_run
from dptext.privacy.dpsgd import calibrate_dp_sgd, dp_sgd_release, quick_epsilon
from dptext.privacy.labels import LABEL_SET, check_declared, standalone_spec
from dptext.privacy_report import LABELS_FROM_DATA, build_report, mark_not_private

PLAN_NAME = "dpft run (control-code histogram + DP-SGD), charged before its first release"
NOT_PRIVATE = "NOT PRIVATE: ε = ∞, the model was fine-tuned without DP on the private corpus"
PRIVACY_NOTES = (
    "dpft: one document = one DP-SGD sample (truncated to max_length tokens), Poisson-sampled; "
    "per-document gradients clipped to max_grad_norm; Gaussian noise added by Opacus.",
    "dpft: the base model is public (pre-trained, not on this corpus).",
)


class DPFineTuneGenerator:
    """DP-SGD + LoRA fine-tuning with control codes; optional multi-task head + PPLM."""

    def __init__(self, epsilon: float, delta: float = 1e-5, *, model: str | Path | None = None,
                 config: DPFTConfig | None = None, metadata_fields: Sequence[str] = (),
                 code_values: dict[str, Sequence[str]] | None = None,
                 checkpoint_dir: str | Path | None = None, seed: int | None = None,
                 progress: bool = True, label_set_share: float = 0.1):
        self.epsilon = epsilon
        self.delta = delta
        self.model = model
        self.config = config or DPFTConfig()
        self.metadata_fields = tuple(metadata_fields)
        self.code_values = code_values  # declared public values per field ("label": labels)
        self.label_set_share = label_set_share  # of ε and δ, for undeclared code values
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.seed = seed
        self.progress = progress
        self.multilabel_ = False  # fitted on label sets (set by fit, kept in the plan)
        self.set_labels_: tuple[str, ...] | None = None  # codes: labels and set sizes

    @property
    def private(self) -> bool:
        return math.isfinite(self.epsilon)

    # ------------------------------------------------------------------ fit
    def fit(self, corpus: Corpus, *, base=None, budget: CorpusBudget | None = None,
            allow_budget_overrun: bool = False) -> DPFineTuneGenerator:
        """Charge the run to ``corpus``'s persistent budget (``budget``: that ledger;
        default ``open_budget(corpus)``), refusing it when over the total unless
        ``allow_budget_overrun``, then train; a resumed ``checkpoint_dir`` is not charged
        again. ``base``: an already loaded ``(model, tokenizer)`` (tests)."""
        self._check(corpus)
        if self._plan_file() is not None and self._plan_file().exists():
            return self.fit_uncharged(corpus, base=base)
        budget = budget if budget is not None else open_budget(corpus)
        run_id = uuid.uuid4().hex
        budget.commit(PrivacyLedger(releases=[planned_run(PLAN_NAME, self.epsilon,
                                                          self.delta)]),
                      command="python api: DPFineTuneGenerator.fit",
                      parameters={"method": "dpft", "epsilon": _num(self.epsilon),
                                  "delta": self.delta, "dpft_config": self.config.to_dict()},
                      allow_overrun=allow_budget_overrun, run_id=run_id)
        self.fit_uncharged(corpus, base=base)
        if self.private:  # the releases made replace the block (never costing more)
            settle_run(budget, run_id, self.ledger_.releases)
        return self

    def _check(self, corpus: Corpus) -> None:
        if len(corpus) == 0:
            raise InputError(f"{corpus.source}: the corpus is empty")
        if not (self.epsilon > 0):
            raise ValueError(f"epsilon must be positive (or inf), got {self.epsilon}")

    def _plan_file(self) -> Path | None:
        return self.checkpoint_dir / "plan.json" if self.checkpoint_dir else None

    def fit_uncharged(self, corpus: Corpus, *, base=None,
                      ledger: PrivacyLedger | None = None) -> DPFineTuneGenerator:
        """Train on ``corpus`` without charging its persistent budget: for a caller that
        charges the run itself (the run lifecycle) or whose results are no release (the
        canary audit, whose exposures stay with the curator); ``fit`` charges it.
        ``ledger``: the caller's (the run's), each release recorded there as it is made,
        through its cap check (default: a new one capped at ε)."""
        self._check(corpus)
        cfg = self.config
        codes = document_codes(corpus, self.metadata_fields)
        self.multilabel_ = corpus.multilabel
        lm, tok = base if base is not None else load_base(self.model, cfg.dtype)
        self.tokenizer_ = tok
        lm = add_lora(lm, cfg)
        plan_file = self._plan_file()
        resumed = plan_file is not None and plan_file.exists()
        if resumed:  # resume: no new noise, same plan
            self._restore_plan(json.loads(plan_file.read_text()), ledger)
        else:
            self._release_domains(codes, ledger)
        keep = public_documents(codes, self.domains_)  # the others are in no public cell
        codes, texts = [codes[i] for i in keep], [corpus.texts[i] for i in keep]
        self.classes_ = list(self.domains_.get(LABEL_FIELD, ()))
        n_cls = len(self.classes_) if (cfg.multitask and self.classes_) else 0
        self.module_ = DPFTModule(lm, n_cls)
        n_params = sum(p.numel() for p in self.module_.parameters() if p.requires_grad)
        if not resumed:
            self._plan(codes, n_params)
            if plan_file is not None:
                self.checkpoint_dir.mkdir(parents=True, exist_ok=True)
                plan_file.write_text(json.dumps(self._plan_dict(), indent=2))
        code_strings = [format_codes(c) for c in codes]
        docs = encode(tok, code_strings, texts, cfg.max_length)
        cls_docs = y = None
        if n_cls:
            cls_docs = encode(tok, [""] * len(texts), texts, cfg.cls_max_length,
                              with_codes=False)
            y = [self.classes_.index(c[LABEL_FIELD]) for c in codes]
        prior = [r for r in self.ledger_.releases if r.mechanism != "dp-sgd"]
        live = None
        if self.plan_.noise_multiplier is not None:
            sgd = next(r for r in self.ledger_.releases if r.mechanism == "dp-sgd")

            def live(steps: int) -> float:
                return quick_epsilon([*prior, _with_steps(sgd, steps)])
        self.train_log_ = train(self.module_, tok, docs, self.plan_, cfg, cls_docs=cls_docs,
                                labels=y, checkpoint_dir=self.checkpoint_dir,
                                live_epsilon=live, progress=self.progress)
        self.module_.eval()
        return self

    def _release_domains(self, codes: list[dict[str, str]],
                         ledger: PrivacyLedger | None) -> None:
        """The run's ledger, and the public values of each code field: declared, or the DP
        label set of the undeclared fields (read from the data only when ε = ∞)."""
        self.ledger_ = ledger if ledger is not None else self._new_ledger()
        spec = standalone_spec("gaussian", self.label_set_share * self.epsilon,
                               self.label_set_share * self.delta) if self.private else None
        declared = dict(self.code_values or {})
        self.spare_share_ = 0.0  # of ε and δ, unspent by a label-set release: to the codes
        self.set_labels_ = None
        if self.multilabel_ and declared.get(LABEL_FIELD):  # labels declared: their sets?
            labels = declared.pop(LABEL_FIELD)
            check_declared({x for c in codes for x in json.loads(c[LABEL_FIELD])}, labels)
            every_set = declared_label_sets(labels)
            if every_set is not None:  # all public: nothing to release, no one left out
                declared[LABEL_FIELD] = every_set
                if all(f in declared for f in codes[0]):  # no field left to release
                    self.spare_share_ = self.label_set_share
            elif list(codes[0]) == [LABEL_FIELD]:  # too many sets: labels and set sizes
                if self.config.multitask:
                    raise ValueError(
                        f"the classifier head (multitask) takes one class per label set; "
                        f"{len(labels)} declared labels have too many sets: fit without it")
                self.set_labels_ = tuple(sorted(labels))
                self.spare_share_ = self.label_set_share
                self.domains_ = {}  # nothing released first, no one left out
                return
        self.domains_ = code_domains(codes, declared, spec=spec, ledger=self.ledger_)
        empty = [f for f, v in self.domains_.items() if not v]
        if empty:
            raise ValueError(f"no value of {', '.join(empty)} reached the DP label set's "
                             "threshold: there is no code to train on. Declare the values "
                             "(--labels, --code-values) or raise ε.")

    def _plan(self, codes: list[dict[str, str]], n_params: int) -> None:
        cfg = self.config
        spare = self.spare_share_
        eps = (cfg.code_share + spare) * self.epsilon if self.private else None
        delta = (cfg.code_delta_share + spare) * self.delta if self.private else 0
        if self.set_labels_ is not None:
            dist = release_set_marginals(codes, self.set_labels_, epsilon=eps, delta=delta,
                                         ledger=self.ledger_)
        else:
            dist = release_code_distribution(codes, self.domains_, epsilon=eps, delta=delta,
                                             ledger=self.ledger_)
        self.code_distribution_ = dist
        n_hat = dist.total()  # DP estimate of N (exact when ε = ∞)
        q = min(1.0, cfg.batch_size / n_hat)
        steps = max(1, math.ceil(cfg.epochs / q))
        sigma = None
        if self.private:
            rec = calibrate_dp_sgd(epsilon_total=self.epsilon,  # δ: what the others leave
                                   delta=self.delta - sum(r.delta for r in self.ledger_.releases),
                                   sampling_rate=q, steps=steps, prior=self.ledger_.releases,
                                   max_grad_norm=cfg.max_grad_norm, name="DP-SGD fine-tuning")
            rec = replace(rec, dimension=n_params)  # noised coordinates per step
            self.ledger_.record(rec)
            sigma = rec.noise_multiplier
        self.plan_ = TrainPlan(sampling_rate=q, steps=steps, noise_multiplier=sigma)

    def _plan_dict(self) -> dict:
        return {"plan": asdict(self.plan_), "ledger": self.ledger_.to_dict()["releases"],
                "codes": self.code_distribution_.to_dict(),
                "domains": {k: list(v) for k, v in self.domains_.items()},
                "epsilon": _num(self.epsilon), "delta": self.delta,
                "config": self.config.to_dict(), "model": str(self.model or DEFAULT_MODEL),
                "metadata_fields": list(self.metadata_fields),
                "multilabel": self.multilabel_}

    def _new_ledger(self) -> PrivacyLedger:
        return PrivacyLedger(epsilon_cap=self.epsilon if self.private else None)

    def _restore_plan(self, d: dict, ledger: PrivacyLedger | None = None) -> None:
        """The saved plan; its releases recorded in ``ledger`` (the run's) unless it holds
        them already, reloaded with the run."""
        if _num(self.epsilon) != d["epsilon"] or self.config.to_dict() != d["config"]:
            raise ValueError("the checkpoint folder holds a run with other settings; use "
                             "another folder or the same ε and configuration")
        self.plan_ = TrainPlan(**{k: v for k, v in d["plan"].items() if k != "seed"})
        saved = [Release(**r) for r in d["ledger"]]
        self.ledger_ = ledger if ledger is not None else self._new_ledger()
        held = self.ledger_.releases
        if saved[:len(held)] != held:
            raise ValueError("the run's ledger holds other releases than the checkpoint "
                             "folder's plan; remove the run folder to start a new run")
        for rec in saved[len(held):]:
            self.ledger_.record(rec)
        self.code_distribution_ = code_distribution_from_dict(d["codes"])
        self.domains_ = {k: tuple(v) for k, v in d["domains"].items()}
        self.multilabel_ = d.get("multilabel", False)

    # ------------------------------------------------------------------ generate
    def generate(self, n: int, *, sampling: SamplingConfig | None = None, pplm: bool = False,
                 pplm_config: PPLMConfig | None = None,
                 rng: np.random.Generator | None = None) -> list[dict[str, Any]]:
        """``n`` synthetic documents with codes drawn from the released distribution."""
        rng = rng or np.random.default_rng(self.seed)
        sampling = sampling or SamplingConfig()
        codes = self.code_distribution_.sample(n, rng)
        strings = [format_codes(c) for c in codes]
        seed = int(rng.integers(2**31))
        lm = self.module_.lm
        if pplm:
            if self.module_.head is None:
                raise ValueError("PPLM steering needs the classifier head: fit with "
                                 "DPFTConfig(multitask=True)")
            targets = [self.classes_.index(c[LABEL_FIELD]) for c in codes]
            texts = pplm_generate(lm, self.module_.head, self.tokenizer_, strings, targets,
                                  sampling, pplm_config or PPLMConfig(), seed=seed)
        else:
            texts = generate(lm, self.tokenizer_, strings, sampling, seed=seed)
        out = []
        for c, t in zip(codes, texts, strict=True):
            label = c.get(LABEL_FIELD)
            rec: dict[str, Any] = {"text": t, "label": json.loads(label) if self.multilabel_
                                   and label is not None else label}
            rec.update({k: v for k, v in c.items() if k != LABEL_FIELD})
            rec["generator"] = "dpft" + ("+pplm" if pplm else "")
            if not self.private:
                rec["private"] = False
            out.append(rec)
        return out

    # ------------------------------------------------------------------ report, save, load
    def guarantee(self):
        return self.ledger_.guarantee()

    def report_notes(self) -> list[str]:
        notes = [*PRIVACY_NOTES]
        if any(r.name.startswith(LABEL_SET) for r in self.ledger_.releases):
            notes.append(LABELS_FROM_DATA)
        return notes

    def report_parameters(self, parameters: dict[str, Any]) -> dict[str, Any]:
        return {"method": "dpft", "epsilon_target": _num(self.epsilon), "delta": self.delta,
                "train_plan": asdict(self.plan_), "dpft_config": self.config.to_dict(),
                **parameters}

    def privacy_report(self, command: str, parameters: dict[str, Any]) -> dict[str, Any]:
        report = build_report(self.ledger_, command=command,
                              parameters=self.report_parameters(parameters),
                              notes=self.report_notes())
        return report if self.private else mark_not_private(report, NOT_PRIVATE)

    def save(self, path: str | Path) -> Path:
        """The LoRA adapter (peft format), the classifier head, and the released data."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        self.module_.lm.save_pretrained(path / "adapter")
        torch.save(trainable_state(self.module_), path / "trainable.pt")
        meta = self._plan_dict()
        meta["classes"] = self.classes_
        (path / "dpft.json").write_text(json.dumps(meta, indent=2))
        return path

    @classmethod
    def load(cls, path: str | Path, *, base=None, progress: bool = False,
             ledger: PrivacyLedger | None = None) -> DPFineTuneGenerator:
        """``ledger``: the run's, which gets the saved releases it does not hold yet."""
        path = Path(path)
        meta = json.loads((path / "dpft.json").read_text())
        eps = float(meta["epsilon"])
        model = None if meta["model"] == DEFAULT_MODEL else meta["model"]
        gen = cls(eps, meta["delta"], model=model, config=DPFTConfig.from_dict(meta["config"]),
                  metadata_fields=meta["metadata_fields"], progress=progress)
        gen._restore_plan(meta, ledger)
        gen.classes_ = meta["classes"]
        lm, tok = base if base is not None else load_base(model, gen.config.dtype)
        gen.tokenizer_ = tok
        lm = add_lora(lm, gen.config)
        n_cls = len(gen.classes_) if gen.config.multitask else 0
        gen.module_ = DPFTModule(lm, n_cls)
        missing = gen.module_.load_state_dict(torch.load(path / "trainable.pt"), strict=False)
        if missing.unexpected_keys:
            raise ValueError(f"{path}: unexpected weights {missing.unexpected_keys[:3]}")
        gen.module_.eval()
        return gen


def _num(x: float) -> float | str:
    return x if math.isfinite(x) else "inf"


def _with_steps(rec: Release, steps: int) -> Release:
    return dp_sgd_release(name=rec.name, noise_multiplier=rec.noise_multiplier,
                          sampling_rate=rec.sampling_rate, steps=steps,
                          max_grad_norm=rec.sensitivity, epsilon=math.inf, delta=rec.delta)
