"""The dashboard: a static page of the platform's own app that reads its HTTP API.

Static files shipped in the package (`static/`), uPlot (MIT, npm `uplot@1.6.32`) vendored beside
them, so the page works offline and needs no build step. The page signs in with an API key kept
in the tab's sessionStorage and sends it as the API's Bearer header, so it sees exactly what the
key sees (a tenant its own jobs, an admin every job).
"""

from __future__ import annotations

from importlib.resources import files

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

STATIC = files("rlguard.platform") / "static"


def mount_dashboard(app: FastAPI) -> None:
    app.mount("/ui", StaticFiles(directory=str(STATIC)), name="ui")

    @app.get("/", include_in_schema=False)
    def index() -> FileResponse:
        return FileResponse(str(STATIC / "index.html"), headers={"Cache-Control": "no-cache"})
