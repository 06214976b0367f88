"""The parts of a live session, without models or Ray: PCM decoding, the commit policy, online speaker
labels, the query's validation, and the Smart Turn model's input contract (second readings:
`tests/test_live_second_readings.py`)."""

import asyncio
import warnings

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError

from deployments.live._audio import InvalidAudioError, PcmDecoder
from deployments.live._buffer import AudioBuffer, RecentAudio
from deployments.live._local_agreement import LocalAgreement, TimedWord
from deployments.live._pace import ReadingPace
from deployments.live._speakers import OnlineSpeakers, WordSpeakers
from deployments.live.events import SessionSettings
from devkit.media import pyannote_sample
from serve_app.live.schemas import LiveSessionQuery

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import audioop


def tone(seconds: float, rate: int, hz: float = 440.0) -> np.ndarray:
    return (0.5 * np.sin(2 * np.pi * hz * np.arange(int(seconds * rate)) / rate)).astype(np.float32)


def test_s16le_frames_split_mid_sample_decode_to_the_same_samples() -> None:
    samples = tone(0.5, 16000)
    pcm = (samples * 32767).astype("<i2").tobytes()
    decoder = PcmDecoder(SessionSettings())
    pieces = [decoder.decode(pcm[i : i + 333])[0] for i in range(0, len(pcm), 333)]  # odd: splits samples
    decoded = np.concatenate(pieces)
    assert len(decoded) == len(samples)
    assert np.abs(decoded - samples).max() < 1e-3
    assert decoder.duration_ms == 500


@pytest.mark.parametrize("encoding", ["pcm_mulaw", "pcm_alaw"])
def test_g711_is_expanded(encoding: str) -> None:
    samples = tone(0.25, 16000)
    linear = (samples * 32767).astype("<i2").tobytes()
    encoded = audioop.lin2ulaw(linear, 2) if encoding == "pcm_mulaw" else audioop.lin2alaw(linear, 2)
    decoded = PcmDecoder(SessionSettings(encoding=encoding)).decode(encoded)[0]
    assert len(decoded) == len(samples)
    assert np.abs(decoded - samples).max() < 0.05  # G.711 is 8-bit logarithmic


@pytest.mark.parametrize("rate", [8000, 24000, 44100, 48000])
def test_other_rates_are_resampled_to_16k_in_a_stream(rate: int) -> None:
    samples = tone(1.0, rate)
    decoder = PcmDecoder(SessionSettings(encoding="pcm_f32le", sample_rate=rate))
    pcm = samples.astype("<f4").tobytes()
    out = [decoder.decode(pcm[i : i + 4000])[0] for i in range(0, len(pcm), 4000)] + decoder.flush()
    decoded = np.concatenate(out)
    assert abs(len(decoded) - 16000) <= 2
    spectrum = np.abs(np.fft.rfft(decoded[2000:14000]))
    assert abs(np.argmax(spectrum) * 16000 / 12000 - 440) < 5  # the tone survives at its pitch
    assert decoder.duration_ms == 1000


def test_stereo_is_downmixed_or_split() -> None:
    left, right = tone(0.1, 16000, 300), tone(0.1, 16000, 700)
    interleaved = np.stack([left, right], axis=1).reshape(-1).astype("<f4").tobytes()
    (mono,) = PcmDecoder(SessionSettings(encoding="pcm_f32le", channels=2)).decode(interleaved)
    assert np.allclose(mono, (left + right) / 2, atol=1e-6)
    split = PcmDecoder(SessionSettings(encoding="pcm_f32le", channels=2, multichannel=True)).decode(interleaved)
    assert np.allclose(split[0], left) and np.allclose(split[1], right)


def test_floats_that_are_not_audio_are_refused() -> None:
    decoder = PcmDecoder(SessionSettings(encoding="pcm_f32le"))
    with pytest.raises(InvalidAudioError, match="finite"):
        decoder.decode(np.array([0.1, np.nan], dtype="<f4").tobytes())
    with pytest.raises(InvalidAudioError):
        decoder.decode(np.array([1e9], dtype="<f4").tobytes())


def words(*spec: tuple[str, float]) -> list[TimedWord]:
    return [TimedWord(f" {text}", start, start + 0.3) for text, start in spec]


def test_a_word_is_final_when_two_readings_agree_on_it_and_all_before_it() -> None:
    agreement = LocalAgreement()
    assert agreement.update(words(("the", 0.0), ("cat", 0.4))) == []
    final = agreement.update(words(("the", 0.0), ("cat", 0.4), ("sat", 0.8)))
    assert [w.text for w in final] == [" the", " cat"]
    assert agreement.update(words(("the", 0.0), ("cat", 0.4), ("sad", 0.8))) == []  # changed its mind
    final = agreement.update(words(("the", 0.0), ("cat", 0.4), ("sad", 0.8), ("day", 1.2)))
    assert [w.text for w in final] == [" sad"]


def test_words_well_before_the_end_of_the_audio_are_final_at_once() -> None:
    agreement = LocalAgreement()
    final = agreement.update(words(("one", 0.0), ("two", 0.5), ("three", 1.0)), settled_before=0.9)
    assert [w.text for w in final] == [" one", " two"]


def test_words_read_again_are_not_repeated() -> None:
    agreement = LocalAgreement()
    agreement.commit_through(words(("hello", 0.0), ("there", 0.4)), until=1.0)
    # the buffer still holds them; Whisper reads them again with slightly shifted times
    final = agreement.commit_through(words(("hello", 0.05), ("there", 0.5), ("friend", 0.9)), until=2.0)
    assert [w.text for w in final] == [" friend"]


def test_final_words_read_again_later_than_they_were_are_found_by_their_text() -> None:
    """A reading of the context before a pause can move words by most of a second: neither repeated nor
    taken for new words, and the new words after them are kept whatever their times."""
    agreement = LocalAgreement()
    agreement.commit_through(words(("go", 0.0), ("for", 0.3), ("it", 0.6)), until=1.0)
    moved = words(("go", 0.7), ("for", 1.0), ("it", 1.3), ("mate", 1.6))
    assert [w.text for w in agreement.commit_through(moved, until=3.0)] == [" mate"]
    early = LocalAgreement()
    early.commit_through(words(("go", 0.0), ("for", 0.3), ("it", 0.6)), until=1.0)  # final until 0.9
    shifted = words(("go", 0.0), ("for", 0.3), ("it", 0.45), ("now", 0.75))  # starts before 0.9: still new
    assert [w.text for w in early.commit_through(shifted, until=3.0)] == [" now"]
    far = LocalAgreement()
    far.commit_through(words(("go", 0.0), ("for", 0.3), ("it", 0.6)), until=1.0)
    later = words(("then", 4.4), ("go", 5.0), ("for", 5.3), ("it", 5.6))  # said again, seconds later: new words
    assert [w.text for w in far.commit_through(later, until=6.0)] == [" then", " go", " for", " it"]


def test_a_pause_keeps_the_last_words_before_it_whole_as_context_unless_a_sentence_ended() -> None:
    buffer = AudioBuffer(max_buffer_s=15, preroll_s=0.3, context_s=2.0)
    buffer.add(np.zeros(10 * 16000, dtype=np.float32))
    buffer.add_final(words(("we", 5.0), ("should", 6.5), ("perhaps", 7.2), ("go", 8.0)))
    buffer.cut_before_speech(9 * 16000)  # a pause at 9 s: "perhaps" started within 2 s of it, "should" did not
    assert buffer.start == int(7.1 * 16000) and [w.text for w in buffer.final_words] == [" perhaps", " go"]
    ended = AudioBuffer(max_buffer_s=15, preroll_s=0.3, context_s=2.0)
    ended.add(np.zeros(10 * 16000, dtype=np.float32))
    ended.add_final(words(("we", 5.0), ("should", 6.5), ("perhaps", 7.2), ("go.", 8.0)))
    ended.cut_before_speech(9 * 16000)
    assert ended.start == int(8.7 * 16000)  # only the pre-roll


def test_readings_come_every_delay_but_no_more_often_than_the_floor_and_less_often_when_slow() -> None:
    assert ReadingPace(480, 1200, 960).interval_ms == 960  # the operator's floor over the client's delay
    assert ReadingPace(480, 1200, 80).interval_ms == 480  # no floor: the client's delay
    assert ReadingPace(2400, 1200, 960).interval_ms == 2400  # a client asking for fewer readings gets them
    slow = ReadingPace(480, 1200, 80)
    slow.took(0.4)
    assert slow.interval_ms == 800  # twice the reading's time
    slow.took(2.0)
    assert slow.interval_ms == 1200  # at most the ceiling


def test_speakers_are_numbered_in_order_and_stay_stable() -> None:
    rng = np.random.default_rng(0)
    voices = [rng.normal(size=192) for _ in range(2)]
    speakers = OnlineSpeakers(threshold=0.5)
    noisy = lambda v: v + 0.3 * rng.normal(size=192)  # noqa: E731
    labels = [speakers.assign(noisy(voices[i])) for i in [0, 0, 1, 0, 1, 1]]
    assert labels == [0, 0, 1, 0, 1, 1]


def test_a_moment_whisper_wrote_many_words_into_weighs_once_in_a_speakers_voice() -> None:
    """Whisper looping on a short reading writes a dozen words into a fraction of a second, all over the other
    speaker: embedded one by one, that moment outweighed the first speaker's words and merged the two voices."""
    recent = RecentAudio()
    recent.add(np.concatenate([np.full(3 * 16000, 0.1), np.full(3 * 16000, 0.9)]).astype(np.float32))
    voices = {0.1: np.array([1.0, 0.0]), 0.9: np.array([0.0, 1.0])}  # the fake encoder hears the level
    embedded: list[int] = []

    async def embed(windows: list[np.ndarray]) -> np.ndarray:
        embedded.append(len(windows))
        return np.stack([voices[round(float(np.median(window)), 1)] for window in windows])

    speakers = WordSpeakers(threshold=0.5, embed_voices=embed, recent=recent)
    first = [TimedWord(f" w{i}", 0.8 + 0.3 * i, 1.0 + 0.3 * i) for i in range(3)]  # the first voice, 1-1.6 s
    looped = [TimedWord(" again", 4.0 + 0.02 * i, 4.02 + 0.02 * i) for i in range(12)]  # the second, 4.0-4.24 s
    labels = asyncio.run(speakers.label(first)) + asyncio.run(speakers.label(looped))
    assert labels == [0, 0, 0] + [1] * 12 and embedded == [3, 1]
    assert asyncio.run(speakers.label([TimedWord(" on", 4.1, 4.12)])) == [1] and embedded == [3, 1]  # the last batch's


def test_three_words_in_a_row_that_only_just_meet_a_speaker_are_a_new_one() -> None:
    """A call's first centroid can be a blend of two voices, which the second voice then only just meets: one or
    two such words are a turn's blended edge and keep the label; three in a row are someone else, and never
    moved the first speaker's centroid towards them."""
    first, other = np.eye(3)[0], np.eye(3)[1]
    doubtful = 0.5 * first + np.sqrt(0.75) * other  # similarity 0.5 with the first voice: above 0.45, below 0.55
    speakers = OnlineSpeakers(threshold=0.45)
    assert [speakers.assign(v) for v in (first, doubtful, first, doubtful, doubtful, first)] == [0] * 6
    assert [speakers.assign(v) for v in (doubtful, doubtful, doubtful, doubtful, first)] == [0, 0, 1, 1, 0]
    assert np.allclose(speakers.sums[0] / np.linalg.norm(speakers.sums[0]), first)  # doubtful words never joined


def test_at_most_four_speakers() -> None:
    rng = np.random.default_rng(1)
    speakers = OnlineSpeakers(threshold=0.99)
    labels = [speakers.assign(rng.normal(size=64)) for _ in range(10)]
    assert set(labels) == {0, 1, 2, 3}


def test_query_defaults_and_refusals() -> None:
    query = LiveSessionQuery.model_validate({"sample_rate": "8000", "diarize": "true", "delay_ms": "960"})
    assert query.settings().sample_rate == 8000 and query.settings().diarize and query.delay_ms == 960
    for bad in ({"sample_rate": "11025"}, {"delay_ms": "100"}, {"channels": "3"}, {"encoding": "mp3"},
                {"multichannel": "true"}, {"turn_detection": "vad"}, {"language": "en"}):  # fmt: skip
        with pytest.raises(ValidationError):
            LiveSessionQuery.model_validate(bad)


def test_smart_turn_features_match_pipecats_own_extractor() -> None:
    """The contract with pipecat-ai's model: the features its own extractor computes for Smart Turn."""
    from pipecat.audio.turn.smart_turn._whisper_features import compute_whisper_log_mel_features

    from deployments.live._smart_turn import SmartTurnModel

    model = SmartTurnModel()
    speech = tone(8.0, 16000) * np.linspace(0, 1, 8 * 16000, dtype=np.float32)
    assert np.abs(model.features(speech) - compute_whisper_log_mel_features(speech, do_normalize=True)).max() < 1e-4
    short = speech[:16000]  # padded with silence in front, as pipecat does
    padded = np.pad(short, (7 * 16000, 0))
    assert np.abs(model.features(short) - compute_whisper_log_mel_features(padded, do_normalize=True)).max() < 1e-4
    assert 0.0 <= model.probability(short) <= 1.0


def test_the_vad_scores_a_stream_as_it_would_score_the_audio_in_one_piece() -> None:
    from deployments.live._speech_activity import SpeechDetector

    call, _ = sf.read(str(pyannote_sample()), dtype="float32")
    whole, pieces = SpeechDetector(), SpeechDetector()
    assert np.allclose(np.concatenate([whole.probabilities(call)]), np.concatenate(
        [pieces.probabilities(call[i : i + 1000]) for i in range(0, len(call), 1000)]), atol=1e-5)  # fmt: skip
    boundaries = SpeechDetector().feed(call)
    assert [b.kind for b in boundaries][:2] == ["start", "end"] and boundaries[0].sample / 16000 < 7.0
