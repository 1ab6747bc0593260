"""Plain data passed to and from LLM backends: chat prompts and completions.

Nothing here may hold private corpus data: prompts are built from released objects
(DP keyphrase sequences, the document type, public few-shot examples) only.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Literal

Role = Literal["system", "user", "assistant"]


@dataclass(frozen=True)
class Message:
    role: Role
    content: str


@dataclass(frozen=True)
class SamplingParams:
    """Sampling parameters sent with a prompt. ``seed`` makes local sampling repeatable and
    distinguishes otherwise identical prompts (two equal keyphrase sequences).

    Repetition control (``None`` = not sent, the server's default applies):
    ``repetition_penalty`` is the multiplicative penalty on recently used tokens (llama.cpp's
    ``repeat_penalty``, vLLM's and Hugging Face's ``repetition_penalty``; 1.05 is what
    Qwen2.5's own generation config uses); ``dry_multiplier`` turns on llama.cpp's DRY
    sampler, which penalises tokens that would extend a sequence already seen in the text
    (the loops of small models) and leaves single repeated words alone;
    ``frequency_penalty`` / ``presence_penalty`` are the OpenAI-standard additive penalties.
    Backends send what their API supports (see ``dptext.llm.openai.build_request``).
    """

    max_tokens: int = 400
    temperature: float = 0.8
    top_p: float = 0.95
    seed: int | None = None
    stop: tuple[str, ...] = ()
    repetition_penalty: float | None = 1.05
    dry_multiplier: float | None = 0.8
    frequency_penalty: float | None = None
    presence_penalty: float | None = None


@dataclass(frozen=True)
class Prompt:
    """A chat prompt: messages plus sampling parameters."""

    messages: tuple[Message, ...]
    params: SamplingParams = field(default_factory=SamplingParams)

    @classmethod
    def user(cls, text: str, system: str | None = None,
             params: SamplingParams | None = None) -> Prompt:
        msgs = ((Message("system", system),) if system else ()) + (Message("user", text),)
        return cls(msgs, params or SamplingParams())

    def to_dict(self) -> dict:
        return {"messages": [asdict(m) for m in self.messages], "params": asdict(self.params)}

    @classmethod
    def from_dict(cls, d: dict) -> Prompt:
        p = dict(d.get("params", {}))
        p["stop"] = tuple(p.get("stop", ()))
        return cls(tuple(Message(m["role"], m["content"]) for m in d["messages"]),
                   SamplingParams(**p))

    @property
    def system(self) -> str | None:
        parts = [m.content for m in self.messages if m.role == "system"]
        return "\n\n".join(parts) if parts else None

    @property
    def chat(self) -> list[dict]:
        """The non-system messages as ``[{"role", "content"}]`` (Anthropic/Bedrock style)."""
        return [{"role": m.role, "content": m.content} for m in self.messages
                if m.role != "system"]

    def text(self) -> str:
        """All message contents joined (for checks such as the privacy canary test)."""
        return "\n".join(m.content for m in self.messages)

    def key(self, backend_id: str) -> str:
        """Stable hash of prompt + backend identity + params: the journal/cache key."""
        blob = json.dumps({"backend": backend_id, **self.to_dict()}, sort_keys=True,
                          ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None = None  # "stop", "length", ...
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> Completion:
        return cls(d["text"], d.get("finish_reason"), d.get("prompt_tokens"),
                   d.get("completion_tokens"))
