"""One hand-checked satisfied and one violated response for every supported IFEval id."""

import pytest

from rlguard.judges.instructions import CHECKERS
from rlguard.judges.instructions.registry import check_instruction

# (id, kwargs, a satisfying response, a violating response, the violation's reason)
CASES = [
    (
        "change_case:capital_word_frequency",
        {"capital_frequency": 2, "capital_relation": "at least"},
        "THE quick BROWN fox",
        "THE quick brown fox",
        "1 all-capital words, needs at least 2",
    ),
    (
        "change_case:english_capital",
        {},
        "THE QUICK BROWN FOX JUMPS OVER THE LAZY DOG.",
        "THE QUICK BROWN FOX JUMPS OVER THE LAZY Dog.",
        "has lowercase letters",
    ),
    (
        "change_case:english_lowercase",
        {},
        "hello, world 42!",
        "hello, World",
        "has capital letters",
    ),
    (
        "combination:repeat_prompt",
        {"prompt_to_repeat": "Write a haiku."},
        "Write a haiku. Moon over water",
        "Sure! Write a haiku.",
        "does not start by repeating the request word for word",
    ),
    (
        "combination:two_responses",
        {},
        "Yes.\n******\nNo.",
        "Yes.\n******\nYes.",
        "the two responses are identical",
    ),
    (
        "detectable_content:number_placeholders",
        {"num_placeholders": 2},
        "Dear [name], see you at [place].",
        "Dear [name], see you soon.",
        "1 [placeholders], needs at least 2",
    ),
    (
        "detectable_content:postscript",
        {"postscript_marker": "P.S."},
        "Thanks!\nP.S. Bring snacks.",
        "Thanks! Bring snacks.",
        "no postscript starting with 'P.S.'",
    ),
    (
        "detectable_format:constrained_response",
        {},
        "My answer is maybe.",
        "Maybe.",
        "contains none of 'My answer is yes.', 'My answer is no.', 'My answer is maybe.'",
    ),
    (
        "detectable_format:json_format",
        {},
        '```json\n{"a": 1}\n```',
        'Here you go: {"a": 1}',
        "not valid JSON (Expecting value: line 1 column 1 (char 0))",
    ),
    (
        "detectable_format:multiple_sections",
        {"section_spliter": "Section", "num_sections": 2},
        "Section 1\nIntro.\nSection 2\nBody.",
        "Section 1\nIntro and body.",
        "1 sections marked 'Section N', needs at least 2",
    ),
    (
        "detectable_format:number_bullet_lists",
        {"num_bullets": 2},
        "* one\n- two",
        "* one\n* two\n* three",
        "3 bullet points, needs exactly 2",
    ),
    (
        "detectable_format:number_highlighted_sections",
        {"num_highlights": 2},
        "*one* and **two**",
        "*one* and two",
        "1 highlighted sections, needs at least 2",
    ),
    (
        "detectable_format:title",
        {},
        "<<Ode to Joy>>\nJoy!",
        "Ode to Joy\nJoy!",
        "no title in <<double angular brackets>>",
    ),
    (
        "keywords:existence",
        {"keywords": ["cat", "dog"]},
        "A Cat met a DOG.",
        "A cat met a mouse.",
        "missing keyword 'dog'",
    ),
    (
        "keywords:forbidden_words",
        {"forbidden_words": ["bad"]},
        "Badly done, but fine.",
        "That is Bad.",
        "contains forbidden word 'bad'",
    ),
    (
        "keywords:frequency",
        {"keyword": "rain", "frequency": 2, "relation": "at least"},
        "Rain, rain, go away.",
        "Rain, go away.",
        "'rain' appears 1 times, needs at least 2",
    ),
    (
        "language:response_language",
        {"language": "fr"},
        "Le renard brun saute par-dessus le chien paresseux.",
        "The quick brown fox jumps over the lazy dog.",
        "detected language 'en', needs 'fr'",
    ),
    (
        "keywords:letter_frequency",
        {"letter": "a", "let_frequency": 3, "let_relation": "less than"},
        "A cat.",
        "Banana",
        "letter 'a' appears 3 times, needs less than 3",
    ),
    (
        "length_constraints:nth_paragraph_first_word",
        {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "Then"},
        "First we cook.\n\nThen, we eat.",
        "First we cook.\n\nWe eat.",
        "paragraph 2 starts with 'we', needs 'then'",
    ),
    (
        "length_constraints:number_paragraphs",
        {"num_paragraphs": 2},
        "One.\n***\nTwo.",
        "One.\n***\nTwo.\n***\nThree.",
        "3 paragraphs separated by ***, needs exactly 2",
    ),
    (
        "length_constraints:number_sentences",
        {"num_sentences": 2, "relation": "less than"},
        "Only one sentence here.",
        "One. Two.",
        "2 sentences, needs less than 2",
    ),
    (
        "length_constraints:number_words",
        {"num_words": 3, "relation": "at least"},
        "one two three",
        "one two",
        "2 words, needs at least 3",
    ),
    ("punctuation:no_comma", {}, "No commas here.", "Yes, one.", "contains 1 comma(s)"),
    (
        "startend:end_checker",
        {"end_phrase": "Any other questions?"},
        "Done. any other questions?",
        "Any other questions? Bye.",
        "does not end with 'Any other questions?'",
    ),
    (
        "startend:quotation",
        {},
        '"All quoted."',
        '"Half quoted.',
        "not wrapped in double quotation marks",
    ),
]


def test_every_supported_id_has_cases():
    assert {case[0] for case in CASES} == set(CHECKERS)
    assert len(CHECKERS) == 25


@pytest.mark.parametrize(("instruction_id", "kwargs", "good", "bad", "reason"), CASES)
def test_satisfied_and_violated(instruction_id, kwargs, good, bad, reason):
    assert check_instruction(instruction_id, good, kwargs) is None
    assert check_instruction(instruction_id, bad, kwargs) == reason
