"""The parts of a live session, without models or Ray: PCM decoding, the commit policy, online speaker
labels, the query's validation, and the Smart Turn model's input contract."""

import asyncio
import functools
import warnings

import numpy as np
import pytest
import soundfile as sf
from pydantic import ValidationError

from deployments.live._audio import InvalidAudioError, PcmDecoder
from deployments.live._buffer import AudioBuffer, RecentAudio
from deployments.live._final_pass import FinalPass, SecondReadings, SpokenWord, Utterance
from deployments.live._local_agreement import LocalAgreement, TimedWord
from deployments.live._speakers import OnlineSpeakers, WordSpeakers
from deployments.live.events import SessionSettings
from deployments.types import ChunkOptions, ChunkTranscript, Word
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


async def _read(final: FinalPass, until: int, voiced_end: int) -> list[SpokenWord]:
    return await final.settle(final.take(until, voiced_end, "en"))


def _final_pass(
    behind_s: float, reading: list[tuple[str, float, float]], voiced_end_s: float = 4.0
) -> tuple[list[str], int]:
    """An utterance of 5 s streamed as "a b c", read again by a fake Whisper as `reading`."""
    calls = []

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        calls.append(options)
        words = [Word(word=f" {text}", start=start, end=end) for text, start, end in reading]
        return ChunkTranscript(language="en", segments=[], words=words)

    final = FinalPass(transcribe, "full", 0.3, 5.0, SecondReadings(lambda: behind_s, lambda: 0))
    final.add(np.zeros(5 * 16_000, np.float32))
    final.add_streamed([TimedWord(f" {t}", 1.0 + n, 1.5 + n) for n, t in enumerate("abc")], [None] * 3)
    spoken = asyncio.run(_read(final, 5 * 16_000, int(voiced_end_s * 16_000)))
    return [s.word.text.strip() for s in spoken], len(calls)


def test_an_utterance_read_again_replaces_its_streamed_words_unless_the_session_is_behind() -> None:
    reading = [("a", 1.0, 1.5), ("b", 2.0, 2.5), ("see", 3.0, 3.5), ("Thank", 4.3, 4.5), ("you.", 4.5, 4.7)]
    assert _final_pass(0.0, reading) == (["a", "b", "see"], 1)  # nothing after the voice's end (+0.2 s)
    assert _final_pass(3.0, reading) == (["a", "b", "c"], 0)  # behind: not read again
    assert _final_pass(0.0, reading[:1]) == (["a", "b", "c"], 1)  # the reading lost most words
    assert _final_pass(0.0, reading, voiced_end_s=0.2) == ([], 0)  # every streamed word after the voice's end


def test_an_utterance_ending_while_two_wait_for_their_second_reading_keeps_its_streamed_words() -> None:
    """A session's second readings do not queue up: when the Transcriber is too busy to finish one before the
    next two utterances end, the second of those keeps its streamed words (sessions keep up rather than queue)."""

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        return ChunkTranscript(language="en", segments=[], words=[Word(word=" A", start=1.0, end=1.5)])

    async def run() -> list[bool]:
        final = FinalPass(transcribe, "full", 0.3, 5.0)
        taken = []
        for second in range(4):
            final.add(np.zeros(5 * 16_000, np.float32))
            final.add_streamed([TimedWord(" a", 5 * second + 1.0, 5 * second + 1.5)], [None])
            taken.append(final.take(5 * (second + 1) * 16_000, 5 * (second + 1) * 16_000, "en"))
            if second == 2:  # the first utterance's reading is done after the third ended
                await final.settle(taken[0])
        return [utterance.audio is not None for utterance in taken]

    assert asyncio.run(run()) == [True, True, False, True]


def test_the_sessions_of_a_replica_count_their_second_readings_together() -> None:
    """Sessions on one replica share its Transcriber: two utterances of any of them waiting for a second reading
    (or 2 s of their audio waiting for its first) and the next to end, in whichever session, keeps its streamed
    words. Counted per session, four tiny.en sessions on two cores flushed in 5.3-8.0 s; counted together, 2.7-5.0.
    """

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        return ChunkTranscript(language="en", segments=[], words=[Word(word=" A", start=1.0, end=1.5)])

    finals: list[FinalPass] = []
    behind = [0.0]
    readings = SecondReadings(lambda: behind[0], lambda: sum(final.waiting for final in finals))
    finals += [FinalPass(transcribe, "full", 0.3, 5.0, readings) for _ in range(4)]

    def ends(final: FinalPass) -> Utterance:
        final.add(np.zeros(5 * 16_000, np.float32))
        final.add_streamed([TimedWord(" a", final.end / 16_000 - 4.0, final.end / 16_000 - 3.5)], [None])
        return final.take(final.end, final.end, "en")

    first, second, third = (ends(final) for final in finals[:3])
    assert first.audio is not None and second.audio is not None and third.audio is None  # two wait: the third keeps
    asyncio.run(finals[0].settle(first))
    assert ends(finals[3]).audio is not None  # one was read: one waits
    behind[0] = 2.5
    assert ends(finals[1]).audio is None  # one waits, but the replica's sessions are 2.5 s behind


def test_at_the_end_of_input_the_last_utterance_is_read_again_only_when_none_waits() -> None:
    """Sessions ending together (four tiny.en sessions on two cores), each reading its tail in a second reading,
    two at a time, put ~3 s on clients waiting for the end: there, one utterance of the replica's waiting is
    enough for the tail to go to a streaming reading (the channel then takes the utterance as mid-session),
    while mid-session two are."""

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        return ChunkTranscript(language="en", segments=[], words=[Word(word=" A", start=1.0, end=1.5)])

    waiting = [0]
    final = FinalPass(transcribe, "full", 0.3, 5.0, SecondReadings(lambda: 0.0, lambda: waiting[0]))
    final.add(np.zeros(5 * 16_000, np.float32))
    final.add_streamed([TimedWord(" a", 1.0, 1.5)], [None])
    assert final.will_read(final.end, final.end)  # nothing waits
    waiting[0] = 1
    assert not final.will_read(final.end, final.end)  # another session's utterance waits
    assert final.take(final.end, final.end, "en", unread_tail=True).audio is None
    final.add(np.zeros(5 * 16_000, np.float32))
    final.add_streamed([TimedWord(" a", 6.0, 6.5)], [None])
    assert final.take(final.end, final.end, "en").audio is not None  # mid-session: one waiting is no reason


def test_streamed_words_after_the_voices_end_never_reach_the_final_transcript() -> None:
    """Whisper writes "Thank you." into the silence after speech; when the session is behind (no second reading)
    the streamed words are final, and those after the voice's end are dropped; a second reading's span ends
    with the last voiced word's, not with theirs."""

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        spoken = [("a", 1.0, 1.5), ("b", 2.0, 2.5), ("c", 3.0, 3.5), ("Thank", 3.9, 4.2), ("you.", 4.2, 4.4)]
        return ChunkTranscript(
            language="en", segments=[], words=[Word(word=f" {t}", start=s, end=e) for t, s, e in spoken]
        )

    for behind_s, readings in ((3.0, 0), (0.0, 1)):
        final = FinalPass(transcribe, "full", 0.3, 5.0, SecondReadings(functools.partial(float, behind_s), lambda: 0))
        final.add(np.zeros(6 * 16_000, np.float32))
        streamed = [TimedWord(f" {t}", 0.5 + n, 1.0 + n) for n, t in enumerate("abc")]
        streamed += [TimedWord(" Thank", 4.3, 4.6), TimedWord(" you.", 4.6, 4.9)]
        final.add_streamed(streamed, [None] * len(streamed))
        spoken = asyncio.run(_read(final, 6 * 16_000, int(3.5 * 16_000)))
        assert [s.word.text.strip() for s in spoken] == ["a", "b", "c"], (behind_s, readings)


def _second_utterance(first: str, second: str, reading: list[tuple[str, float, float]]) -> list[str]:
    """Two utterances of 5 s each, streamed as `first` (in 0-5 s) and `second` (in 5-10 s); the first is read
    again as streamed, the second, with the first as its context, by a fake Whisper as `reading`."""
    streamed = [
        [TimedWord(f" {w}", offset + n * 0.5, offset + n * 0.5 + 0.4) for n, w in enumerate(text.split())]
        for offset, text in ((1.0, first), (6.0, second))
    ]
    readings = [[(w.text.strip(), w.start, w.end) for w in streamed[0]], reading]

    async def transcribe(samples: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        words = [Word(word=f" {text}", start=start, end=end) for text, start, end in readings.pop(0)]
        return ChunkTranscript(language="en", segments=[], words=words)

    final = FinalPass(transcribe, "full", 0.3, 5.0)
    final.add(np.zeros(10 * 16_000, np.float32))
    for timed in streamed:
        final.add_streamed(timed, [None] * len(timed))
    asyncio.run(_read(final, 5 * 16_000, 5 * 16_000))
    return [s.word.text.strip() for s in asyncio.run(_read(final, 10 * 16_000, 10 * 16_000))]


def test_words_a_reading_moves_across_a_short_pause_stay_with_their_utterance() -> None:
    """Issue 50: nexara's 220 ms pauses cut speech into short utterances, and the reading of one (after its
    context) moves words across the pause both ways; their text keeps them where they were said."""
    said = [("we", 1.0, 1.4), ("have", 1.5, 1.9), ("a", 4.8, 5.1), ("group", 5.1, 5.6), ("here", 6.0, 6.4)]
    assert _second_utterance("we have", "a group here", said) == ["a", "group", "here"]  # "a" read before it
    moved = [("we", 1.0, 1.4), ("have", 5.0, 5.3), ("a", 6.0, 6.2), ("group", 6.3, 6.6)]
    assert _second_utterance("we have", "a group", moved) == ["a", "group"]  # "have" read after it
    again = [("thank", 1.0, 1.4), ("you", 4.7, 5.0), ("thank", 5.0, 5.4), ("you", 6.0, 6.4)]
    assert _second_utterance("thank you", "thank you", again) == ["thank", "you"]  # said twice: kept twice
