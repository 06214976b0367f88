"""The try-it page at `/`: static HTML, CSS and JavaScript shipped in the package (no build step, nothing
from a CDN). It calls the same public API as any client, with the key the user types in."""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

PAGE_DIR = Path(__file__).resolve().parents[1] / "web"

router = APIRouter(tags=["web"])


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(PAGE_DIR / "index.html")


def page_files() -> StaticFiles:
    """`/web/...`: the page's scripts and styles."""
    return StaticFiles(directory=PAGE_DIR)
