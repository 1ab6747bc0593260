"""LitBank excerpts for the coreference tests (the archive shipped in dptext/data)."""

from __future__ import annotations

import tarfile
from importlib import resources
from pathlib import Path

from dptext.evaluate.coref.readers import DEMO, DEMO_ARCHIVE, read_gold


def extract_litbank(folder: Path, n: int) -> list[str]:
    """Copy the first ``n`` LitBank documents (``.txt`` + ``.ann``, by name) into
    ``folder``; returns their names."""
    folder.mkdir(parents=True, exist_ok=True)
    with resources.as_file(resources.files("dptext") / "data" / DEMO_ARCHIVE) as p, \
            tarfile.open(p) as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        names = sorted(Path(k).stem for k in members if k.endswith(".ann"))[:n]
        for k, m in members.items():
            if Path(k).stem in names:
                (folder / Path(k).name).write_bytes(tar.extractfile(m).read())
    return names


def litbank_texts(skip: int, n: int) -> list[str]:
    """Plain text of ``n`` LitBank excerpts (after the first ``skip`` by name): real
    fiction to annotate with silver chains."""
    docs = sorted(read_gold(DEMO), key=lambda d: d.name)[skip: skip + n]
    return ["\n".join(" ".join(s) for s in d.sentences) for d in docs]
