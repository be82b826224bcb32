"""IFEval instruction ids -> checkers, and the call that validates kwargs before checking.

Every checker takes the response and its kwargs (keyword-only, named as in IFEval) and returns
None when the instruction holds or a short reason when it does not. These are all 25 ids of
IFEval's registry (lm-eval's `instructions_registry.INSTRUCTION_DICT`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from rlguard.judges.instructions import (
    change_case,
    combination,
    detectable_content,
    detectable_format,
    keywords,
    language,
    length_constraints,
    punctuation,
    startend,
)
from rlguard.judges.instructions.args import BadKwargs, clean

Checker = Callable[..., str | None]

CHECKERS: dict[str, Checker] = {
    "change_case:capital_word_frequency": change_case.capital_word_frequency,
    "change_case:english_capital": change_case.english_capital,
    "change_case:english_lowercase": change_case.english_lowercase,
    "combination:repeat_prompt": combination.repeat_prompt,
    "combination:two_responses": combination.two_responses,
    "detectable_content:number_placeholders": detectable_content.number_placeholders,
    "detectable_content:postscript": detectable_content.postscript,
    "detectable_format:constrained_response": detectable_format.constrained_response,
    "detectable_format:json_format": detectable_format.json_format,
    "detectable_format:multiple_sections": detectable_format.multiple_sections,
    "detectable_format:number_bullet_lists": detectable_format.number_bullet_lists,
    "detectable_format:number_highlighted_sections": detectable_format.number_highlighted_sections,
    "detectable_format:title": detectable_format.title,
    "keywords:existence": keywords.existence,
    "keywords:forbidden_words": keywords.forbidden_words,
    "keywords:frequency": keywords.frequency,
    "keywords:letter_frequency": keywords.letter_frequency,
    "language:response_language": language.response_language,
    "length_constraints:nth_paragraph_first_word": length_constraints.nth_paragraph_first_word,
    "length_constraints:number_paragraphs": length_constraints.number_paragraphs,
    "length_constraints:number_sentences": length_constraints.number_sentences,
    "length_constraints:number_words": length_constraints.number_words,
    "punctuation:no_comma": punctuation.no_comma,
    "startend:end_checker": startend.end_checker,
    "startend:quotation": startend.quotation,
}

_SIGNATURES = {iid: inspect.signature(checker) for iid, checker in CHECKERS.items()}


class UnknownInstruction(LookupError):
    """An instruction id this judge cannot check (a -1 verdict, not a violation)."""


def check_instruction(
    instruction_id: str, response: str, kwargs: Mapping[str, Any] | None
) -> str | None:
    """None if `response` follows the instruction, else why not.

    A blank response follows no instruction, as in IFEval's evaluation. Raises UnknownInstruction
    for an id without a checker and BadKwargs for kwargs that are missing, unexpected (once None
    values are dropped) or malformed; both name the id.
    """
    checker = CHECKERS.get(instruction_id)
    if checker is None:
        raise UnknownInstruction(f"unknown instruction id {instruction_id!r}")
    try:
        args = clean(kwargs)
        _SIGNATURES[instruction_id].bind(response, **args)
    except (BadKwargs, TypeError) as exc:
        raise BadKwargs(f"{instruction_id}: bad kwargs: {exc}") from None
    try:
        reason = checker(response, **args)
    except BadKwargs as exc:
        raise BadKwargs(f"{instruction_id}: bad kwargs: {exc}") from None
    return "empty response" if not response.strip() else reason
