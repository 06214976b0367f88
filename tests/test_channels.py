"""Multichannel files: the split into one mono copy per channel (each channel's own audio, nothing of the other's),
a mono file refused naming the field, and the merge of the channels' results (time order, every segment and word
tagged, a channel as a speaker or its speakers named after it), with no model."""

from pathlib import Path

import numpy as np
import pytest

from deployments.errors import AudioRejectedError
from deployments.files._channels import merged, split_channels
from deployments.files.decoding import decode_audio
from deployments.types import (
    DiarizedSegment,
    DiarizedTranscript,
    DiarizedWord,
    Segment,
    SpeakerSummary,
    SpeakerTurn,
    Transcript,
    Word,
)
from devkit.media import encode, encode_channels

RATE = 16_000


def tone(frequency: float, seconds: float) -> np.ndarray:
    return (0.3 * np.sin(2 * np.pi * frequency * np.arange(int(seconds * RATE)) / RATE)).astype(np.float32)


def test_each_channel_is_split_into_a_copy_of_its_own(tmp_path: Path) -> None:
    left, right = tone(440, 2.0), np.zeros(2 * RATE, dtype=np.float32)
    right[RATE:] = tone(880, 1.0)
    source = tmp_path / "call.wav"
    source.write_bytes(encode_channels([left, right]))
    paths = split_channels(source, max_duration_s=60)
    assert len(paths) == 2 and all(path.parent == tmp_path and path.name.startswith("call.wav.") for path in paths)
    first, second = (decode_audio(path).samples for path in paths)
    assert len(first) == len(second) == 2 * RATE
    assert np.abs(first - left).max() < 1e-3 and np.abs(second[:RATE]).max() < 1e-3  # right is silent, then tone
    assert np.abs(second[RATE:] - right[RATE:]).max() < 1e-3


def test_a_mono_file_is_refused_naming_the_field(tmp_path: Path) -> None:
    source = tmp_path / "mono.wav"
    source.write_bytes(encode(tone(440, 1.0), "wav"))
    with pytest.raises(AudioRejectedError, match=r"^multichannel: the audio has one channel"):
        split_channels(source, max_duration_s=60)
    assert list(tmp_path.iterdir()) == [source]


def segment(index: int, start: float, end: float, text: str) -> Segment:
    return Segment(id=index, seek=0, start=start, end=end, text=text, tokens=[], temperature=0.0, avg_logprob=-0.1,
                   compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip


def transcript(*spoken: tuple[float, float, str]) -> Transcript:
    return Transcript(
        language="en",
        duration=10.0,
        segments=[segment(i, start, end, f" {text}") for i, (start, end, text) in enumerate(spoken)],
        words=[Word(word=f" {text}", start=start, end=end) for start, end, text in spoken],
    )


def test_channels_merge_in_time_order_each_tagged() -> None:
    agent, customer = transcript((0.5, 1.0, "Hello."), (3.0, 4.0, "Bye.")), transcript((1.5, 2.5, "Hi."))
    plain = merged([agent, customer], diarized=False)
    assert isinstance(plain, Transcript) and plain.channels == 2 and plain.billed_seconds == 20.0
    assert [(s.text, s.channel, s.id) for s in plain.segments] == [(" Hello.", 0, 0), (" Hi.", 1, 1), (" Bye.", 0, 2)]
    assert [w.channel for w in plain.words] == [0, 1, 0] and plain.text == "Hello. Hi. Bye."
    assert "channel" not in agent.segments[0].model_dump()  # absent, not null, where there are no channels

    speakers = merged([agent, customer], diarized=True)
    assert isinstance(speakers, DiarizedTranscript) and speakers.channels == 2
    assert [(s.speaker, s.channel) for s in speakers.segments] == [("channel_0", 0), ("channel_1", 1), ("channel_0", 0)]
    assert all(w.speaker == f"channel_{w.channel}" for w in speakers.words) and len(speakers.words) == 3
    assert {(s.speaker, s.channel) for s in speakers.speakers} == {("channel_0", 0), ("channel_1", 1)}


def test_speakers_within_channels_are_named_after_their_channel() -> None:
    def diarized(speaker: str) -> DiarizedTranscript:
        word = DiarizedWord(word=" Yes.", start=1.0, end=1.5, speaker=speaker)
        return DiarizedTranscript(
            text="Yes.", language="en", duration=5.0,
            speakers=[SpeakerSummary(speaker=speaker, speaking_time=0.5)],
            segments=[DiarizedSegment(id=0, start=1.0, end=1.5, text="Yes.", speaker=speaker, words=[word])],
            words=[word], turns=[SpeakerTurn(speaker=speaker, start=1.0, end=1.5)],
        )  # fmt: skip

    result = merged([diarized("speaker_0"), diarized("Alice")], diarized=True)
    assert isinstance(result, DiarizedTranscript)
    assert [s.speaker for s in result.segments] == ["channel_0_speaker_0", "Alice"]  # a voice's name stays
    assert [w.speaker for w in result.words] == ["channel_0_speaker_0", "Alice"]
