"""The multigrader the fine-tuning tests grade sums with: `right` (the answer is the item's),
`form` (how alike the answer is to "The final answer is N."), the reward mostly the first."""

RIGHT = {
    "type": "string_check",
    "name": "right",
    "input": "{{sample.output_text}}",
    "reference": "is {{item.answer}}.",
    "operation": "like",
}
FORM = {
    "type": "text_similarity",
    "name": "form",
    "input": "{{sample.output_text}}",
    "reference": "The final answer is {{item.answer}}.",
    "evaluation_metric": "fuzzy_match",
}
SUMS_GRADER = {
    "type": "multi",
    "name": "answer",
    "graders": {"right": RIGHT, "form": FORM},
    "calculate_output": "0.8 * right + 0.2 * form",
}
