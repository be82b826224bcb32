"""Length presets for the RLHFless paper's three workloads at its caps (prompts <= 1024 tokens,
responses <= 2048), each with its source or its stated assumption.

GSM8K is measured: the Qwen2.5 runs of runtime/data/verl_steps.csv (prompt and response means of
the 7B run, steps 2-9) and the clip ratio of the 1024 x 5 Qwen2-7B run (its steps 2-9 clip
0.0-0.2%, mean 0.075%); the runaways that reach the 1024 cap are assumed to reach 2048 too
(repetition loops do not stop). GPQA and LiveCodeBench have no public measured RL step we could
find: their numbers are assumptions, longer than GSM8K as multi-step science and code answers
are, and the grid reports them as such. Datasets smaller than a step's batch (GPQA 448 questions,
LiveCodeBench about 880 problems) are drawn with replacement, as verl's sampler cycles.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from rlguard.runtime.calib.lengths import workload_from_stats
from rlguard.runtime.sim.workload import LengthModel

MAX_PROMPT, MAX_RESPONSE = 1024, 2048


@dataclass(frozen=True)
class WorkloadStats:
    name: str
    prompt_length_mean: float
    response_length_mean: float
    response_clip_ratio: float
    dataset_prompts: int
    source: str

    def length_model(self, samples: int) -> LengthModel:
        """The simulator's workload for a step of `samples` responses at the paper's caps."""
        return workload_from_stats(
            self.response_length_mean,
            MAX_RESPONSE,
            self.response_clip_ratio,
            None,
            samples,
            self.prompt_length_mean,
            MAX_PROMPT,
            self.dataset_prompts,
        )

    def describe(self) -> dict[str, object]:
        return {**asdict(self), "max_prompt": MAX_PROMPT, "max_response": MAX_RESPONSE}


WORKLOADS = {
    w.name: w
    for w in (
        WorkloadStats(
            "gsm8k",
            prompt_length_mean=104.0,
            response_length_mean=248.0,
            response_clip_ratio=0.00075,
            dataset_prompts=7473,
            source="measured: verl_steps.csv (Qwen2.5-7B LoRA run means; qwen2-7b-fsdp2 clip)",
        ),
        WorkloadStats(
            "gpqa",
            prompt_length_mean=250.0,
            response_length_mean=600.0,
            response_clip_ratio=0.02,
            dataset_prompts=448,
            source="assumption: no measured RL step found",
        ),
        WorkloadStats(
            "livecodebench",
            prompt_length_mean=450.0,
            response_length_mean=800.0,
            response_clip_ratio=0.05,
            dataset_prompts=880,
            source="assumption: no measured RL step found",
        ),
    )
}
