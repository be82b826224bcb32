"""Synthetic RLHF prompts and response lengths with the structure the runtime's policies rely on.

- Long tail: log-lengths are normal (a lognormal), spread so that a set fraction of samples would
  run past the response cap, where they are cut (verl logs this as response_length/clip_ratio).
  Optionally, samples also run away to the cap at random, independently of their prompt.
- Within-prompt correlation: a share of the log-length variance belongs to the prompt (its
  latent), the rest to each sample, so the K samples of a prompt have correlated lengths.
- Persistence: a prompt keeps its latent across epochs but it drifts a little each epoch, so a
  per-prompt EWMA has something (imperfect) to learn.

Randomness is keyed by (seed, purpose, epoch, step), so a step's lengths do not depend on what was
simulated before it. Defaults and their sources are in docs/runtime.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

DRIFT, LENGTHS, ORDER, PROMPTS = 1, 2, 3, 4  # rng stream ids


class LengthModel(BaseModel):
    """A GSM8K-like workload under the paper testbed's caps (prompts <= 1024, responses <= 2048)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dataset_prompts: int = Field(7473, ge=1, description="GSM8K train split size")
    prefix_tokens: int = Field(30, ge=0, description="system prompt shared by every prompt")
    prompt_median: float = Field(90.0, gt=0, description="median prompt tokens after the prefix")
    prompt_sigma: float = Field(0.35, ge=0)
    max_prompt: int = Field(1024, ge=1)
    response_median: float = Field(280.0, gt=0)
    capped_fraction: float = Field(0.005, gt=0, lt=0.5, description="samples past the cap")
    response_sigma: float | None = Field(
        None, gt=0, description="sd of log-length; None: the one that makes capped_fraction"
    )
    prompt_share: float = Field(0.6, ge=0, le=1, description="share of log-length variance")
    runaway_p: float = Field(0.0, ge=0, le=1, description="a sample runs to the cap at random")
    drift_sigma: float = Field(0.1, ge=0, description="per-epoch random walk of a prompt's latent")
    max_response: int = Field(2048, ge=1)

    def log_sigma(self) -> float:
        """Total sd of log-length: `response_sigma`, or the one with P(length > max_response) =
        capped_fraction."""
        if self.response_sigma is not None:
            return self.response_sigma
        z = NormalDist().inv_cdf(1 - self.capped_fraction)
        return max(0.0, math.log(self.max_response / self.response_median)) / z


@dataclass(frozen=True)
class TokenBatch:
    """One step's prompt groups: keys for the predictor, token counts, K lengths per group."""

    keys: list[str]
    prompt_tokens: np.ndarray  # (groups,) tokens after the shared prefix
    prefix_tokens: int
    lengths: np.ndarray  # (groups, K) response tokens

    @property
    def k(self) -> int:
        return int(self.lengths.shape[1])

    def mean_prompt_tokens(self) -> float:
        """Prompt tokens a sequence starts with, shared prefix included."""
        return float(self.prompt_tokens.mean()) + self.prefix_tokens

    def group_tokens(self) -> np.ndarray:
        """(groups,) prompt plus response tokens of each group's K samples: what scoring and
        training process."""
        return (self.prompt_tokens + self.prefix_tokens) * self.k + self.lengths.sum(axis=1)

    def sequence_tokens(self) -> int:
        """Prompt plus response tokens over all samples."""
        return int(self.group_tokens().sum())


class PromptPool:
    """The dataset of one seed: fixed prompt lengths and latents, drifting epoch by epoch."""

    def __init__(self, model: LengthModel, seed: int) -> None:
        self.model = model
        self.seed = seed
        rng = np.random.default_rng([seed, PROMPTS])
        n = model.dataset_prompts
        longest = max(1, model.max_prompt - model.prefix_tokens)
        raw = model.prompt_median * np.exp(model.prompt_sigma * rng.standard_normal(n))
        self.prompt_tokens = np.clip(np.rint(raw), 1, longest).astype(int)
        between = model.log_sigma() * math.sqrt(model.prompt_share)
        self.latent = np.log(model.response_median) + between * rng.standard_normal(n)
        self._drift = [np.zeros(n)]

    def latent_at(self, epoch: int) -> np.ndarray:
        while len(self._drift) <= epoch:
            e = len(self._drift)
            step = np.random.default_rng([self.seed, DRIFT, e]).standard_normal(len(self.latent))
            self._drift.append(self._drift[-1] + self.model.drift_sigma * step)
        return self.latent + self._drift[epoch]

    def steps_per_epoch(self, prompts_per_step: int) -> int:
        """Whole batches per epoch (the last partial batch is dropped, as data loaders do)."""
        return max(1, self.model.dataset_prompts // prompts_per_step)

    def batch(self, epoch: int, step: int, prompts_per_step: int, k: int) -> TokenBatch:
        """Step `step` of epoch `epoch`: a slice of the epoch's shuffled order, K samples each."""
        m = self.model
        order = np.random.default_rng([self.seed, ORDER, epoch]).permutation(m.dataset_prompts)
        start = (step * prompts_per_step) % m.dataset_prompts
        ids = np.take(order, np.arange(start, start + prompts_per_step), mode="wrap")
        rng = np.random.default_rng([self.seed, LENGTHS, epoch, step])
        mu = self.latent_at(epoch)[ids][:, None]
        within = m.log_sigma() * math.sqrt(1 - m.prompt_share)
        noise = within * rng.standard_normal((len(ids), k))
        lengths = np.exp(mu + noise)
        lengths[rng.random((len(ids), k)) < m.runaway_p] = m.max_response
        lengths = np.clip(np.rint(lengths), 1, m.max_response).astype(int)
        return TokenBatch([str(i) for i in ids], self.prompt_tokens[ids], m.prefix_tokens, lengths)
