"""InstructionJudge over IFEval rows: strict AND, first failing id, -1 for unusable metadata."""

import math

import pytest

from rlguard.judges.base import FAILED, SATISFIED, VIOLATED
from rlguard.judges.instructions import InstructionJudge

# Every kwarg key of google/IFEval; its rows carry all of them, None where unused.
IFEVAL_KEYS = [
    "num_highlights",
    "relation",
    "num_words",
    "num_placeholders",
    "prompt_to_repeat",
    "num_paragraphs",
    "nth_paragraph",
    "first_word",
    "postscript_marker",
    "forbidden_words",
    "keywords",
    "num_sentences",
    "num_bullets",
    "section_spliter",
    "num_sections",
    "capital_relation",
    "capital_frequency",
    "end_phrase",
    "keyword",
    "frequency",
    "let_relation",
    "letter",
    "let_frequency",
    "language",
]


def ifeval_kwargs(**used):
    return {key: used.get(key) for key in IFEVAL_KEYS}


def verdict(completion, ids, kwargs):
    metadata = {"instruction_id_list": ids, "kwargs": kwargs}
    return InstructionJudge().evaluate(["prompt"], [completion], [metadata])[0]


def test_name():
    assert InstructionJudge.name == "instructions"


def test_ifeval_row_with_none_valued_kwargs():
    ids = ["punctuation:no_comma", "length_constraints:number_words", "detectable_format:title"]
    kwargs = [
        ifeval_kwargs(),
        ifeval_kwargs(relation="less than", num_words=100),
        ifeval_kwargs(),
    ]
    result = verdict("<<Rain>>\nDrops fall softly.", ids, kwargs)
    assert result.value == SATISFIED
    assert result.reason == "all 3 instructions hold"


def test_nan_valued_kwargs_from_pandas_are_ignored():
    kwargs = [{"num_words": 5.0, "relation": "at least", "keyword": math.nan}]
    assert (
        verdict("one two three four five", ["length_constraints:number_words"], kwargs).value == 1
    )


def test_strict_and_names_the_first_failing_instruction():
    ids = ["punctuation:no_comma", "length_constraints:number_words", "detectable_format:title"]
    kwargs = [{}, {"relation": "less than", "num_words": 100}, {}]
    long = " ".join(["word"] * 134)
    result = verdict(long, ids, kwargs)
    assert result.value == VIOLATED
    assert result.reason == "length_constraints:number_words: 134 words, needs less than 100"
    assert verdict("<<T>> ok", ids, kwargs).value == SATISFIED
    assert verdict("<<T>> a, b", ids, kwargs).reason == "punctuation:no_comma: contains 1 comma(s)"


def test_no_instructions_is_satisfied():
    assert verdict("anything", [], []).value == SATISFIED


def test_unknown_id_fails_even_after_a_violation():
    result = verdict("a, b", ["punctuation:no_comma", "made_up:thing"], [{}, {}])
    assert result == verdict("x", ["made_up:thing"], [{}])
    assert result.value == FAILED
    assert result.reason == "unknown instruction id 'made_up:thing'"


def test_response_language_is_checked():
    ids, kwargs = ["language:response_language"], [ifeval_kwargs(language="fr")]
    assert verdict("Bonjour, comment allez-vous aujourd'hui ?", ids, kwargs).value == SATISFIED
    assert verdict("Hello, how are you doing today?", ids, kwargs).value == VIOLATED


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"relation": "at most", "num_words": 3}, "relation must be"),
        ({"relation": "less than", "num_words": "3"}, "num_words must be an integer"),
        ({"relation": "less than"}, "missing a required argument: 'num_words'"),
        ({"relation": "less than", "num_words": 3, "keyword": "x"}, "unexpected keyword"),
    ],
)
def test_bad_kwargs_fail_naming_the_id(kwargs, message):
    result = verdict("one two", ["length_constraints:number_words"], [kwargs])
    assert result.value == FAILED
    assert result.reason.startswith("length_constraints:number_words: bad kwargs:")
    assert message in result.reason


@pytest.mark.parametrize(
    "metadata",
    [
        {},
        {"instruction_id_list": ["punctuation:no_comma"]},
        {"kwargs": [{}]},
        {"instruction_id_list": None, "kwargs": [{}]},
        {"instruction_id_list": "punctuation:no_comma", "kwargs": [{}]},
        {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}, {}]},
        {"instruction_id_list": ["punctuation:no_comma"], "kwargs": {}},
        {"instruction_id_list": ["punctuation:no_comma"], "kwargs": ["num_words"]},
    ],
)
def test_missing_or_malformed_metadata_fails(metadata):
    assert InstructionJudge().judge(["p"], ["no comma"], [metadata]) == [FAILED]


def test_judge_batch_in_order():
    metadata = {"instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    assert InstructionJudge().judge(["p"] * 3, ["ok", "a, b", "fine"], [metadata] * 3) == [1, 0, 1]
