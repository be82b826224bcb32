"""OpenAI's graders (`string_check`, `text_similarity`, `python`, `multi`; `score_model`
recognized and refused) as rlguard runs them: the same JSON a user sends to OpenAI's
`/v1/fine_tuning/alpha/graders/run` and `/validate`, scored here on the server (the python
grader inside the judges' sandbox). `parse.parse_grader` turns a request's grader into one of
these models; its `grade(sample, item)` gives the reward a reinforcement job would get."""
