"""Generated IFEval cases at the boundaries where a re-implementation drifts from the reference.

Responses: a fixed corpus of boundary texts (case, tokenization, punctuation, many languages,
JSON, markdown structure, blank lines, trailing whitespace) and a hypothesis strategy that glues
tricky tokens together. Kwargs: for each id, valid kwargs for a response, with counts placed just
below, at and above what the reference itself counts in that response.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from hypothesis import strategies as st

import ifeval_reference as reference
from rlguard.judges.instructions.language import LANGUAGES

SENTENCES = {
    "en": "The quick brown fox jumps over the lazy dog and runs away into the forest.",
    "fr": "Le renard brun rapide saute par-dessus le chien paresseux et court dans la forêt.",
    "de": "Der schnelle braune Fuchs springt über den faulen Hund und läuft in den Wald.",
    "es": "El rápido zorro marrón salta sobre el perro perezoso y corre hacia el bosque.",
    "ru": "Быстрая коричневая лиса прыгает через ленивую собаку и убегает в лес.",
    "ja": "素早い茶色の狐がのろまな犬を飛び越えて森へ走り去った。",
    "zh": "敏捷的棕色狐狸跳过了懒狗，跑进了森林。",
    "hi": "तेज़ भूरी लोमड़ी आलसी कुत्ते के ऊपर कूदती है और जंगल में भाग जाती है।",
    "ar": "الثعلب البني السريع يقفز فوق الكلب الكسول ويهرب إلى الغابة.",
    "ko": "빠른 갈색 여우가 게으른 개를 뛰어넘어 숲으로 달아난다.",
    "fi": "Nopea ruskea kettu hyppää laiskan koiran yli ja juoksee metsään.",
    "el": "Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο.",
}
# The codes of SENTENCES that IFEval may ask for (langdetect calls Chinese zh-cn, Greek is not one).
SENTENCE_LANGUAGES = sorted(LANGUAGES & SENTENCES.keys())
LANGUAGE_RESPONSES = [
    *SENTENCES.values(),
    *(s.upper() for s in SENTENCES.values()),
    *(s.lower() for s in SENTENCES.values()),
    SENTENCES["en"] + " " + SENTENCES["fr"],
    "HELLO, WORLD 42!",
    "ALL CAPS, 100%!",
    "OK",
    "ok",
    "12345 !!! ...",
]
STRUCTURE_RESPONSES = [
    "",
    "   \n\t ",
    "Use AND/OR, not U.S.A. or WELL-KNOWN. DON'T panic; I'm FINE. NASA-LIKE e.g. THE END.",
    "Mr. Smith met Dr. Jones. They talked. 1. First. 2. Second... Really?! Yes.",
    'He said "Stop." Then he left. The U.S. Army and J. R. Tolkien agree. Pi is 3.14.',
    "Fruit, e.g. apples, i.e. food. Yes",
    "A heading\nand a line without a stop\n\nThen a second paragraph.\n\n\n\nAnd a third.",
    "\n\nThen we start.\n\nThe middle.\n\n**Then** the end.\n\n",
    "'Then,' she said.\n\n\"The\" cat.\n\nthen: go",
    '{"a": [1, 2], "b": null}',
    '```json\n{"a": 1}\n```',
    '```JSON\n"x"\n```  ',
    '```json```{"a": 1}```',
    "```\n[1, 2,]\n```",
    'Here: {"a": 1}',
    "NaN",
    "<<Ode to Joy>>\nJoy!",
    "<<  >> and <<Two\nlines>>",
    "*one* and **two** and ** ** and *\nx*",
    "* one\n  * two\n- three\n**Bold** line\n-four",
    "SECTION 1\nOne.\nSECTION 2\nTwo.\nSection 3 Three. Section4",
    "One.\n***\nTwo.\n***\n\n***\nThree.",
    "***\nOne.\n***\nTwo.\n***",
    "Dear [name], see you at [place] on [ day ].\n[a\nb]",
    "Thanks!\nP.S. Bring snacks.\np. p. s. more\nPS: ok\nNote this",
    "Thanks! Bring snacks. P.S.",
    "My answer is yes.",
    "Let me think. my answer is no. My answer is maybe.",
    '"All quoted."',
    '"',
    '  "Half quoted.',
    "Write a haiku. Moon over water",
    "  write a HAIKU. moon",
    "Yes.\n******\nNo.",
    "Yes.\n******\nYes.",
    "******\nA\n******\n\n******\nB",
    "A\n*******\nB",
    "Done. Any other questions? ",
    'Done. "Any other questions?"\n',
    "The cat sat. The catalog. THE CAT! the theory, thecat",
    "Banana bandana, aAaA, zebra.",
    "no commas here",
    "one, two",
    "Rain, rain, go away; rain again",
    "Eggs, eXgX, e-g, pushed and f(x) = fx. Sect1on 2",  # keywords and markers are regexes
]
RESPONSES = STRUCTURE_RESPONSES + LANGUAGE_RESPONSES

TOKENS = [
    *("the", "The", "THE", "AND/OR", "U.S.A.", "e.g.", "Dr.", "Mr.", "DON'T", "don't", "I", "a"),
    *("WELL-KNOWN", "NASA", "3.14", "1.", "...", "?!", '"Quoted."', "(x)", "[x]", "[", "]", "*"),
    *("**", "***", "******", "-", "<<", ">>", "<<Title>>", "P.S.", "p.s.", "P.P.S", "PS:", "Note"),
    *("Section", "SECTION", "1", "2", "```", "```json", "{", "}", "[1]", ":", "cat", "catalog"),
    *("rain", "then", "Then", "**Then**", ",", ".", "!", "?", '"', "'", "ΟΔΟΣ", "İstanbul"),
    *("straße", "日本語", "तेज़", "My answer is yes.", "Any other questions?"),
    *SENTENCES.values(),
]
SEPARATORS = ["", " ", "  ", "\n", "\n\n", "\n\n\n\n", ", ", "\t"]
RELATIONS = ("less than", "at least")


def responses() -> st.SearchStrategy[str]:
    """Tricky tokens glued by separators, or a corpus response with tokens around it."""
    piece = st.tuples(st.sampled_from(TOKENS), st.sampled_from(SEPARATORS)).map("".join)
    soup = st.lists(piece, max_size=25).map("".join)
    return st.one_of(soup, st.tuples(soup, st.sampled_from(RESPONSES), soup).map("".join))


def around(n: int) -> list[int]:
    """Counts just below, at and above n, all at least 1 (IFEval draws a random count below 1)."""
    return sorted({max(1, n - 1), max(1, n), n + 1})


def _relation_grid(count: int, relation_key: str, bound_key: str) -> Iterator[dict[str, Any]]:
    for relation in RELATIONS:
        for bound in around(count):
            yield {relation_key: relation, bound_key: bound}


def _keyword_frequency(response: str) -> Iterator[dict[str, Any]]:
    for keyword in ("the", "cat", " rain ", "e.g.", "AND"):
        found = len(re.findall(keyword.strip(), response, flags=re.IGNORECASE))
        for kwargs in _relation_grid(found, "relation", "frequency"):
            yield {"keyword": keyword, **kwargs}


def _letter_frequency(response: str) -> Iterator[dict[str, Any]]:
    for letter in ("a", "e", "t", "Z"):
        found = response.lower().count(letter.lower())
        for kwargs in _relation_grid(found, "let_relation", "let_frequency"):
            yield {"letter": letter, **kwargs}


def _nth_paragraph(response: str) -> Iterator[dict[str, Any]]:
    for num in (1, 2, 3, 4):
        for nth in range(1, num + 1):
            for word in ("then", "the", "a", "**then**", "first", " then"):
                yield {"num_paragraphs": num, "nth_paragraph": nth, "first_word": word}


# id -> the kwargs to try on a response (a response-dependent grid around the reference's counts)
GRIDS: dict[str, Callable[[str], Iterator[dict[str, Any]]]] = {
    "change_case:capital_word_frequency": lambda r: _relation_grid(
        reference.capital_word_count(r), "capital_relation", "capital_frequency"
    ),
    "combination:repeat_prompt": lambda r: (
        {"prompt_to_repeat": p} for p in ("Write a haiku.", " write a HAIKU. ", "the", "Yes.")
    ),
    "detectable_content:number_placeholders": lambda r: (
        {"num_placeholders": n} for n in around(len(re.findall(r"\[.*?\]", r)))
    ),
    "detectable_content:postscript": lambda r: (
        {"postscript_marker": m} for m in ("P.S.", "P.P.S", "PS:", "Note", " P.S. ", "p.s")
    ),
    "detectable_format:multiple_sections": lambda r: (
        {"section_spliter": s, "num_sections": n}
        for s in ("Section", "SECTION", " Section ", "Sect.on")
        for n in (1, 2, 3, 4)
    ),
    "detectable_format:number_bullet_lists": lambda r: ({"num_bullets": n} for n in range(1, 6)),
    "detectable_format:number_highlighted_sections": lambda r: (
        {"num_highlights": n} for n in range(1, 5)
    ),
    "keywords:existence": lambda r: (
        {"keywords": k} for k in (["cat"], ["the", "rain"], ["e.g."], ["AND/OR"], ["Then "])
    ),
    "keywords:forbidden_words": lambda r: (
        {"forbidden_words": k} for k in (["cat"], ["the", "rain"], ["and"], ["or"], ["e.g"])
    ),
    "keywords:frequency": _keyword_frequency,
    "keywords:letter_frequency": _letter_frequency,
    "language:response_language": lambda r: (
        {"language": code}
        for code in (SENTENCE_LANGUAGES if r in LANGUAGE_RESPONSES else ("en", "de"))
    ),
    "length_constraints:nth_paragraph_first_word": _nth_paragraph,
    "length_constraints:number_paragraphs": lambda r: ({"num_paragraphs": n} for n in range(1, 5)),
    "length_constraints:number_sentences": lambda r: _relation_grid(
        reference.count_sentences(r), "relation", "num_sentences"
    ),
    "length_constraints:number_words": lambda r: _relation_grid(
        reference.count_words(r), "relation", "num_words"
    ),
    "startend:end_checker": lambda r: (
        {"end_phrase": p}
        for p in ("Any other questions?", "any other questions? ", "Yes.", '?"', "forest.")
    ),
}


def kwargs_grid(instruction_id: str, response: str) -> Iterator[dict[str, Any]]:
    """The kwargs to try for `instruction_id` on `response` ({} for an id without kwargs)."""
    if instruction_id not in GRIDS:
        return iter([{}])
    return GRIDS[instruction_id](response)


def grid(instruction_id: str) -> list[tuple[dict[str, Any], str]]:
    """Every (kwargs, response) pair the deterministic grid tries for `instruction_id`."""
    return [(k, response) for response in RESPONSES for k in kwargs_grid(instruction_id, response)]


@st.composite
def cases(draw: st.DrawFn, instruction_id: str) -> tuple[dict[str, Any], str]:
    """A generated response and, from its grid, kwargs for `instruction_id`."""
    response = draw(responses())
    return draw(st.sampled_from(list(kwargs_grid(instruction_id, response)))), response
