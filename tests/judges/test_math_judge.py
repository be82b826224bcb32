import threading

import pytest

from rlguard.judges.math import MathJudge, final_answer


@pytest.mark.parametrize(
    ("completion", "answer", "verdict"),
    [
        ("3 + 2 is 5. The final answer is 5.", "5", 1),
        ("The final answer is $\\frac{1}{2}$.", "0.5", 1),
        ("The final answer is 0.5", "\\frac{1}{2}", 1),
        ("The final answer is x^2+1.", "1+x^2", 1),
        ("The final answer is \\{1,2\\}", "\\{2,1\\}", 1),
        ("the final answer is 7", "7", 1),
        ("The final answer is 6.", "5", 0),
        ("I think it is 5.", "5", 0),  # wrong format is a violation even with the right number
        ("The final answer is 4. No wait. The final answer is 5.", "5", 1),  # the last one counts
        ("The final answer is", "5", 0),
        ("The final answer is therefore $x \\geq 5$.", "x \\ge 5", 1),  # prose around its math
        ("The final answer is 12 345", "12345", 1),  # digit groups, as LaTeX renders them
        ("The final answer is 1 000", "0", 0),  # not 1*000
        ("The final answer is 2, 3", "\\{3, 2\\}", 1),  # a list, not the decimal 2.3
    ],
)
def test_verdicts(completion, answer, verdict):
    assert MathJudge().judge(["q"], [completion], [{"answer": answer}]) == [verdict]


def test_missing_answer_is_a_judge_failure():
    [v] = MathJudge().evaluate(["q"], ["The final answer is 5"], [{}])
    assert v.value == -1 and "answer" in v.reason


def test_numeric_reference_answers_work():
    assert MathJudge().judge(["q"], ["The final answer is 12"], [{"answer": 12}]) == [1]


def test_final_answer_extraction():
    assert final_answer("blah. The final answer is 42.") == "42"
    assert final_answer("no statement") is None


def test_works_off_the_main_thread():
    out = []
    thread = threading.Thread(
        target=lambda: out.append(
            MathJudge().judge(["q"], ["The final answer is 5"], [{"answer": "5"}])
        )
    )
    thread.start()
    thread.join()
    assert out == [[1]]
