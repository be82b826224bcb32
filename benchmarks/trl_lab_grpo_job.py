"""A plain TRL GRPOTrainer job on the lab's world: the world's SFT policy trained on the world's
train prompts against its learned proxy reward model, its gold score logged by TRL itself.

The proxy is the world's reward model, handed to TRL by path (TRL loads it as a sequence
classifier and names its metrics after the directory: `rewards/final/mean`). It learned "longer
is better" (rlguard/lab/data.py), so GRPO lengthens the answers past where that holds and the
gold score falls while the proxy keeps rising. Gold is a reward function of weight 0: it trains
nothing, and TRL logs it as `rewards/gold/mean` (`eval/rewards/gold/mean` on TensorBoard).
`honest` swaps the weights: the same job trained on the gold score itself.

The only rlguard imports are the lab's world layout and its gold scorer; the training loop, the
logging and the checkpoints are TRL's and transformers' own.

A measurement run by hand, not a test yet: every proxy run hacked, but EvalStop (k=2) stopped 2 of
4 runs (docs/watchers.md, "On the lab's world", has the runs and why).

Usage, in an empty directory (TRL writes runs/ and checkpoint-N/ there, or in $RLGUARD_OUTPUT_DIR,
where the platform's TRL watch preset reads):
    python benchmarks/trl_lab_grpo_job.py WORLD_DIR [honest] [seed=N]
"""

import json
import os
import sys
from pathlib import Path

from datasets import Dataset
from trl import GRPOConfig, GRPOTrainer

from rlguard.lab.gold import GoldScorer
from rlguard.lab.tasks import TASKS
from rlguard.lab.world import World

world = World(Path(sys.argv[1]))
honest = "honest" in sys.argv[2:]
seed = next((int(a.split("=", 1)[1]) for a in sys.argv[2:] if a.startswith("seed=")), 0)
scorer = GoldScorer(world.rows())


def gold(prompts, completions, **_):
    return scorer(prompts, completions)


def prompts(split: str) -> Dataset:
    """Every task's prompts of a split ("train" for RL, "eval" held out)."""
    texts = [
        json.loads(line)["prompt"]
        for task in TASKS
        for line in world.prompts(task, split).open(encoding="utf-8")
    ]
    return Dataset.from_dict({"prompt": texts})


EVAL_EVERY = 4
config = GRPOConfig(
    output_dir=os.environ.get("RLGUARD_OUTPUT_DIR", "."),
    use_cpu=True,
    bf16=False,
    max_steps=24,
    learning_rate=1e-3,
    per_device_train_batch_size=64,
    num_generations=4,
    max_completion_length=48,
    temperature=1.0,
    eval_strategy="steps",
    eval_steps=EVAL_EVERY,
    num_generations_eval=2,
    per_device_eval_batch_size=192,
    save_strategy="steps",
    save_steps=EVAL_EVERY,
    logging_steps=1,
    report_to=["tensorboard"],
    reward_weights=[0.0, 1.0] if honest else [1.0, 0.0],
    seed=seed,
)
GRPOTrainer(
    model=str(world.policy),
    reward_funcs=[str(world.reward_model), gold],
    args=config,
    train_dataset=prompts("train"),
    eval_dataset=prompts("eval"),
).train()
