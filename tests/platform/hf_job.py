"""A command job for the platform's tests: a real HF Trainer on a tiny model, watched by
`EvalStopCallback` in platform mode (the platform decides; the callback posts each eval).

The eval metric is scripted (0.2, 0.4, 0.6, 0.5, 0.4, 0.3, ...) as in tests/train/test_hf_callback.
"""

import os
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(TESTS), str(TESTS / "train")]  # tiny_models and the HF callback's test

from test_hf_callback import HUMP, Script, Texts  # noqa: E402
from test_hf_callback import args as hf_args  # noqa: E402
from transformers import Trainer  # noqa: E402

from rlguard.platform.client import PlatformRule  # noqa: E402
from rlguard.train.callbacks import EvalStopCallback  # noqa: E402
from tiny_models import tiny_causal_lm, tiny_tokenizer  # noqa: E402

out = os.environ["RLGUARD_OUTPUT_DIR"]
tokenizer = tiny_tokenizer()
callback = EvalStopCallback("eval_score", rule=PlatformRule.from_env())
args = hf_args(Path(out), save_strategy="no", save_total_limit=None)
Trainer(
    model=tiny_causal_lm(tokenizer),
    args=args,
    train_dataset=Texts(tokenizer, 8),
    eval_dataset=Texts(tokenizer, 2),
    compute_metrics=Script("score", HUMP),
    callbacks=[callback],
).train()
print(f"stopped={callback.stopped} reason={callback.reason} best_step={callback.best_step}")
