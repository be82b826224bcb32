"""`rlguard judge FILE.jsonl`: one verdict row per input row, in order; pass rates on stderr."""

from __future__ import annotations

import json

from cli_runner import cli

ROWS = [
    {"prompt": "What is 2+3?", "completion": "The final answer is 5.", "metadata": {"answer": "5"}},
    {"prompt": "What is 2+2?", "completion": "The final answer is 5.", "metadata": {"answer": "4"}},
    {
        "prompt": "Describe the sea in lowercase.",
        "completion": "the sea is calm",
        "metadata": {"instruction_id_list": ["change_case:english_lowercase"], "kwargs": [{}]},
    },
    {"prompt": "No metadata at all.", "completion": "The final answer is 1."},
]


def write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_verdict_rows_in_order_with_reasons(tmp_path, monkeypatch, capsys):
    data = write(tmp_path / "in.jsonl", ROWS)
    out = tmp_path / "verdicts.jsonl"
    code, stdout, stderr = cli(
        monkeypatch, capsys, "judge", str(data), "--judges", "math", "--out", str(out)
    )
    assert code == 0 and stdout == ""
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["verdict"] for r in rows] == [1, 0, -1, -1]  # rows 3, 4 lack an answer: -1
    assert "differs" in rows[1]["judges"]["math"]["reason"]
    assert "all judges: 1/4 passed" in stderr
    assert "math: pass 25.0%, judge failures 50.0%" in stderr


def test_mixture_of_two_judges_to_stdout(tmp_path, monkeypatch, capsys):
    data = write(tmp_path / "in.jsonl", ROWS[2:3])
    code, stdout, _ = cli(monkeypatch, capsys, "judge", str(data), "--judges", "instructions")
    assert code == 0
    [row] = [json.loads(line) for line in stdout.splitlines()]
    assert row == {
        "verdict": 1,
        "judges": {
            "instructions": {"verdict": 1, "reason": row["judges"]["instructions"]["reason"]}
        },
    }


def test_bad_rows_name_the_line_and_field(tmp_path, monkeypatch, capsys):
    data = tmp_path / "bad.jsonl"
    data.write_text(
        json.dumps(ROWS[0]) + "\n" + json.dumps({"prompt": "p", "completion": 3}) + "\n"
    )
    out = tmp_path / "verdicts.jsonl"
    code, _, stderr = cli(monkeypatch, capsys, "judge", str(data), "--out", str(out))
    assert code == 2
    assert stderr.strip() == f"error: {data}:2: field 'completion' must be a str, got 3"
    assert not out.exists()


def test_bad_json_unknown_judge_and_llm_without_model(tmp_path, monkeypatch, capsys):
    data = tmp_path / "broken.jsonl"
    data.write_text("{not json\n")
    code, _, stderr = cli(monkeypatch, capsys, "judge", str(data))
    assert code == 2 and stderr.startswith(f"error: {data}:1: not valid JSON")
    good = write(tmp_path / "in.jsonl", ROWS[:1])
    code, _, stderr = cli(monkeypatch, capsys, "judge", str(good), "--judges", "math,poetry")
    assert code == 2 and "unknown judge 'poetry'" in stderr and len(stderr.splitlines()) == 1
    code, _, stderr = cli(monkeypatch, capsys, "judge", str(good), "--judges", "safety")
    assert code == 2 and "needs exactly one of model or endpoint" in stderr
    code, _, stderr = cli(monkeypatch, capsys, "judge", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no such file" in stderr


def test_a_missing_judge_model_is_one_line(tmp_path, monkeypatch, capsys):
    good = write(tmp_path / "in.jsonl", ROWS[:1])
    missing = tmp_path / "no-model"
    code, _, stderr = cli(
        monkeypatch, capsys, "judge", str(good), "--judges", "safety", "--judge-model", str(missing)
    )
    assert code == 2
    assert stderr == f"error: judge 'safety': model: no such directory {missing}\n"
