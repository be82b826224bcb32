"""Policy, frozen reference and tokenizer from any HF causal LM (a local path or a config).

With LoRA the reference is the same base model with its adapters disabled, so a LoRA run holds
one copy of the weights; without LoRA the reference is a separate frozen model.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import (
    AutoConfig,
    AutoModelForCausalLM,
    AutoTokenizer,
    PreTrainedModel,
    PreTrainedTokenizerBase,
)

from rlguard.errors import InputError
from rlguard.train.config import LoraSpec, ModelSpec

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def _local(path: str, where: str) -> str:
    """Models load from local paths only (offline); a missing one is a config error."""
    if not Path(path).exists():
        raise InputError(f"{where}: no such directory {path}")
    return path


def load_tokenizer(spec: ModelSpec, where: str = "policy") -> PreTrainedTokenizerBase:
    field = "tokenizer" if spec.tokenizer else "path"
    tokenizer = AutoTokenizer.from_pretrained(
        _local(spec.tokenizer or spec.path, f"{where}.{field}")  # type: ignore[arg-type]
    )
    tokenizer.padding_side = "left"  # generation continues from the right edge of every prompt
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_causal_lm(
    spec: ModelSpec, tokenizer: PreTrainedTokenizerBase, where: str = "policy"
) -> PreTrainedModel:
    dtype = DTYPES[spec.dtype]
    if spec.path is not None:
        return AutoModelForCausalLM.from_pretrained(_local(spec.path, f"{where}.path"), dtype=dtype)
    config = AutoConfig.for_model(
        **{
            "vocab_size": len(tokenizer),
            "pad_token_id": tokenizer.pad_token_id,
            "eos_token_id": tokenizer.eos_token_id,
            "bos_token_id": tokenizer.bos_token_id,
            **(spec.config or {}),
        }
    )
    return AutoModelForCausalLM.from_config(config, dtype=dtype)


def add_lora(model: PreTrainedModel, spec: LoraSpec) -> PeftModel:
    config = LoraConfig(
        r=spec.r,
        lora_alpha=spec.alpha,
        lora_dropout=spec.dropout,
        target_modules=spec.target_modules,
        task_type="CAUSAL_LM",
    )
    return get_peft_model(model, config)


def checkpoint_activations(model: PreTrainedModel) -> None:
    """HF's gradient checkpointing: each layer's activations are recomputed in backward instead
    of kept. Non-reentrant, so it works under LoRA without making the inputs require grad."""
    # transformers 5 renamed it; 4.x has only the old name
    enable = getattr(model, "activation_checkpointing_enable", None)
    (enable or model.gradient_checkpointing_enable)({"use_reentrant": False})


def innermost(model: PreTrainedModel) -> PreTrainedModel:
    """The HF model doing the work under a LoRA wrapper (its forward serves `generate` too)."""
    return model.get_base_model() if isinstance(model, PeftModel) else model


def freeze(model: PreTrainedModel) -> PreTrainedModel:
    model.eval()
    model.requires_grad_(False)
    return model


class Reference:
    """The frozen reference policy: a model, or the LoRA policy with its adapters switched off."""

    def __init__(self, model: PreTrainedModel | None, policy: PreTrainedModel) -> None:
        if model is None and not isinstance(policy, PeftModel):
            raise ValueError("a reference model is needed unless the policy uses LoRA")
        self.model = model if model is not None else policy
        self._adapters_off = model is None

    def context(self) -> AbstractContextManager:
        return self.model.disable_adapter() if self._adapters_off else nullcontext()
