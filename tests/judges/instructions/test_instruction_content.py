"""detectable_content:*, startend:* and combination:*."""

from hypothesis import given
from hypothesis import strategies as st

from rlguard.judges.instructions.registry import check_instruction


def test_placeholders_are_bracketed_spans_on_one_line():
    placeholders = "detectable_content:number_placeholders"
    assert check_instruction(placeholders, "[a] [] [b c]", {"num_placeholders": 3}) is None
    assert check_instruction(placeholders, "[a\nb]", {"num_placeholders": 1}) == (
        "0 [placeholders], needs at least 1"
    )


def postscript(text, marker):
    return check_instruction("detectable_content:postscript", text, {"postscript_marker": marker})


def test_postscript_markers():
    assert postscript("Body.\np. s. see you", "P.S.") is None
    assert postscript("Body.\nP.P.S. more", "P.P.S") is None
    assert postscript("Body.\nP.S. only", "P.P.S") == "no postscript starting with 'P.P.S'"
    assert postscript("Body.\nNote: thanks", " Note: ") is None
    assert postscript("Body.\nNote thanks", "Note:") == "no postscript starting with 'Note:'"


def test_end_checker_ignores_outer_whitespace_quotes_and_case():
    kwargs = {"end_phrase": "Is there anything else I can help with?"}
    text = '"Sure.\nIS THERE ANYTHING ELSE I CAN HELP WITH?"\n'
    assert check_instruction("startend:end_checker", text, kwargs) is None


@given(st.text(max_size=40))
def test_any_text_in_double_quotes_is_quoted(text):
    assert check_instruction("startend:quotation", f' \n"{text}" ', {}) is None


def test_quotation_needs_two_quote_marks():
    assert check_instruction("startend:quotation", '"', {}) is not None
    assert check_instruction("startend:quotation", "'single'", {}) is not None


def test_repeat_prompt_is_case_insensitive_prefix():
    kwargs = {"prompt_to_repeat": "  Write a poem about rain. "}
    assert (
        check_instruction("combination:repeat_prompt", "write a poem about rain. Drops", kwargs)
        is None
    )
    assert check_instruction("combination:repeat_prompt", "Write a poem about snow.", kwargs)


def two(text):
    return check_instruction("combination:two_responses", text, {})


def test_two_responses():
    assert two("******\nFirst.\n******\nSecond.\n******") is None
    assert two("Only one.") == "1 responses separated by ******, needs exactly 2"
    assert two("A\n******\nB\n******\nC") == "3 responses separated by ******, needs exactly 2"
    assert two("A\n******\n \n******\nB") == "an empty response between ****** separators"
    assert two(" A \n******\nA") == "the two responses are identical"
