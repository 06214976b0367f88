"""Known speakers and chunking_strategy (OpenAI's diarized_json fields): parsing at the edge, decoding the
reference clips, matching them to diarized speakers, and naming those speakers."""

import base64
import io
import wave
from pathlib import Path

import numpy as np
import pytest
from fastapi import HTTPException

from deployments.diarization._known_speakers import match_speakers, speaker_centroids
from deployments.diarization.words import diarized_transcription
from deployments.errors import AudioRejectedError
from deployments.files._chunking import SpeechChunker
from deployments.files._references import decode_references, remove_decoded
from deployments.storage.spool import remove_spooled
from deployments.types import (
    SAMPLE_RATE,
    Diarization,
    KnownSpeaker,
    Segment,
    SpeakerTurn,
    SpeechDetection,
    Transcript,
    Word,
)
from serve_app.rest.openai_fields import data_url_bytes, pop_chunking_strategy, pop_known_speakers


def wav_bytes(seconds: float, rate: int = 16_000) -> bytes:
    tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(int(seconds * rate)) / rate) * 32767).astype("<i2")
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(tone.tobytes())
    return buffer.getvalue()


def data_url(clip: bytes, media_type: str = "audio/wav") -> str:
    return f"data:{media_type};base64,{base64.b64encode(clip).decode()}"


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float64)
    return vector / np.linalg.norm(vector)


# matching


def test_each_reference_names_the_speaker_it_matches_best_and_no_name_is_given_twice() -> None:
    centroids = {"A": unit(1, 0, 0), "B": unit(0.9, 0.3, 0), "C": unit(0, 0, 1)}
    references = [unit(1, 0.1, 0), unit(0.8, 0.6, 0)]
    # A is closest to both references; the pairing that is best overall gives each one speaker
    assert match_speakers(centroids, references, ["alice", "bob"], threshold=0.5) == {"A": "alice", "B": "bob"}


def test_a_reference_below_the_threshold_names_no_one() -> None:
    centroids = {"A": unit(1, 0, 0), "B": unit(0, 1, 0)}
    assert match_speakers(centroids, [unit(1, 0, 0), unit(0, 0, 1)], ["alice", "carol"], threshold=0.5) == {
        "A": "alice"
    }
    assert match_speakers({}, [unit(1, 0, 0)], ["alice"], threshold=0.5) == {}


def test_more_references_than_speakers_pair_the_best_ones() -> None:
    centroids = {"A": unit(0, 1, 0)}
    names = match_speakers(centroids, [unit(1, 0, 0), unit(0.1, 1, 0)], ["alice", "bob"], threshold=0.5)
    assert names == {"A": "bob"}


def test_a_centroid_weighs_each_turn_by_its_length_and_skips_short_turns() -> None:
    samples = np.zeros(10 * SAMPLE_RATE, dtype=np.float32)
    samples[: 2 * SAMPLE_RATE] = 1.0  # the embedding below reads the level: speaker X's first turn is "loud"
    turns = [
        SpeakerTurn(speaker="X", start=0.0, end=2.0),
        SpeakerTurn(speaker="X", start=2.0, end=3.0),
        SpeakerTurn(speaker="Y", start=4.0, end=4.3),  # too short: Y gets no centroid
    ]

    def embed(window: np.ndarray) -> np.ndarray:
        return unit(1, 0) if window.mean() > 0.5 else unit(0, 1)

    centroids = speaker_centroids(samples, turns, embed)
    assert set(centroids) == {"X"}
    np.testing.assert_allclose(centroids["X"], unit(2, 1))


# naming in the diarized transcript


def test_matched_speakers_take_their_names_and_the_others_keep_generic_labels() -> None:
    words = [
        Word(word=" Hi", start=0.0, end=0.5),
        Word(word=" yo", start=1.0, end=1.5),
        Word(word=" ok", start=2.0, end=2.5),
    ]
    segment = Segment(id=0, seek=0, start=0.0, end=2.5, text=" Hi yo ok", tokens=[], temperature=0.0,
                      avg_logprob=0.0, compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip
    transcript = Transcript(language="en", duration=3.0, segments=[segment], words=words)
    turns = [
        SpeakerTurn(speaker="SPEAKER_02", start=0.0, end=0.6),
        SpeakerTurn(speaker="SPEAKER_00", start=0.9, end=1.6),
        SpeakerTurn(speaker="SPEAKER_01", start=1.9, end=2.6),
    ]
    diarization = Diarization(turns=turns, exclusive_turns=turns, names={"SPEAKER_00": "alice"})
    result = diarized_transcription(transcript, diarization)
    assert [segment.speaker for segment in result.segments] == ["speaker_0", "alice", "speaker_1"]
    assert [speaker.speaker for speaker in result.speakers] == ["speaker_0", "alice", "speaker_1"]
    assert [word.speaker for word in result.words] == ["speaker_0", "alice", "speaker_1"]


# the clips, decoded by the pipeline


def test_reference_clips_decode_to_16k_copies_beside_them(tmp_path: Path) -> None:
    clip = tmp_path / "req.ref0"
    clip.write_bytes(wav_bytes(2.0, rate=44_100))
    decoded = decode_references([KnownSpeaker(name="alice", reference_path=str(clip))])
    copy = Path(decoded[0].reference_path)
    assert decoded[0].name == "alice" and copy.parent == tmp_path and copy != clip
    assert abs(len(np.fromfile(copy, dtype=np.float32)) - 2 * SAMPLE_RATE) < SAMPLE_RATE // 100
    remove_decoded(decoded)
    assert not copy.exists() and clip.exists()


@pytest.mark.parametrize(
    ("content", "words"),
    [
        (wav_bytes(1.0), "known_speaker_references[1]: the clip is too short (1.00 s)"),
        (wav_bytes(12.0), "known_speaker_references[1]: audio is too long"),
        (b"not audio at all", "known_speaker_references[1]: audio processing failed"),
    ],
)
def test_a_bad_clip_is_refused_naming_it_and_leaves_no_copy(tmp_path: Path, content: bytes, words: str) -> None:
    good, bad = tmp_path / "req.ref0", tmp_path / "req.ref1"
    good.write_bytes(wav_bytes(3.0))
    bad.write_bytes(content)
    speakers = [KnownSpeaker(name="a", reference_path=str(good)), KnownSpeaker(name="b", reference_path=str(bad))]
    with pytest.raises(AudioRejectedError) as refused:
        decode_references(speakers)
    assert str(refused.value).startswith(words) and refused.value.status == 400
    assert sorted(path.name for path in tmp_path.iterdir()) == ["req.ref0", "req.ref1"]


# the edge's parsing


def test_known_speakers_are_spooled_beside_the_upload_and_removed_with_it(tmp_path: Path) -> None:
    spool = tmp_path / "spool" / "request-id"
    clip = wav_bytes(2.5)
    fields = {
        "known_speaker_names[]": ["alice", " bob "],
        "known_speaker_references[]": [data_url(clip), data_url(clip, "audio/x-wav")],
        "model": ["m"],
    }
    speakers = pop_known_speakers(fields, spool)
    assert fields == {"model": ["m"]}
    assert [speaker.name for speaker in speakers] == ["alice", "bob"]
    assert all(Path(speaker.reference_path).read_bytes() == clip for speaker in speakers)
    spool.write_bytes(b"upload")
    remove_spooled(spool)
    assert list(spool.parent.iterdir()) == []


@pytest.mark.parametrize(
    ("names", "references", "words"),
    [
        (["alice"], [], "known_speaker_names[] (1) and known_speaker_references[] (0) must pair up"),
        (["a", "b", "c", "d", "e"], ["data:audio/wav;base64,AAAA"] * 5, "at most 4 known speakers"),
        (["alice", "alice"], ["data:audio/wav;base64,AAAA"] * 2, "known_speaker_names[1]: 'alice' is given twice"),
        ([""], ["data:audio/wav;base64,AAAA"], "known_speaker_names[0]: give a name"),
        (["speaker_1"], ["data:audio/wav;base64,AAAA"], "label of an unnamed speaker"),
        (["a"], ["https://example.com/a.wav"], "known_speaker_references[0]: give the clip as a data URL"),
        (["a"], ["data:text/plain;base64,aGk="], "known_speaker_references[0]: the data URL holds 'text/plain'"),
        (["a"], ["data:audio/wav;base64,%%%"], "known_speaker_references[0]: the data URL's base64 is malformed"),
        (["a"], ["data:audio/wav;base64,"], "known_speaker_references[0]: the clip is empty"),
    ],
)
def test_bad_known_speakers_are_a_400_naming_the_field(tmp_path: Path, names, references, words) -> None:
    fields = {"known_speaker_names[]": names, "known_speaker_references[]": references}
    with pytest.raises(HTTPException) as refused:
        pop_known_speakers(fields, tmp_path / "request-id")
    assert refused.value.status_code == 400 and words in refused.value.detail


def test_a_data_url_may_be_percent_encoded_or_untyped() -> None:
    assert data_url_bytes("data:,RIFF%00", "f") == b"RIFF\x00"
    assert data_url_bytes("data:application/octet-stream;base64,UklGRg==", "f") == b"RIFF"


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, (False, None)),
        ({"chunking_strategy": ["auto"]}, (True, None)),
        (
            {"chunking_strategy[type]": ["server_vad"], "chunking_strategy[threshold]": ["0.3"],
             "chunking_strategy[prefix_padding_ms]": ["300"], "chunking_strategy[silence_duration_ms]": ["500"]},
            (True, SpeechDetection(threshold=0.3, prefix_padding_ms=300, silence_duration_ms=500)),
        ),
        ({"chunking_strategy": ['{"type": "server_vad", "threshold": 0.7}']}, (True, SpeechDetection(threshold=0.7))),
    ],
)  # fmt: skip
def test_chunking_strategy_is_auto_or_server_vad_settings(fields, expected) -> None:
    assert pop_chunking_strategy(fields) == expected and fields == {}


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"chunking_strategy": ["manual"]}, "chunking_strategy: 'manual' is neither \"auto\" nor a server_vad object"),
        ({"chunking_strategy[type]": ["client_vad"]}, 'type must be "server_vad"'),
        ({"chunking_strategy[type]": ["server_vad"], "chunking_strategy[threshold]": ["2"]}, "threshold"),
        ({"chunking_strategy[type]": ["server_vad"], "chunking_strategy[silence_duration_ms]": ["-1"]}, "silence"),
        ({"chunking_strategy": ['{"type": "server_vad", "speed": 1}']}, "unknown field 'speed'"),
        ({"chunking_strategy": ["auto"], "chunking_strategy[type]": ["server_vad"]}, "not both"),
    ],
)
def test_a_bad_chunking_strategy_is_a_400_saying_what_is_wrong(fields, words) -> None:
    with pytest.raises(HTTPException) as refused:
        pop_chunking_strategy(fields)
    assert refused.value.status_code == 400 and words in refused.value.detail


def test_server_vad_settings_set_the_chunkers_vad() -> None:
    configured = SpeechChunker(use_vad=False, max_chunk_s=20)
    chunker = configured.detecting(SpeechDetection(threshold=0.3, prefix_padding_ms=300, silence_duration_ms=500))
    assert chunker.vad_options is not None and configured.vad_options is None
    assert (chunker.vad_options.threshold, chunker.vad_options.speech_pad_ms) == (0.3, 300)
    assert chunker.vad_options.min_silence_duration_ms == 500 and chunker.max_samples == 20 * SAMPLE_RATE
