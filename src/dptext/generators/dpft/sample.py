"""Decoding: top-k + nucleus sampling from ``[BOS]codes[SEP]``, and PPLM steering.

Everything here post-processes the DP-trained model (and released code
distribution): it costs no privacy, however many documents are generated.

PPLM (Dathathri et al. 2020), adapted to the multi-task model: at each step a
perturbation Δ of the last hidden state is found by a few normalised gradient steps
on ``CE(head(mean hidden states), y) + kl_scale·KL(p_Δ ‖ p)``. The classifier reads
the code-free stream ``[BOS][SEP]text`` (as in training, so it cannot read the label
off the codes); the same Δ moves the conditional stream's hidden state, and the next
token is drawn from p_Δ^γ · p^(1−γ) (γ = ``gm_scale``) after top-k / top-p filtering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import nn


@dataclass(frozen=True)
class SamplingConfig:
    max_new_tokens: int = 96
    top_k: int = 50
    top_p: float = 0.95
    temperature: float = 1.0
    batch_size: int = 64  # rows decoded together; on a CPU 64 costs ~0.7x per row of 16
    min_new_tokens: int = 8  # no stop token before this many (stop_ids): no empty document


@dataclass(frozen=True)
class PPLMConfig:
    step_size: float = 0.04
    iterations: int = 3
    kl_scale: float = 0.01
    gm_scale: float = 0.9


def prompt_ids(tok, codes: str, with_codes: bool = True) -> list[int]:
    ids = [tok.dpft_bos_id]
    if with_codes:
        ids += tok(codes, add_special_tokens=False).input_ids
    return [*ids, tok.dpft_sep_id]


def kept_candidates(logits: torch.Tensor, top_k: int, top_p: float
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """(values, token ids) of the tokens top-k (and any tied with the k-th) then top-p
    keep, sorted, the dropped ones -inf. With top-k only the kept candidates are sorted,
    not the whole vocabulary (a full sort per token was a quarter of a sampling step)."""
    width = logits.shape[-1]
    if top_k and top_k < width:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1, None]
        width = int((logits >= kth).sum(-1).max())  # ties with the k-th are kept
    values, order = torch.topk(logits, width, dim=-1)  # sorted, descending
    if width < logits.shape[-1]:
        values = values.masked_fill(values < kth, -float("inf"))
    if top_p < 1.0:
        probs = torch.softmax(values, -1)
        drop = probs.cumsum(-1) - probs > top_p  # keep the token that crosses top_p
        values = values.masked_fill(drop, -float("inf"))
    return values, order


def sample_next(logits: torch.Tensor, top_k: int, top_p: float,
                gen: torch.Generator) -> torch.Tensor:
    """One token per row from the filtered distribution, drawn among the kept candidates
    only (not over the whole vocabulary): ids of shape (rows, 1)."""
    values, order = kept_candidates(logits, top_k, top_p)
    pick = torch.multinomial(torch.softmax(values, -1), 1, generator=gen)
    return order.gather(-1, pick)


def _decode(tok, rows: list[list[int]]) -> list[str]:
    return [tok.decode(r, skip_special_tokens=True).strip() for r in rows]


def stop_ids(tok) -> torch.Tensor:
    """The tokens a document ends at: EOS and every other special token (a base model's
    chat-template markers, e.g. ``<|im_start|>``, begin a turn, not more document: a
    weakly tuned instruct model otherwise writes "user" or "assistant" and a chat)."""
    return torch.tensor(sorted({*tok.all_special_ids, tok.eos_token_id}))


def _stop_rows(tokens: torch.Tensor, stops: torch.Tensor) -> list[list[int]]:
    """Each row cut before its first stop token (``stop_ids``)."""
    hit = torch.isin(tokens, stops)
    ends = torch.where(hit.any(1), hit.int().argmax(1), tokens.shape[1]).tolist()
    return [row[:end] for row, end in zip(tokens.tolist(), ends, strict=True)]


def _texts_by_group(groups: dict, draw, batch_size: int, n: int) -> list[str]:
    """The texts of ``n`` prompts grouped by what conditions them (``groups``: key →
    indices), ``draw(key, b)`` decoding ``b`` texts of one group, ``batch_size`` at a
    time."""
    texts = [""] * n
    for key, idx in groups.items():
        for s in range(0, len(idx), batch_size):
            chunk = idx[s: s + batch_size]
            for i, t in zip(chunk, draw(key, len(chunk)), strict=True):
                texts[i] = t
    return texts


def no_stop_yet(logits: torch.Tensor, stops: torch.Tensor, step: int,
                cfg: SamplingConfig) -> torch.Tensor:
    """``logits`` with the stop tokens ruled out while fewer than ``cfg.min_new_tokens``
    are written (what ``transformers``' ``min_new_tokens`` does): a weakly tuned model
    whose first token is mostly a stop token (80 LitBank passages at ε = 6: two of
    three) still writes a document."""
    if step < cfg.min_new_tokens:
        logits[:, stops] = -float("inf")
    return logits


@torch.no_grad()
def generate(lm, tok, code_strings: Sequence[str], cfg: SamplingConfig, *,
             seed: int = 0) -> list[str]:
    """One text per code string; prompts with equal codes are batched together.

    ``seed`` (public) seeds a local generator: torch's global one is neither read for the
    sampling nor re-seeded."""
    gen = torch.Generator().manual_seed(seed)
    lm.eval()
    groups: dict[str, list[int]] = {}
    for i, c in enumerate(code_strings):
        groups.setdefault(c, []).append(i)
    return _texts_by_group(groups, lambda codes, b: _decode(tok, _sample_batch(
        lm, tok, prompt_ids(tok, codes), b, cfg, gen)), cfg.batch_size, len(code_strings))


def _sample_batch(lm, tok, prompt: list[int], b: int, cfg: SamplingConfig,
                  gen: torch.Generator) -> list[list[int]]:
    """``b`` continuations of one prompt: temperature, then top-k / top-p, then a draw
    from ``gen`` (the order of ``transformers``' sampling), with the KV cache."""
    ids = torch.tensor([prompt]).repeat(b, 1)
    pkv = None
    generated = []
    done = torch.zeros(b, dtype=torch.bool)
    stops = stop_ids(tok)
    for step in range(cfg.max_new_tokens):
        out = lm(input_ids=ids, cache=pkv, use_cache=True)
        pkv = out.cache
        logits = no_stop_yet(out.logits[:, -1].float() / cfg.temperature, stops, step, cfg)
        nxt = sample_next(logits, cfg.top_k, cfg.top_p, gen)
        nxt[done] = tok.eos_token_id
        generated.append(nxt)
        done |= torch.isin(nxt.squeeze(1), stops)
        if bool(done.all()):
            break
        ids = nxt
    if not generated:
        return [[] for _ in range(b)]
    return _stop_rows(torch.cat(generated, 1), stops)


def pplm_generate(lm, head: nn.Linear, tok, code_strings: Sequence[str], targets: Sequence[int],
                  cfg: SamplingConfig, pplm: PPLMConfig = PPLMConfig(), *,
                  seed: int = 0) -> list[str]:
    """Like ``generate``, steered towards class ``targets[i]`` by the classifier head."""
    gen = torch.Generator().manual_seed(seed)
    lm.eval()
    out_emb = lm.get_output_embeddings()
    groups: dict[tuple[str, int], list[int]] = {}
    for i, (c, y) in enumerate(zip(code_strings, targets, strict=True)):
        groups.setdefault((c, y), []).append(i)
    return _texts_by_group(groups, lambda key, b: _decode(tok, _pplm_batch(
        lm, head, out_emb, tok, *key, b, cfg, pplm, gen)), cfg.batch_size, len(code_strings))


def _pplm_batch(lm, head, out_emb, tok, codes, y, b, cfg: SamplingConfig, pp: PPLMConfig,
                gen: torch.Generator):
    cond = torch.tensor([prompt_ids(tok, codes)]).repeat(b, 1)
    unc = torch.tensor([prompt_ids(tok, codes, with_codes=False)]).repeat(b, 1)
    target = torch.full((b,), y, dtype=torch.long)
    pkv_c = pkv_u = None
    pooled_sum = torch.zeros(b, lm.config.hidden_size)
    generated = []
    done = torch.zeros(b, dtype=torch.bool)
    stops = stop_ids(tok)
    for count in range(cfg.max_new_tokens):  # count: text tokens pooled so far
        with torch.no_grad():
            oc = lm(input_ids=cond, cache=pkv_c, use_cache=True,
                    output_hidden_states=True)
            ou = lm(input_ids=unc, cache=pkv_u, use_cache=True,
                    output_hidden_states=True)
        pkv_c, pkv_u = oc.cache, ou.cache
        h_c = oc.hidden_states[-1][:, -1].float()  # Δ and the head work in fp32
        h_u = ou.hidden_states[-1][:, -1].float()
        base = torch.log_softmax(oc.logits[:, -1].float() / cfg.temperature, -1)
        delta = torch.zeros_like(h_c, requires_grad=True)
        for _ in range(pp.iterations):
            pooled = (pooled_sum + h_u + delta) / (count + 1)
            cls_loss = nn.functional.cross_entropy(head(pooled), target)
            logp = torch.log_softmax(_logits(out_emb, h_c + delta) / cfg.temperature, -1)
            kl = (logp.exp() * (logp - base)).sum(-1).mean()
            loss = cls_loss + pp.kl_scale * kl
            (grad,) = torch.autograd.grad(loss, delta)
            with torch.no_grad():
                delta -= pp.step_size * grad / (grad.norm(dim=-1, keepdim=True) + 1e-10)
        with torch.no_grad():
            pert = torch.log_softmax(_logits(out_emb, h_c + delta) / cfg.temperature, -1)
            fused = no_stop_yet(pp.gm_scale * pert + (1 - pp.gm_scale) * base, stops, count,
                                cfg)
            nxt = sample_next(fused, cfg.top_k, cfg.top_p, gen)
            nxt[done] = tok.eos_token_id
        pooled_sum = pooled_sum + h_u
        generated.append(nxt)
        done |= torch.isin(nxt.squeeze(1), stops)
        if bool(done.all()):
            break
        cond, unc = nxt, nxt
    return _stop_rows(torch.cat(generated, 1), stops)


def _logits(out_emb: nn.Linear, hidden: torch.Tensor) -> torch.Tensor:
    """The LM head on an fp32 hidden state, whatever the base weights' dtype."""
    return out_emb(hidden.to(out_emb.weight.dtype)).float()
