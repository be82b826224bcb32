"""Task prompts from JSONL, a saved HF `datasets` directory or a parquet file, and the one-line
errors a bad source gives."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import datasets
import pytest

from rlguard.errors import InputError
from rlguard.train.prompts import Prompts, load_prompts

IFEVAL_ROWS = [
    {
        "key": 1000,
        "prompt": "Write a haiku in lowercase.",
        "instruction_id_list": ["change_case:english_lowercase"],
        "kwargs": [{}],
    },
    {
        "key": 1001,
        "prompt": "Answer without commas.",
        "instruction_id_list": ["punctuation:no_comma", "length_constraints:number_words"],
        "kwargs": [{}, {"relation": "at least", "num_words": 5}],
    },
]
MATH_ROWS = [
    {"prompt": "What is 1 + 1? ", "answer": "2", "reference": "The final answer is 2."},
    {"prompt": "What is 2 + 2? ", "answer": "4", "reference": None},
]


@pytest.fixture(autouse=True)
def datasets_cache(monkeypatch, tmp_path):
    """`load_dataset` caches what it reads; keep that out of the home directory."""
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path / "hf-cache")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def load(source: Path, split: str = "train") -> Prompts:
    return load_prompts(str(source), split, "tasks.0.prompts")


def error(source: Path, split: str = "train") -> str:
    with pytest.raises(InputError) as info:
        load(source, split)
    message = str(info.value)
    assert "\n" not in message
    return message


# --- sources -------------------------------------------------------------------------------------


def test_jsonl_with_a_metadata_object(tmp_path) -> None:
    rows = [
        {"prompt": "What is 1 + 1? ", "metadata": {"answer": "2"}, "reference": "It is 2."},
        {"prompt": "What is 0 + 2? ", "metadata": {"answer": "2"}, "source": "ignored"},
    ]
    prompts = load(write_jsonl(tmp_path / "math.jsonl", rows))
    assert len(prompts) == 2
    assert prompts.texts == ["What is 1 + 1? ", "What is 0 + 2? "]
    # a metadata object is the metadata: other columns are not merged in
    assert prompts.metadata == [{"answer": "2"}, {"answer": "2"}]
    assert prompts.references == ["It is 2.", None]


def test_jsonl_extra_columns_become_metadata(tmp_path) -> None:
    prompts = load(write_jsonl(tmp_path / "ifeval.jsonl", IFEVAL_ROWS))
    assert prompts.texts == [r["prompt"] for r in IFEVAL_ROWS]
    assert prompts.metadata == [
        {k: v for k, v in row.items() if k != "prompt"} for row in IFEVAL_ROWS
    ]
    assert prompts.metadata[1]["kwargs"][1] == {"relation": "at least", "num_words": 5}
    assert prompts.references == [None, None]


def test_jsonl_reference_is_kept_out_of_metadata(tmp_path) -> None:
    prompts = load(write_jsonl(tmp_path / "math.jsonl", MATH_ROWS))
    assert prompts.references == ["The final answer is 2.", None]
    assert prompts.metadata == [{"answer": "2"}, {"answer": "4"}]


def test_take_keeps_texts_metadata_and_references_aligned(tmp_path) -> None:
    prompts = load(write_jsonl(tmp_path / "math.jsonl", MATH_ROWS)).take([1, 0, 1])
    assert prompts.texts == ["What is 2 + 2? ", "What is 1 + 1? ", "What is 2 + 2? "]
    assert [m["answer"] for m in prompts.metadata] == ["4", "2", "4"]
    assert prompts.references == [None, "The final answer is 2.", None]


def test_saved_dataset_directory(tmp_path) -> None:
    datasets.Dataset.from_list(MATH_ROWS).save_to_disk(tmp_path / "math")
    prompts = load(tmp_path / "math")
    assert prompts.texts == [r["prompt"] for r in MATH_ROWS]
    assert prompts.metadata == [{"answer": "2"}, {"answer": "4"}]
    assert prompts.references == ["The final answer is 2.", None]


def test_saved_dataset_dict_picks_the_split(tmp_path) -> None:
    splits = datasets.DatasetDict(
        train=datasets.Dataset.from_list(MATH_ROWS),
        test=datasets.Dataset.from_list([{"prompt": "What is 3 + 0? ", "answer": "3"}]),
    )
    splits.save_to_disk(tmp_path / "math")
    assert load(tmp_path / "math", "train").texts == [r["prompt"] for r in MATH_ROWS]
    test = load(tmp_path / "math", "test")
    assert test.texts == ["What is 3 + 0? "]
    assert test.metadata == [{"answer": "3"}]
    message = error(tmp_path / "math", "validation")
    assert str(tmp_path / "math") in message and "'validation'" in message
    assert "train" in message and "test" in message


def test_parquet_file(tmp_path) -> None:
    path = tmp_path / "ifeval.parquet"
    datasets.Dataset.from_list(IFEVAL_ROWS).to_parquet(str(path))
    prompts = load(path)
    assert prompts.texts == [r["prompt"] for r in IFEVAL_ROWS]
    assert [m["instruction_id_list"] for m in prompts.metadata] == [
        r["instruction_id_list"] for r in IFEVAL_ROWS
    ]
    assert [m["key"] for m in prompts.metadata] == [1000, 1001]
    assert prompts.references == [None, None]


# --- errors --------------------------------------------------------------------------------------


def test_missing_file_names_the_field_and_the_path(tmp_path) -> None:
    message = error(tmp_path / "nowhere.jsonl")
    assert "tasks.0.prompts" in message and str(tmp_path / "nowhere.jsonl") in message


@pytest.mark.parametrize("text", ["", "\n\n  \n"], ids=["empty", "blank-lines"])
def test_jsonl_without_rows(tmp_path, text) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text(text)
    message = error(path)
    assert str(path) in message and "no prompts" in message


def empty_dataset() -> datasets.Dataset:
    features = datasets.Features(prompt=datasets.Value("string"))
    return datasets.Dataset.from_dict({"prompt": []}, features=features)


def test_saved_dataset_without_rows_names_the_directory(tmp_path) -> None:
    empty_dataset().save_to_disk(tmp_path / "empty")
    assert str(tmp_path / "empty") in error(tmp_path / "empty")


def test_parquet_without_rows_names_the_file(tmp_path) -> None:
    path = tmp_path / "empty.parquet"
    empty_dataset().to_parquet(str(path))
    assert str(path) in error(path)


@pytest.mark.parametrize(
    ("bad", "expect"),
    [
        pytest.param({"question": "What?"}, "'prompt' is missing", id="missing"),
        pytest.param({"prompt": 7}, "'prompt' must be a str", id="not-a-string"),
        pytest.param({"prompt": "p", "reference": 3}, "'reference' must be a str", id="reference"),
    ],
)
def test_jsonl_bad_row_names_file_and_line(tmp_path, bad, expect) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [{"prompt": "fine"}, bad])
    message = error(path)
    assert f"{path}:2" in message and expect in message, message


def test_dataset_without_prompt_column_names_file_and_columns(tmp_path) -> None:
    path = tmp_path / "questions.parquet"
    datasets.Dataset.from_list([{"question": "What?", "answer": "1"}]).to_parquet(str(path))
    message = error(path)
    assert str(path) in message and "'prompt'" in message and "question" in message


def test_dataset_with_a_null_prompt_names_the_row(tmp_path) -> None:
    rows = [{"prompt": "fine"}, {"prompt": None}]
    datasets.Dataset.from_list(rows).save_to_disk(tmp_path / "nulls")
    message = error(tmp_path / "nulls")
    assert str(tmp_path / "nulls") in message and "row 1" in message and "'prompt'" in message


def test_unknown_format_and_non_dataset_directory(tmp_path) -> None:
    path = tmp_path / "prompts.txt"
    path.write_text("What is 1 + 1?\n")
    assert "tasks.0.prompts" in error(path)
    (tmp_path / "plain").mkdir()
    assert str(tmp_path / "plain") in error(tmp_path / "plain")
