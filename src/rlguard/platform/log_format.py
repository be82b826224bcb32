"""The server's own log lines: text for a terminal, or one JSON object per line for a log
pipeline (Loki, Elasticsearch, Cloud Logging), where the job and the run a line is about are
fields (`job_id`, `run_id`) an operator filters on, not words inside the message."""

from __future__ import annotations

import logging
from typing import Any

FORMATS = ("text", "json")
TEXT = "%(asctime)s %(name)s %(message)s"
JSON_FIELDS = "%(asctime)s %(levelname)s %(name)s %(message)s"


def configure_logging(log_format: str) -> None:
    """The root logger's one handler, on stderr, at INFO."""
    handler = logging.StreamHandler()
    if log_format == "json":  # imported here: a node's actors log as text, to Ray
        from pythonjsonlogger.json import JsonFormatter

        renamed = {"asctime": "time", "levelname": "level", "name": "logger"}
        handler.setFormatter(JsonFormatter(JSON_FIELDS, rename_fields=renamed))
    else:
        handler.setFormatter(logging.Formatter(TEXT))
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request a standby forwards


def about(job_id: str | None = None, run_id: str | None = None) -> dict[str, Any]:
    """`extra=` for a log call about a job or a run: its ids as fields of a JSON line."""
    ids = {"job_id": job_id, "run_id": run_id}
    return {key: value for key, value in ids.items() if value is not None}
