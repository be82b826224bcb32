"""A plain transformers `Trainer` SFT job for the platform's tests, written without rlguard in
mind: a tiny causal LM (built from a config) trained on two texts, its `output_dir` the job's
`$RLGUARD_OUTPUT_DIR`, an eval and a checkpoint every 4 steps. `overfit`: it is evaluated on two
other texts, so eval_loss falls while it learns what the texts share, then rises as it memorizes
its two; `healthy`: evaluated on the texts it trains on, eval_loss keeps falling."""

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "train")]

import torch  # noqa: E402
from test_hf_callback import Texts  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

from tiny_models import CORPUS, tiny_causal_lm, tiny_tokenizer  # noqa: E402


class Subset(torch.utils.data.Dataset):
    def __init__(self, texts: Texts, rows: list[int]) -> None:
        self.texts, self.rows = texts, rows

    def __len__(self) -> int:
        return len(self.rows)

    def __getitem__(self, i: int):  # type: ignore[no-untyped-def]
        return self.texts[self.rows[i]]


torch.manual_seed(0)
tokenizer = tiny_tokenizer()
texts = Texts(tokenizer, len(CORPUS))
train = Subset(texts, [0, 1])
held_out = Subset(texts, [2, 3]) if sys.argv[1] == "overfit" else train
args = TrainingArguments(
    output_dir=os.environ.get("RLGUARD_OUTPUT_DIR", "output"),
    max_steps=int(sys.argv[2]) if len(sys.argv) > 2 else 120,
    per_device_train_batch_size=2,
    per_device_eval_batch_size=2,
    learning_rate=1e-2,
    eval_strategy="steps",
    eval_steps=4,
    save_strategy="steps",
    save_steps=4,
    save_total_limit=None,
    logging_steps=4,
    report_to=[],
    use_cpu=True,
    seed=0,
)
Trainer(
    model=tiny_causal_lm(tokenizer), args=args, train_dataset=train, eval_dataset=held_out
).train()
