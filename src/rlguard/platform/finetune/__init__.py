"""OpenAI's fine-tuning API over the platform: files, fine-tuning jobs, checkpoints, models and
graders in OpenAI's shapes, so code written against the `openai` SDK runs here with only its
`base_url` and `api_key` changed. A thin layer: the same tenants, keys, store and jobs as
`/v1/jobs` (docs/platform.md, "Coming from OpenAI fine-tuning")."""
