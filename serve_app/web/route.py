"""The try-it page at `/`: static HTML, CSS and JavaScript shipped in the package (no build step, nothing
from a CDN), its scripts and styles at `/web/...`. It calls the same public API as any client, with the key the
user types in. No key is needed for the page itself: it asks for one and sends it with its own requests."""

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

PAGE_DIR = Path(__file__).resolve().parent / "static"

router = APIRouter(tags=["web"])


@router.get("/", include_in_schema=False)
async def page() -> FileResponse:
    return FileResponse(PAGE_DIR / "index.html")


router.mount("/web", StaticFiles(directory=PAGE_DIR), name="web")  # the page's scripts and styles
