"""CGPO's LLM classifier judges (false refusal, factuality, safety) on a local or remote model."""

from rlguard.judges.llm.backend import ClassifierBackend
from rlguard.judges.llm.hf_backend import HFBackend
from rlguard.judges.llm.judge import LLMJudge
from rlguard.judges.llm.openai_backend import EndpointError, OpenAIBackend
from rlguard.judges.llm.templates import TEMPLATES, JudgeTemplate

__all__ = [
    "TEMPLATES",
    "ClassifierBackend",
    "EndpointError",
    "HFBackend",
    "JudgeTemplate",
    "LLMJudge",
    "OpenAIBackend",
]
