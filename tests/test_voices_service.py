"""Enrolled voices through the running service: enrol two speakers of pyannote's two-speaker call (each from
stretches where only they talk, sample.rttm), list and page them, name the call's speakers with them in a job (a
synchronous request does with the `openai` SDK: tests/test_openai_diarized_service.py), enrol one from that job's
speaker, rename and delete; another key's voice and a deleted one are unknown (404 on the voices API, a 400
naming the id on a request); a clip of silence is a 400 naming `file`; a live session (nexara's, `voices` in its
query) names its speakers once matched, and an OpenAI realtime session (`transcription.voices`, the `openai` SDK)
labels its deltas with them."""

import asyncio
import copy
import time
from typing import Any

import httpx
import numpy as np

from devkit.jobs import JobClient, nothing_before_the_end
from devkit.media import encode
from devkit.realtime import SESSION, openai_client, pcm24k, transcription_session
from tests.conftest import API_KEYS, Service
from tests.test_live_service import raw_session

RATE = 16_000
SOLO = {"alice": [(10.6, 14.4), (18.7, 21.4)], "bob": [(21.8, 27.8)]}
"""Where only one speaker talks (sample.rttm: speaker90 and speaker91), with margins."""


def clip(samples: np.ndarray, spans: list[tuple[float, float]]) -> bytes:
    return encode(np.concatenate([samples[int(start * RATE) : int(end * RATE)] for start, end in spans]), "flac")


def enrol(client: httpx.Client, name: str, audio: bytes) -> httpx.Response:
    """POST /v1/voices as a well-behaved client does: a 429 (the key's rate, spent by the test before on this
    worker's service) is retried after its Retry-After."""
    for _ in range(5):
        answer = client.post("/v1/voices", data={"name": name}, files={"file": (f"{name}.flac", audio)})
        if answer.status_code != 429:
            return answer
        time.sleep(float(answer.headers.get("retry-after", "1")))
    return answer


def enrolled(client: httpx.Client, name: str, audio: bytes) -> str:
    """The id of a voice enrolled from `audio`, or the failure that says why not."""
    answer = enrol(client, name, audio)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def speaker_at(segments: list, start: float, end: float) -> str:
    """The speaker of the segment that overlaps [start, end] most."""
    best = max(segments, key=lambda s: min(end, s["end"]) - max(start, s["start"]))
    return str(best["speaker"])


def test_voices_are_enrolled_once_and_name_speakers_in_jobs(service: Service, call_samples: np.ndarray) -> None:
    call = encode(call_samples, "flac")
    with service.client() as client, service.client(API_KEYS[1]) as other:
        alice = enrol(client, "Alice", clip(call_samples, SOLO["alice"]))
        assert alice.status_code == 201, alice.text
        voice = alice.json()
        assert voice["object"] == "voice" and voice["id"].startswith("voice_") and voice["name"] == "Alice"
        assert 3.0 <= voice["speech_s"] <= 7.5 and isinstance(voice["created_at"], int)
        bob = {"id": enrolled(client, "Bob", clip(call_samples, SOLO["bob"]))}
        listed = client.get("/v1/voices").json()
        assert listed["object"] == "list" and [v["id"] for v in listed["data"]][-2:] == [voice["id"], bob["id"]]
        first = client.get("/v1/voices", params={"limit": 1}).json()
        assert first["has_more"] and len(first["data"]) == 1
        after = client.get("/v1/voices", params={"after": first["last_id"]}).json()
        assert first["last_id"] not in [v["id"] for v in after["data"]]

        # (a synchronous request names them too: tests/test_openai_diarized_service.py, with the openai SDK)
        # a job names them; a speaker of the finished job is enrolled from its recording
        with JobClient(service.base_url, service.api_key, timeout_s=300) as jobs:
            job = jobs.submit(call, "call.flac", response_format="verbose_json", task="diarize", voices=voice["id"])
            done = jobs.wait(job["job_id"], 240, while_running=nothing_before_the_end)
        assert done["status"] == "complete", done
        job_segments = done["result"]["segments"]
        assert speaker_at(job_segments, 10.6, 14.4) == "Alice"
        assert speaker_at(job_segments, 21.8, 27.8).startswith("speaker_")  # Bob was not asked for
        unnamed = speaker_at(job_segments, 21.8, 27.8)
        from_job = client.post("/v1/voices", json={"name": "Bob (call)", "job_id": job["job_id"], "speaker": unnamed})
        assert from_job.status_code == 201, from_job.text
        assert from_job.json()["speech_s"] >= 3.0
        wrong_speaker = client.post("/v1/voices", json={"name": "x", "job_id": job["job_id"], "speaker": "speaker_9"})
        assert wrong_speaker.status_code == 400 and "speaker" in wrong_speaker.json()["detail"]

        # renamed, then deleted: gone from the API and refused by name on a request
        renamed = client.patch(f"/v1/voices/{bob['id']}", json={"name": "Robert"})
        assert renamed.status_code == 200 and renamed.json()["name"] == "Robert"
        assert client.delete(f"/v1/voices/{bob['id']}").status_code == 204
        assert client.get(f"/v1/voices/{bob['id']}").status_code == 404
        refused = client.post(
            "/v1/audio/transcriptions",
            files={"file": ("call.flac", call)},
            data={"response_format": "diarized_json", "voices": bob["id"]},
        )
        assert refused.status_code == 400 and bob["id"] in refused.json()["detail"]

        # another key: the voice is not there, and naming it is refused
        assert other.get(f"/v1/voices/{voice['id']}").status_code == 404
        assert other.delete(f"/v1/voices/{voice['id']}").status_code == 404
        assert voice["id"] not in [v["id"] for v in other.get("/v1/voices").json()["data"]]
        foreign = other.post(
            "/v1/audio/transcriptions",
            files={"file": ("call.flac", call)},
            data={"response_format": "diarized_json", "voices": voice["id"]},
        )
        assert foreign.status_code == 400 and voice["id"] in foreign.json()["detail"]
        client.delete(f"/v1/voices/{voice['id']}")
        client.delete(f"/v1/voices/{from_job.json()['id']}")


def test_a_clip_without_enough_speech_is_refused_naming_the_field(service: Service, call_samples: np.ndarray) -> None:
    with service.client() as client:
        silence = enrol(client, "quiet", encode(np.zeros(5 * RATE, dtype=np.float32), "wav"))
        short = enrol(client, "short", clip(call_samples, [(11.0, 12.5)]))
        nameless = client.post("/v1/voices", files={"file": ("a.wav", encode(call_samples[:RATE], "wav"))})
        not_audio = enrol(client, "text", b"this is not audio")
        undiarized = client.post(
            "/v1/audio/transcriptions", files={"file": ("a.wav", b"RIFF")}, data={"voices": "voice_x"}
        )
    assert silence.status_code == 400 and silence.json()["detail"].startswith("file:"), silence.text
    assert short.status_code == 400 and "speech" in short.json()["detail"]
    assert nameless.status_code == 400 and "name" in nameless.json()["detail"]
    assert not_audio.status_code == 400 and not_audio.json()["detail"].startswith("file:")
    assert undiarized.status_code in (400, 422) and "voices" in undiarized.text


def test_live_sessions_of_both_protocols_name_their_speakers_by_their_voices(
    service: Service, call_samples: np.ndarray
) -> None:
    """nexara's socket (`voices` in its query) and the `openai` SDK's realtime session (`transcription.voices`) at
    once, with the same two enrolled voices."""
    with service.client() as client:
        alice = enrolled(client, "Alice", clip(call_samples, SOLO["alice"]))
        bob = enrolled(client, "Bob", clip(call_samples, SOLO["bob"]))
    pcm = (call_samples * 32767).astype("<i2").tobytes()
    frames: list[bytes | str] = [pcm[offset : offset + 3200] for offset in range(0, len(pcm), 3200)]
    frames.append(b"")  # the end of the audio
    session: Any = copy.deepcopy(SESSION)  # the SDK sends the dict as given: our `voices` beside OpenAI's fields
    session["audio"]["input"]["transcription"]["voices"] = [alice]

    async def both() -> tuple[Any, Any]:
        return await asyncio.gather(
            raw_session(service, f"?diarize=true&voices={alice},{bob}", frames),
            transcription_session(
                service.base_url, service.api_key, pcm24k(call_samples[: 15 * RATE]), 2.0, session, speed=4.0
            ),
        )

    try:
        (received, _), (realtime, _) = asyncio.run(both())
        refused, refused_code = asyncio.run(raw_session(service, "?diarize=true&voices=voice_missing", []))
        undiarized, _ = asyncio.run(raw_session(service, f"?voices={alice}", []))
        realtime_refused = asyncio.run(unknown_voice(service))
    finally:
        with service.client() as client:
            client.delete(f"/v1/voices/{alice}")
            client.delete(f"/v1/voices/{bob}")
    transcripts = [event for event in received if event["type"] == "transcript"]
    assert transcripts, received
    for event in transcripts:  # a name, once given, belongs to one speaker label, on the event and its words
        assert all(word.get("speaker_name") == event.get("speaker_name") for word in event["words"])
    labels = {(event["speaker"], event.get("speaker_name")) for event in transcripts if event.get("speaker_name")}
    named = {name for _, name in labels}
    assert named <= {"Alice", "Bob"} and named, transcripts
    assert len({label for label, _ in labels}) == len(labels)  # one name per label
    late = [event for event in transcripts if event["words"][0]["start"] >= 21_800]  # Bob's long turn
    assert any(event.get("speaker_name") == "Bob" for event in late), late
    assert refused[-1]["type"] == "error" and "voice_missing" in refused[-1]["message"] and refused_code == 4000
    assert undiarized[-1]["type"] == "error" and "diarize" in undiarized[-1]["message"]

    deltas = [event for _, event in realtime if event.type == "conversation.item.input_audio_transcription.delta"]
    speakers = {getattr(event, "speaker", None) for event in deltas}  # the SDK's typed events keep our field
    assert "Alice" in speakers and None not in speakers, speakers
    assert realtime_refused is not None and realtime_refused.type == "error"
    assert "voice_missing" in realtime_refused.error.message


async def unknown_voice(service: Service) -> Any:
    client = openai_client(service.base_url, service.api_key)
    async with client.realtime.connect(extra_query={"intent": "transcription"}) as connection:
        session: Any = copy.deepcopy(SESSION)
        session["audio"]["input"]["transcription"]["voices"] = ["voice_missing"]
        await connection.session.update(session=session)
        async for answer in connection:
            if answer.type == "error":
                return answer
    return None
