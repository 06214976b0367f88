"""AssemblyAI's API in process, over fakes: the translation of its requests (refused fields, models, uploads,
webhooks), the rendering of transcripts and exports as its SDK's models parse them, listing, deleting, LeMUR and
the error shape (the real service and SDK: test_assemblyai_service.py)."""

import asyncio
import json
import time

import assemblyai as aai
import httpx
import pytest

from deployments.callbacks.store import CallbackState
from deployments.types import Analysis, AnalysisOptions
from serve_app.assemblyai.uploads import Uploads
from serve_app.assemblyai.webhooks import webhook
from serve_app.common.auth import INVALID_CREDENTIALS
from tests.fakes import Remote
from tests.inprocess import KEY, PRICED_KEY, call

AUDIO = b"RIFF fake audio bytes"
LEMUR = "/lemur/v3/generate/task"


def aai_call(inprocess, method: str, path: str, key: str = KEY, **kwargs) -> httpx.Response:
    """A request as the SDK sends it: the key alone in Authorization."""
    request = inprocess.client.request(method, path, headers={"Authorization": key}, **kwargs)
    return inprocess.loop.run_until_complete(request)


def upload(inprocess, data: bytes = AUDIO, key: str = KEY) -> str:
    answer = aai_call(inprocess, "POST", "/v2/upload", key=key, content=data)
    assert answer.status_code == 200, answer.text
    url: str = answer.json()["upload_url"]
    return url


def submit(inprocess, key: str = KEY, **fields: object) -> dict:
    answer = aai_call(inprocess, "POST", "/v2/transcript", key=key, json=fields)
    assert answer.status_code == 200, answer.text
    body: dict = answer.json()
    return body


def finished(inprocess, transcript_id: str, key: str = KEY) -> dict:
    for _ in range(100):
        inprocess.loop.run_until_complete(asyncio.sleep(0.2))  # the key's 10 requests a second
        body: dict = aai_call(inprocess, "GET", f"/v2/transcript/{transcript_id}", key=key).json()
        if body["status"] in ("completed", "error"):
            return body
    raise AssertionError("the transcript never ended")


def test_an_upload_is_transcribed_in_milliseconds_as_the_sdk_parses_it(inprocess) -> None:
    url = upload(inprocess)
    assert url.startswith("http://test/v2/upload/")
    created = submit(inprocess, audio_url=url, speech_model="best", punctuate=True)
    assert created["status"] == "queued" and created["audio_url"] == url
    done = finished(inprocess, created["id"])
    transcript = aai.types.TranscriptResponse.parse_obj(done)
    assert transcript.status == aai.TranscriptStatus.completed and transcript.text == "Hello there."
    assert [(w.text, w.start, w.end) for w in transcript.words or []] == [("Hello", 0, 1000), ("there.", 1200, 2500)]
    assert transcript.audio_duration == 3 and transcript.speech_model == aai.SpeechModel.best
    assert transcript.language_code == "en_us" and transcript.confidence == pytest.approx(0.9)
    assert transcript.utterances is None and done["speech_model_used"] == "whisper-1"
    request = inprocess.pipeline.requests[-1]
    assert request.options.language == "en" and request.options.word_timestamps and request.diarization is None


def test_an_upload_becomes_the_jobs_input_and_an_unused_one_expires(inprocess) -> None:
    url = upload(inprocess)
    assert finished(inprocess, submit(inprocess, audio_url=url)["id"])["status"] == "completed"
    assert inprocess.spooled() == []  # the job removed its input, the upload
    again = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": url})
    assert again.status_code == 400 and "used it already" in again.json()["error"]
    upload(inprocess)
    assert [path.name.startswith("assemblyai-upload-") for path in inprocess.spooled()] == [True]
    uploads = Uploads(inprocess.state_dir / "spool", ttl_s=60, max_bytes=1024)
    assert uploads.sweep() == 0
    assert uploads.sweep(now=time.time() + 61) == 1 and inprocess.spooled() == []


def test_another_keys_upload_is_not_found(inprocess) -> None:
    url = upload(inprocess, key=PRICED_KEY)
    answer = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": url})
    assert answer.status_code == 400 and "no such upload for this key" in answer.json()["error"]


def test_an_upload_over_the_limit_leaves_nothing(inprocess) -> None:
    answer = aai_call(inprocess, "POST", "/v2/upload", content=b"x" * (64 * 1024 + 1))
    assert answer.status_code == 413 and "too large" in answer.json()["error"]
    empty = aai_call(inprocess, "POST", "/v2/upload", content=b"")
    assert empty.status_code == 400 and set(empty.json()) == {"error"}
    assert inprocess.spooled() == []


def test_speaker_labels_give_utterances_by_letter(inprocess) -> None:
    created = submit(inprocess, audio_url=upload(inprocess), speaker_labels=True, speakers_expected=2)
    transcript = aai.types.TranscriptResponse.parse_obj(finished(inprocess, created["id"]))
    assert [(u.speaker, u.text, u.start, u.end) for u in transcript.utterances or []] == [
        ("A", "Hello", 0, 1000),
        ("B", "there.", 1200, 2500),
    ]
    assert [w.speaker for w in transcript.words or []] == ["A", "B"]
    assert inprocess.pipeline.requests[-1].diarization.num_speakers == 2


def test_language_detection_profanity_and_punctuate_translate(inprocess) -> None:
    created = submit(
        inprocess, audio_url=upload(inprocess), language_detection=True, filter_profanity=True, punctuate=False
    )
    done = finished(inprocess, created["id"])
    request = inprocess.pipeline.requests[-1]
    assert request.options.language is None and request.options.profanity_filter
    assert done["language_code"] == "en" and done["text"] == "Hello there" and done["language_detection"] is True
    spanish = submit(inprocess, audio_url=upload(inprocess), language_code="es")
    finished(inprocess, spanish["id"])
    assert inprocess.pipeline.requests[-1].options.language == "es"


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"word_boost": ["Kubernetes"] * 201, "boost_param": "high"}, "word_boost: at most 200 terms"),
        ({"custom_spelling": [{"from": [" "], "to": "b"}]}, "custom_spelling"),
        ({"keyterms_prompt_options": {"keyterms_match_strength": "high"}}, "keyterms_prompt_options (the keyterms"),
        ({"auto_chapters": True}, "auto_chapters (not supported"),
        ({"redact_pii": True, "redact_pii_policies": ["medical_condition"]}, "medical_condition"),
        ({"summarization": True}, "summarization"),
        ({"format_text": False}, "format_text"),
        ({"audio_start_from": 1000}, "audio_start_from"),
        ({"speech_model": "whisper-large"}, "speech_model 'whisper-large' is not offered"),
        ({"language_code": "xx"}, "language_code 'xx'"),
        ({"speakers_expected": 2}, "need speaker_labels"),
    ],
)
def test_what_cannot_be_honoured_is_a_400_naming_it(inprocess, fields: dict, named: str) -> None:
    answer = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": "http://93.184.216.34/a.wav", **fields})
    assert answer.status_code == 400 and named in answer.json()["error"], answer.text
    assert set(answer.json()) == {"error"}


def test_off_values_ask_for_nothing(inprocess) -> None:
    off: dict[str, object] = {"auto_chapters": False, "redact_pii": None, "word_boost": [], "format_text": True}
    created = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": upload(inprocess), **off})
    assert created.status_code == 200 and created.json()["status"] == "queued"


def test_a_private_audio_url_or_webhook_is_refused(inprocess) -> None:
    private = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": "http://10.0.0.7/a.wav"})
    assert private.status_code == 400 and set(private.json()) == {"error"}
    hook = {"audio_url": upload(inprocess), "webhook_url": "http://169.254.169.254/hook"}
    refused = aai_call(inprocess, "POST", "/v2/transcript", json=hook)
    assert refused.status_code == 400 and refused.json()["error"].startswith("webhook_url: ")


def test_a_bad_key_is_a_401_the_sdk_reports(inprocess) -> None:
    answer = aai_call(inprocess, "GET", "/v2/transcript/x", key="not-a-key")
    assert answer.status_code == 401 and answer.json() == {"error": INVALID_CREDENTIALS}
    missing = aai_call(inprocess, "GET", "/v2/transcript/nope")
    assert missing.status_code == 404 and "not found" in missing.json()["error"]


def test_exports_parse_as_the_sdk_reads_them(inprocess) -> None:
    transcript_id = submit(inprocess, audio_url=upload(inprocess))["id"]
    finished(inprocess, transcript_id)
    base = f"/v2/transcript/{transcript_id}"
    sentences = aai.types.SentencesResponse.parse_obj(aai_call(inprocess, "GET", f"{base}/sentences").json())
    assert [(s.text, s.start, s.end) for s in sentences.sentences] == [("Hello there.", 0, 2500)]
    paragraphs = aai.types.ParagraphsResponse.parse_obj(aai_call(inprocess, "GET", f"{base}/paragraphs").json())
    assert [p.text for p in paragraphs.paragraphs] == ["Hello there."] and paragraphs.audio_duration == 2.5
    srt = aai_call(inprocess, "GET", f"{base}/srt").text
    assert srt.startswith("1\n00:00:00,000 --> 00:00:02,500\nHello there.")
    short = aai_call(inprocess, "GET", f"{base}/srt", params={"chars_per_caption": 6}).text
    assert "1\n00:00:00,000 --> 00:00:01,000\nHello" in short and "2\n00:00:01,200 --> 00:00:02,500\nthere." in short
    vtt = aai_call(inprocess, "GET", f"{base}/vtt")
    assert vtt.text.startswith("WEBVTT") and "00:00:00.000 --> 00:00:02.500" in vtt.text
    found = aai.types.WordSearchMatchResponse.parse_obj(
        aai_call(inprocess, "GET", f"{base}/word-search", params={"words": "there,hello there,absent"}).json()
    )
    assert [(m.text, m.count, m.indexes) for m in found.matches] == [
        ("there", 1, [1]),
        ("hello there", 1, [0]),
        ("absent", 0, []),
    ]
    assert found.matches[1].timestamps == [(0, 2500)] and found.total_count == 2


def test_list_pages_newest_first_and_delete_forgets(inprocess) -> None:
    ids = [submit(inprocess, audio_url=upload(inprocess))["id"] for _ in range(2)]
    for transcript_id in ids:
        finished(inprocess, transcript_id)
    ids.append(submit(inprocess, audio_url=upload(inprocess))["id"])
    finished(inprocess, ids[-1])
    page = aai.types.ListTranscriptResponse.parse_obj(aai_call(inprocess, "GET", "/v2/transcript?limit=2").json())
    assert [item.id for item in page.transcripts] == ids[::-1][:2] and page.page_details.result_count == 2
    assert page.page_details.prev_url is not None and page.page_details.next_url is None
    older_url = page.page_details.prev_url.removeprefix("http://test")
    older = aai.types.ListTranscriptResponse.parse_obj(aai_call(inprocess, "GET", older_url).json())
    assert [item.id for item in older.transcripts] == [ids[0]] and older.page_details.next_url is not None
    deleted = aai_call(inprocess, "DELETE", f"/v2/transcript/{ids[0]}")
    assert deleted.status_code == 200 and deleted.json()["text"] == "Deleted by user."
    aai.types.TranscriptResponse.parse_obj(deleted.json())
    assert aai_call(inprocess, "GET", f"/v2/transcript/{ids[0]}").status_code == 404
    listed = aai_call(inprocess, "GET", "/v2/transcript", params={"status": "completed"}).json()
    assert [item["id"] for item in listed["transcripts"]] == ids[:0:-1]


def test_a_rest_job_is_not_an_assemblyai_transcript(inprocess) -> None:
    created = call(inprocess, "POST", "/v1/audio/transcriptions/async", files={"file": ("a.wav", AUDIO)})
    job_id = created.json()["job_id"]
    assert aai_call(inprocess, "GET", f"/v2/transcript/{job_id}").status_code == 404


def test_the_webhook_is_assemblyais_body_with_the_named_header(inprocess) -> None:
    created = submit(
        inprocess,
        audio_url=upload(inprocess),
        webhook_url="http://127.0.0.1:9/hook",
        webhook_auth_header_name="X-Hook-Auth",
        webhook_auth_header_value="s3cret",
    )
    assert "webhook_auth_header_value" not in created and created["webhook_auth"] is True
    finished(inprocess, created["id"])
    assert inprocess.services is not None and inprocess.services.jobs is not None
    job = inprocess.services.jobs.get(created["id"], inprocess.tracker.book.jobs[created["id"]].owner)
    assert job is not None
    delivery = webhook(job, CallbackState())
    assert json.loads(delivery.body) == {"transcript_id": created["id"], "status": "completed"}
    assert delivery.headers == {"X-Hook-Auth": "s3cret"} and not delivery.signed


def test_lemur_task_answers_over_finished_transcripts_and_charges_once(inprocess) -> None:
    asked: list[AnalysisOptions] = []

    def analyze(transcript, options: AnalysisOptions) -> Analysis:
        asked.append(options)
        return Analysis(llm_output=f"about: {transcript.text}", llm_input_tokens=50, llm_output_tokens=5)

    inprocess.pipeline.analyze = Remote(analyze)
    transcript_id = submit(inprocess, key=PRICED_KEY, audio_url=upload(inprocess, key=PRICED_KEY))["id"]
    finished(inprocess, transcript_id, key=PRICED_KEY)
    task = {"transcript_ids": [transcript_id], "prompt": "Summarise.", "final_model": "anthropic/claude-3-5-sonnet"}
    answer = aai_call(inprocess, "POST", LEMUR, key=PRICED_KEY, json={**task, "max_output_size": 20})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["response"] == "about: Hello there." and body["usage"] == {"input_tokens": 50, "output_tokens": 5}
    assert asked[-1].prompt == "Summarise." and asked[-1].max_output_tokens == 20
    usage = call(inprocess, "GET", "/v1/billing/usage", key=PRICED_KEY).json()
    assert [item["request_id"] for item in usage["items"] if item["task"] == "lemur"] == [body["request_id"]]
    for refused, named in (({"final_model": "gpt-9"}, "final_model"), ({"temperature": 0.7}, "temperature")):
        bad = aai_call(inprocess, "POST", LEMUR, key=PRICED_KEY, json={**task, **refused})
        assert bad.status_code == 400 and named in bad.json()["error"]
    missing = aai_call(inprocess, "POST", LEMUR, json={**task, "transcript_ids": ["nope"]})
    assert missing.status_code == 400 and "not found" in missing.json()["error"]


def test_a_full_running_job_cap_is_a_429_in_assemblyais_shape(inprocess) -> None:
    inprocess.pipeline.gate = asyncio.Event()
    for _ in range(2):
        submit(inprocess, audio_url=upload(inprocess))
    answer = aai_call(inprocess, "POST", "/v2/transcript", json={"audio_url": upload(inprocess)})
    assert answer.status_code == 429 and "too many running jobs" in answer.json()["error"]
    (running, *_) = aai_call(inprocess, "GET", "/v2/transcript").json()["transcripts"]
    deleting = aai_call(inprocess, "DELETE", f"/v2/transcript/{running['id']}")
    assert deleting.status_code == 400 and "still processing" in deleting.json()["error"]
    inprocess.pipeline.gate.set()
