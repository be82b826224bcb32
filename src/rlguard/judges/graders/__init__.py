"""OpenAI's graders (`string_check`, `text_similarity`, `python`, `score_model`, `multi`) as
rlguard's judges run them: the same JSON a user sends to OpenAI's
`/v1/fine_tuning/alpha/graders/run`, scored by the API (platform/finetune/grader_routes.py) and,
as a reinforcement job's reward, inside the job (the python grader in the judges' sandbox, a
score_model grader on a local model).
`parse.parse_grader` turns a grader's JSON into one of these models; its `grade(sample, item)`
is the reward of one sample."""
