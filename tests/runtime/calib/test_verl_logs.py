"""verl's console lines and JSONL records become per-step fields; bad files fail in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rlguard.errors import InputError
from rlguard.runtime.calib.verl_logs import read_verl_log

CONSOLE = (
    "(TaskRunner pid=2664304) step:{step} - global_seqlen/min:1.0 - actor/pg_loss:np.float64(0.01)"
    " - response_length/mean:{mean} - response_length/max:1024.0"
    " - response_length/clip_ratio:np.float64(0.0012) - prompt_length/mean:104.5"
    " - timing_s/gen:{gen} - timing_s/old_log_prob:12.25 - timing_s/ref:11.5"
    " - timing_s/update_actor:40.125 - timing_s/step:{total}"
)


def test_console_lines_with_ray_prefixes_and_numpy_reprs(tmp_path: Path) -> None:
    log = tmp_path / "run.log"
    noise = "Training Progress:  1%|          | 1/105 [03:02<5:16:30, 182.60s/it]\n{'a': 1}\n"
    lines = [CONSOLE.format(step=s, mean=230.5 + s, gen=60.0 + s, total=130.0) for s in (1, 2)]
    log.write_text(noise + "\n".join(lines) + "\n")
    steps = read_verl_log(log)
    assert list(steps) == [1, 2]
    assert steps[2] == {
        "response_length_mean": 232.5,
        "response_length_max": 1024.0,
        "response_clip_ratio": 0.0012,
        "prompt_length_mean": 104.5,
        "gen_s": 62.0,
        "old_log_prob_s": 12.25,
        "ref_s": 11.5,
        "update_actor_s": 40.125,
        "step_s": 130.0,
    }


def test_ray_colour_codes_and_ppos_critic_timers(tmp_path: Path) -> None:
    """Ray colours the worker prefix when it prints to a terminal (play-verl's PPO logs)."""
    log = tmp_path / "ppo.log"
    line = (
        "\x1b[36m(TaskRunner pid=3147479)\x1b[0m step:2 - global_seqlen/min:177669.000"
        " - timing_s/gen:27.187 - timing_s/values:27.357 - timing_s/update_critic:99.165"
        " - timing_s/update_actor:32.880 - perf/mfu/actor:0.265"
    )
    log.write_text(line + "\n")
    assert read_verl_log(log) == {
        2: {
            "gen_s": 27.187,
            "values_s": 27.357,
            "update_critic_s": 99.165,
            "update_actor_s": 32.88,
            "mfu_actor": 0.265,
        }
    }


def test_jsonl_records_and_old_timing_names(tmp_path: Path) -> None:
    log = tmp_path / "metrics.jsonl"
    records = [
        {"step": 3, "data": {"timing/gen": 10.5, "timing/update_actor": 7, "critic/x": 1}},
        {"step": 3, "data": {"timing_s/gen": 11.5}},  # a resumed run logs the step again
        {"step": 4, "timing_s/step": 20.0},
    ]
    log.write_text("\n".join(json.dumps(r) for r in records))
    assert read_verl_log(log) == {3: {"gen_s": 11.5}, 4: {"step_s": 20.0}}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nothing to see\n", "no verl step metrics found"),
        ("step:2 - timing_s/gen:fast - timing_s/step:3\n", "metric 'timing_s/gen' is not a number"),
    ],
)
def test_bad_logs_name_the_file(tmp_path: Path, text: str, message: str) -> None:
    log = tmp_path / "bad.log"
    log.write_text(text)
    with pytest.raises(InputError, match=message) as e:
        read_verl_log(log)
    assert str(log) in str(e.value)


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read"):
        read_verl_log(tmp_path / "absent.log")
