"""CGPO's LLM classifier judges (false refusal, factuality, safety) on a local or remote model.

Names load on first use: an endpoint-backed judge does not import torch (only `HFBackend` does).
"""

from rlguard._lazy import lazy_exports

_EXPORTS = {
    "TEMPLATES": "rlguard.judges.llm.templates",
    "ClassifierBackend": "rlguard.judges.llm.backend",
    "EndpointError": "rlguard.judges.llm.openai_backend",
    "HFBackend": "rlguard.judges.llm.hf_backend",
    "JudgeTemplate": "rlguard.judges.llm.templates",
    "LLMJudge": "rlguard.judges.llm.judge",
    "OpenAIBackend": "rlguard.judges.llm.openai_backend",
}

__all__ = sorted(_EXPORTS)

__getattr__ = lazy_exports(__name__, _EXPORTS)
