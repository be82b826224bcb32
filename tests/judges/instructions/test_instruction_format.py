"""detectable_format:*: IFEval's exact patterns for JSON, titles, sections, highlights, bullets."""

from rlguard.judges.instructions.registry import check_instruction


def test_json_accepts_bare_or_fenced_json():
    for text in ('{"a": [1, 2]}', "  [1, 2]  ", '```\n{"a": 1}\n```', '```JSON\n"x"\n```'):
        assert check_instruction("detectable_format:json_format", text, {}) is None
    reason = check_instruction("detectable_format:json_format", '{"a": 1,}', {})
    assert reason is not None and reason.startswith("not valid JSON")


def test_title_must_be_non_blank_and_on_one_line():
    title = "detectable_format:title"
    assert check_instruction(title, "Poem\n<<Joy>> and more", {}) is None
    assert check_instruction(title, "<<  >>", {}) is not None
    assert check_instruction(title, "<<Joy\nof life>>", {}) is not None


def test_sections_count_case_sensitive_numbered_headers():
    sections = "detectable_format:multiple_sections"
    text = "SECTION 1\nOne.\nSECTION 2\nTwo.\nSECTION 3\nThree."
    assert (
        check_instruction(sections, text, {"section_spliter": "SECTION", "num_sections": 3}) is None
    )
    assert check_instruction(sections, text, {"section_spliter": "Section", "num_sections": 1}) == (
        "0 sections marked 'Section N', needs at least 1"
    )


def test_highlights_count_single_and_double_asterisks_but_not_empty_ones():
    highlights = "detectable_format:number_highlighted_sections"
    assert check_instruction(highlights, "*a* *b* **c**", {"num_highlights": 3}) is None
    assert check_instruction(highlights, "** ** and *\nx*", {"num_highlights": 1}) == (
        "0 highlighted sections, needs at least 1"
    )


def test_bullets_are_star_or_dash_lines_and_exact():
    bullets = "detectable_format:number_bullet_lists"
    text = "Intro:\n* one\n  * two\n- three\n**Bold** line"
    assert check_instruction(bullets, text, {"num_bullets": 3}) is None
    assert (
        check_instruction(bullets, text, {"num_bullets": 4}) == "3 bullet points, needs exactly 4"
    )
    assert (
        check_instruction(bullets, text, {"num_bullets": 2}) == "3 bullet points, needs exactly 2"
    )


def test_constrained_response_may_sit_inside_more_text():
    text = "Let me think. My answer is no."
    assert check_instruction("detectable_format:constrained_response", text, {}) is None
    assert check_instruction("detectable_format:constrained_response", "my answer is no.", {})
