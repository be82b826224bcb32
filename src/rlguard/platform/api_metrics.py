"""GET /metrics: the platform in Prometheus's text format, for an operator's scraper.

Admin keys only (`create_app` includes this router behind the admin scope): the series name
every tenant. Prometheus sends the key as a Bearer token (`authorization.credentials` in its
scrape config; docs/platform.md shows one).
"""

from __future__ import annotations

from fastapi import APIRouter, Request, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

router = APIRouter()


@router.get("/metrics", include_in_schema=False)
def metrics(request: Request) -> Response:
    return Response(generate_latest(request.app.state.metrics), media_type=CONTENT_TYPE_LATEST)
