"""Append-only JSONL stores of completions keyed by ``Prompt.key(backend.identity)``.

``Journal`` is one per run (``<out>.run/journal.jsonl``): every completion is appended and
fsync'ed as it arrives, so ``--resume`` after a crash skips finished prompts. A torn last
line (the process died mid-write) is ignored and cut off before the next append.
``PromptCache`` is the same store shared between runs (``$DPTEXT_CACHE/llm-cache.jsonl``):
identical prompt + backend + sampling params (seed included) -> the stored completion.
Records hold prompts built from released objects only, never API keys.
"""

from __future__ import annotations

import json
import os
import threading
import time
import warnings
from pathlib import Path

from dptext.llm.types import Completion, Prompt


class Journal:
    def __init__(self, path: str | Path, store_prompts: bool = True) -> None:
        self.path = Path(path)
        self.store_prompts = store_prompts
        self._lock = threading.Lock()
        self._done: dict[str, Completion] = {}
        self._load()

    def _load(self) -> None:
        if not self.path.exists():
            return
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        good_end = 0
        pos = 0
        for i, line in enumerate(lines):
            end = pos + len(line) + (1 if i < len(lines) - 1 else 0)
            if line.strip():
                try:
                    rec = json.loads(line)
                    self._done[rec["key"]] = Completion.from_dict(rec["completion"])
                    good_end = end
                except (ValueError, KeyError, TypeError):
                    if i < len(lines) - 1 and any(x.strip() for x in lines[i + 1:]):
                        warnings.warn(f"{self.path}: skipping unreadable line {i + 1}",
                                      stacklevel=2)
                        good_end = end
                        continue
                    break  # torn last line
            else:
                good_end = end if i < len(lines) - 1 else good_end
            pos = end
        if good_end < len(raw):  # cut a torn tail so the next record starts cleanly
            with open(self.path, "r+b") as f:
                f.truncate(good_end)
                if good_end and not raw[:good_end].endswith(b"\n"):
                    f.seek(good_end)
                    f.write(b"\n")

    def __len__(self) -> int:
        return len(self._done)

    def __contains__(self, key: str) -> bool:
        return key in self._done

    def get(self, key: str) -> Completion | None:
        return self._done.get(key)

    def put(self, key: str, prompt: Prompt | None, completion: Completion) -> None:
        rec = {"key": key, "time": round(time.time(), 3), "completion": completion.to_dict()}
        if self.store_prompts and prompt is not None:
            rec["prompt"] = prompt.to_dict()
        line = (json.dumps(rec, ensure_ascii=False) + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            self._done[key] = completion


class PromptCache(Journal):
    """A journal shared between runs; does not store prompts (only hashed keys)."""

    def __init__(self, path: str | Path) -> None:
        super().__init__(path, store_prompts=False)

    @classmethod
    def default(cls) -> PromptCache:
        from dptext.llm.models import cache_dir

        return cls(cache_dir() / "llm-cache.jsonl")
