"""The try-it page at `/`, in headless Chromium (Debian's package, driven by Playwright): a real clip is
uploaded as a job, the transcript appears with speaker labels, a timestamp seeks the player, a download
is a valid subtitle file, and a wrong key shows the server's `detail`. A screenshot lands in the test's
temporary directory."""

import shutil
from pathlib import Path

import pytest
import srt

from deployments.files.decoding import decode_audio
from devkit.media import encode, pyannote_sample
from tests.conftest import Service

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian package chromium)")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # this machine has no internet: no update or sync calls
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def playwright():
    """One Playwright for the module: its sync API runs an event loop of its own, and a second one started
    while the first is open refuses to start."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as started:
        yield started


@pytest.fixture(scope="module")
def browser(playwright):
    launched = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
    yield launched
    launched.close()


def test_upload_shows_speakers_seeks_and_downloads(service: Service, browser, tmp_path: Path) -> None:
    page = browser.new_page(accept_downloads=True)
    page.goto(service.base_url + "/")
    page.fill("#api-key", "test-key-2")
    page.set_input_files("#file", str(pyannote_sample()))
    page.check("#diarize")
    page.click("#transcribe")
    page.wait_for_selector(".segment", timeout=120_000)
    page.screenshot(path=str(tmp_path / "page.png"), full_page=True)
    print(f"screenshot: {tmp_path / 'page.png'}")

    transcript = page.inner_text("#transcript").lower()
    assert "know you were there" in transcript
    labels = set(page.locator(".speaker").all_inner_texts())
    assert labels == {"speaker_0", "speaker_1"}
    assert page.evaluate("sessionStorage.getItem('stt-api-key')") == "test-key-2"

    last = page.locator(".time").last
    start = float(last.get_attribute("data-start"))
    page.wait_for_function("document.getElementById('player').readyState >= 1")
    last.click()
    assert page.evaluate("document.getElementById('player').currentTime") == pytest.approx(start, abs=0.5)

    page.select_option("#format", "srt")
    with page.expect_download() as downloading:
        page.click("#download")
    cues = list(srt.parse(Path(downloading.value.path()).read_text()))
    assert len(cues) == page.locator(".segment").count() and cues[0].content.startswith("[speaker_")


def test_a_wrong_key_shows_the_servers_detail(service: Service, browser) -> None:
    page = browser.new_page()
    page.goto(service.base_url + "/")
    page.fill("#api-key", "sk-wrong")
    page.fill("#url", "https://example.com/a.mp3")
    page.click("#transcribe")
    page.wait_for_function("document.getElementById('status').className === 'error'", timeout=30_000)
    assert "credentials were not provided or are invalid" in page.inner_text("#status")


def test_live_mode_shows_words_from_the_microphone(service: Service, playwright, tmp_path: Path) -> None:
    """Chromium's fake microphone plays a real clip (looped); the page streams it over the realtime
    WebSocket, with the key as its subprotocol, and shows the words as they arrive."""
    clip = tmp_path / "hello.wav"
    samples = decode_audio(pyannote_sample()).samples
    clip.write_bytes(encode(samples[6 * 16_000 : 13 * 16_000], "wav"))
    microphone = [
        "--use-fake-ui-for-media-stream",
        "--use-fake-device-for-media-stream",
        f"--use-file-for-fake-audio-capture={clip}",
        "--autoplay-policy=no-user-gesture-required",
    ]
    browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS + microphone)
    try:
        page = browser.new_page()
        page.goto(service.base_url + "/")
        page.fill("#api-key", "test-key-2")
        page.click("#live")
        page.wait_for_function(
            "document.getElementById('transcript').innerText.toLowerCase().includes('there')", timeout=60_000
        )
        page.click("#live")  # stop: the rest is flushed and the session ends
        page.wait_for_function("document.getElementById('status').innerText.startsWith('Done')", timeout=30_000)
        page.screenshot(path=str(tmp_path / "live.png"), full_page=True)
        heard = page.inner_text("#transcript").lower()
        status = page.inner_text("#status")
    finally:
        browser.close()
    assert "know you were there" in heard, heard
    assert status.startswith("Done") and "error" not in status.lower()
