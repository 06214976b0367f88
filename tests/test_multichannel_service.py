"""Multichannel audio through the running service: a call with one party per channel (pyannote's call, each
speaker's turns on a channel of their own, sample.rttm; and `../shared/stereo_diarization.wav` when present) gives
every word its channel's speaker through our route, Deepgram's SDK (`multichannel=True`: one `results.channels[]`
entry per channel) and AssemblyAI's SDK (`multichannel: true`: words and utterances with their channel); a mono
file is a 400 naming the field, and each channel is charged."""

from pathlib import Path

import assemblyai as aai
import numpy as np
import pytest
from deepgram.types.listen_v1response import ListenV1Response
from pyannote.database.util import load_rttm

from devkit.charges import charges_of
from devkit.media import encode, encode_channels, pyannote_sample
from tests.conftest import Service
from tests.sdk_settings import assemblyai_pointed_at
from tests.test_deepgram_service import KEY as DEEPGRAM_KEY
from tests.test_deepgram_service import deepgram_client

RATE = 16_000
CALL_S = 16.0
"""The call's first 16 s: both speakers, three turns each."""
SHARED_STEREO = Path(__file__).resolve().parents[2] / "shared" / "audio" / "stereo_diarization.wav"


def turns_by_speaker() -> dict[str, list[tuple[float, float]]]:
    annotation = next(iter(load_rttm(str(Path(pyannote_sample()).with_suffix(".rttm"))).values()))
    return {
        str(label): [(s.start, s.end) for s in annotation.label_timeline(label) if s.start < CALL_S]
        for label in annotation.labels()
    }


@pytest.fixture(scope="module")
def two_party_call(call_samples: np.ndarray) -> tuple[bytes, dict[int, list[tuple[float, float]]]]:
    """A stereo WAV: speaker90's turns on the left channel, speaker91's on the right, silence elsewhere."""
    samples = call_samples[: int(CALL_S * RATE)]
    channels, turns = [], {}
    for number, (_, spans) in enumerate(sorted(turns_by_speaker().items())):
        channel = np.zeros_like(samples)
        for start, end in spans:
            channel[int(start * RATE) : int(end * RATE)] = samples[int(start * RATE) : int(end * RATE)]
        channels.append(channel)
        turns[number] = spans
    return encode_channels(channels), turns


def inside(start: float, end: float, spans: list[tuple[float, float]], slack: float = 0.5) -> bool:
    middle = (start + end) / 2
    return any(s - slack <= middle <= e + slack for s, e in spans)


def test_our_route_gives_every_word_its_channel_as_its_speaker(service: Service, two_party_call: tuple) -> None:
    audio, turns = two_party_call
    with service.client() as client:
        response = client.post(
            "/v1/audio/transcriptions",
            files={"file": ("call.wav", audio)},
            data={"multichannel": "true", "task": "diarize"},
        )
        mono = client.post(
            "/v1/audio/transcriptions", files={"file": ("a.wav", encode(np.zeros(RATE), "wav"))},
            data={"multichannel": "true"},
        )  # fmt: skip
    assert response.status_code == 200, response.text
    body = response.json()
    words = body["words"]
    assert {w["channel"] for w in words} == {0, 1}
    assert all(w["speaker"] == f"channel_{w['channel']}" for w in words)
    placed = [inside(w["start"], w["end"], turns[w["channel"]]) for w in words]
    assert sum(placed) >= 0.9 * len(words), words  # a word is heard on its speaker's channel, in their turns
    assert [s["start"] for s in body["segments"]] == sorted(s["start"] for s in body["segments"])
    assert {s["speaker"] for s in body["speakers"]} == {"channel_0", "channel_1"}
    assert mono.status_code == 400 and mono.json()["detail"].startswith("multichannel:")


def test_deepgrams_sdk_gets_one_result_per_channel_charged_per_channel(service: Service, two_party_call: tuple) -> None:
    audio, turns = two_party_call
    before = sum(charges_of({"state_dir": str(service.state_dir)}, DEEPGRAM_KEY).values())
    response = deepgram_client(service).listen.v1.media.transcribe_file(
        request=audio, model="nova-3", multichannel=True, utterances=True, punctuate=True
    )
    assert isinstance(response, ListenV1Response)
    assert response.metadata.channels == 2 and len(response.results.channels) == 2
    for number, channel in enumerate(response.results.channels):
        (alternative,) = channel.alternatives or []
        words = alternative.words or []
        assert words and sum(inside(w.start or 0.0, w.end or 0.0, turns[number]) for w in words) >= 0.9 * len(words)
    utterances = response.results.utterances or []
    assert {u.channel for u in utterances} == {0, 1}
    after = sum(charges_of({"state_dir": str(service.state_dir)}, DEEPGRAM_KEY).values())
    assert after - before == pytest.approx(2 * CALL_S, abs=0.2)  # each channel's seconds


def test_assemblyais_sdk_gets_words_and_utterances_with_their_channel(service: Service, two_party_call: tuple) -> None:
    audio, turns = two_party_call
    with assemblyai_pointed_at(service.base_url, "test-key-analysis"):
        transcript = aai.Transcriber(config=aai.TranscriptionConfig(multichannel=True)).transcribe(audio)
    assert transcript.status == aai.TranscriptStatus.completed, transcript.error
    assert (transcript.json_response or {})["audio_channels"] == 2
    words = transcript.words or []
    assert {w.channel for w in words} == {"1", "2"}
    assert sum(inside(w.start / 1000, w.end / 1000, turns[int(w.channel or 0) - 1]) for w in words) >= 0.9 * len(words)
    utterances = transcript.utterances or []
    assert utterances and all(u.channel == u.speaker for u in utterances)


@pytest.mark.skipif(not SHARED_STEREO.exists(), reason="../shared/audio/stereo_diarization.wav is not there")
def test_the_shared_stereo_recording_gives_each_word_its_channels_speaker(service: Service) -> None:
    """Through our route, Deepgram's SDK (with diarize: speakers told apart within each channel) and AssemblyAI's
    SDK."""
    audio = SHARED_STEREO.read_bytes()
    with service.client() as client:
        response = client.post(
            "/v1/audio/transcriptions",
            files={"file": ("stereo.wav", audio)},
            data={"multichannel": "true", "task": "diarize"},
        )
    assert response.status_code == 200, response.text
    words = response.json()["words"]
    assert words and {w["channel"] for w in words} == {0, 1}
    assert all(w["speaker"] == f"channel_{w['channel']}" for w in words)

    deepgram = deepgram_client(service).listen.v1.media.transcribe_file(
        request=audio, model="nova-3", multichannel=True, diarize=True
    )
    assert isinstance(deepgram, ListenV1Response) and len(deepgram.results.channels) == 2
    for channel in deepgram.results.channels:
        (alternative,) = channel.alternatives or []
        assert alternative.words and all(w.speaker is not None for w in alternative.words)  # diarized within it

    with assemblyai_pointed_at(service.base_url, "test-key-analysis"):
        transcript = aai.Transcriber(config=aai.TranscriptionConfig(multichannel=True)).transcribe(audio)
    assert transcript.status == aai.TranscriptStatus.completed, transcript.error
    assert {w.channel for w in transcript.words or []} == {"1", "2"}
    assert all(u.speaker == u.channel for u in transcript.utterances or [])
