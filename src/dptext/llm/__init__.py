"""dptext.llm: LLM backends, prompts, journal/cache and the runner.

This layer receives only released objects (DP keyphrase sequences, the document type and
public few-shot examples). It must never import ``dptext.corpus``, ``dptext.generators``
or anything else that holds private text; ``tests/test_llm_boundary.py`` checks it.
"""

from dptext.llm.base import LLMBackend, available_schemes, make_backend, register_backend
from dptext.llm.checked import CheckedText, DocumentOptions, complete_checked, reseeding
from dptext.llm.documents import SyntheticDocument, generate_documents
from dptext.llm.errors import BackendSpecError, LLMError, RetryableLLMError, TemplateError
from dptext.llm.journal import Journal, PromptCache
from dptext.llm.prompts import (
                                FewShotExample,
                                PromptBuilder,
                                PromptTemplate,
                                clean_completion,
                                keyphrase_coverage,
                                load_few_shot,
)
from dptext.llm.runner import RetryPolicy, RunStats, run_prompts
from dptext.llm.types import Completion, Message, Prompt, SamplingParams

__all__ = [
    "BackendSpecError", "CheckedText", "Completion", "DocumentOptions", "FewShotExample",
    "Journal", "LLMBackend", "LLMError", "Message", "Prompt", "PromptBuilder", "PromptCache",
    "PromptTemplate", "RetryPolicy", "RetryableLLMError", "RunStats", "SamplingParams",
    "SyntheticDocument", "TemplateError", "available_schemes", "clean_completion",
    "complete_checked", "generate_documents", "keyphrase_coverage", "load_few_shot",
    "make_backend", "register_backend", "reseeding", "run_prompts",
]
