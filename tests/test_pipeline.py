"""The pipeline deployment's logic without Ray: real decoding and chunking of real files, fake Transcriber
and Diarizer handles. Covers the one-way path's rules: bounded chunks in flight, the decoded spool, the
file's language, progress, and duration limits that stop decoding early; the analysis after diarization, and
emotions heard by an operator's audio classifier over the segments' spans instead of the LLM's."""

import asyncio
import time
from pathlib import Path

import numpy as np
import pytest
from ray import exceptions as ray_errors

from deployments.analysis.errors import AnalysisTimeout, AudioEmotionsUnavailable, LLMBackendError, analysis_failure
from deployments.config import ChunkingConfig, LimitsConfig, PipelineConfig
from deployments.errors import AudioRejectedError
from deployments.files._assembly import main_language
from deployments.files._emotions import batches, segment_samples
from deployments.files._file_run import FileRun
from deployments.files.decoding import decode_windows
from deployments.files.pipeline import TranscriptionPipeline
from deployments.types import (
    EMOTION_LABELS,
    SAMPLE_RATE,
    Analysis,
    AnalysisOptions,
    BatchHints,
    ChunkOptions,
    ChunkTranscript,
    Diarization,
    DiarizationOptions,
    DiarizedSegment,
    DiarizedTranscript,
    Emotion,
    PipelineProgress,
    PipelineRequest,
    PipelineText,
    Segment,
    SpeakerTurn,
    Transcript,
    TranscriptionOptions,
)
from devkit.media import encode
from tests.fakes import Remote, replica_class


class _Transcriber:
    """'Detects' German in a chunk whose first sample is loud (unsurely below 0.8), English otherwise; counts
    chunks in flight."""

    def __init__(self, delay_s: float = 0.0) -> None:
        self.calls: list[ChunkOptions] = []
        self.interactive: list[bool] = []
        self.more_coming: list[bool] = []
        self.senders: list[str | None] = []
        self.delay_s = delay_s
        self.in_flight = self.most_in_flight = 0
        self.transcribe_chunk = Remote(self._transcribe)

    async def _transcribe(self, chunk: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
        self.calls.append(options)
        self.senders.append(hints.sender)
        self.interactive.append(hints.interactive)
        self.more_coming.append(hints.more_coming)
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(self.delay_s)
        self.in_flight -= 1
        language = options.language or ("de" if chunk[0] > 0.5 else "en")
        probability = None if options.language else 0.3 if 0.5 < chunk[0] < 0.8 else 0.95
        segment = Segment(
            id=0, seek=0, start=0.0, end=1.0, text=f" [{language}]", tokens=[], temperature=0.0,
            avg_logprob=0.0, compression_ratio=1.0, no_speech_prob=0.0,
        )  # fmt: skip
        return ChunkTranscript(language=language, language_probability=probability, segments=[segment])


class _Diarizer:
    def __init__(self) -> None:
        self.samples: np.ndarray | None = None
        self.diarize_file = Remote(self._diarize)

    async def _diarize(self, path: str, options: DiarizationOptions) -> Diarization:
        self.samples = np.fromfile(path, dtype=np.float32)
        turn = SpeakerTurn(speaker="SPEAKER_00", start=0.0, end=len(self.samples) / SAMPLE_RATE)
        return Diarization(turns=[turn], exclusive_turns=[turn])


def _pipeline(
    tmp_path: Path,
    transcriber=None,
    diarizer=None,
    language_per_chunk: bool = True,
    **limits,
) -> TranscriptionPipeline:
    chunking = ChunkingConfig(
        vad_filter=False, max_chunk_s=5, max_chunks_in_flight=3, language_per_chunk=language_per_chunk
    )
    config = PipelineConfig(chunking=chunking, limits=LimitsConfig(**limits))
    return replica_class(TranscriptionPipeline)(transcriber or _Transcriber(), diarizer or _Diarizer(), config)  # type: ignore[arg-type]  # fakes for the Ray handles


def _decoded_copies(tmp_path: Path) -> list[Path]:
    return list(tmp_path.glob("*.f32"))


def _wav(tmp_path: Path, levels: list[tuple[float, float]]) -> Path:
    """A WAV of constant stretches: (level, seconds) each."""
    samples = np.concatenate([np.full(int(seconds * SAMPLE_RATE), level, np.float32) for level, seconds in levels])
    path = tmp_path / "audio.wav"
    path.write_bytes(encode(samples, "wav"))
    return path


def _request(path: Path, language: str | None = None, diarize: bool = False) -> PipelineRequest:
    return PipelineRequest(
        source_path=str(path),
        max_bytes=1 << 30,
        options=TranscriptionOptions(language=language),
        diarization=DiarizationOptions() if diarize else None,
    )


def test_each_chunk_keeps_its_language_and_the_result_has_the_language_of_most_speech(tmp_path: Path) -> None:
    """Speech whose language changes keeps each part's words: nothing is decoded again (or translated)."""
    transcriber = _Transcriber()
    path = _wav(tmp_path, [(0.9, 5.0), (0.0, 15.0)])  # 5 s "German", then 15 s "English"
    transcript = asyncio.run(_pipeline(tmp_path, transcriber).transcribe(_request(path)))
    assert isinstance(transcript, Transcript)
    assert transcript.language == "en"
    assert [segment.text for segment in transcript.segments] == [" [de]"] + [" [en]"] * 3
    assert [segment.language for segment in transcript.segments] == ["de", "en", "en", "en"]
    assert [call.language for call in transcriber.calls] == [None] * 4
    assert _decoded_copies(tmp_path) == []


def test_the_main_language_is_the_one_of_most_speech_not_of_most_chunks() -> None:
    transcripts = [ChunkTranscript(language=code, segments=[]) for code in ("en", "de", "en")]
    assert main_language(transcripts, [((0, 100),), ((100, 600),), ((600, 700), (800, 900))]) == "de"


def test_a_chunk_detected_unsurely_is_decoded_again_in_the_language_of_most_speech(tmp_path: Path) -> None:
    transcriber = _Transcriber()
    path = _wav(tmp_path, [(0.9, 5.0), (0.6, 5.0), (0.0, 15.0)])  # "German", unsure "German", "English"
    transcript = asyncio.run(_pipeline(tmp_path, transcriber).transcribe(_request(path)))
    assert isinstance(transcript, Transcript)
    assert transcript.language == "en"
    assert [segment.language for segment in transcript.segments] == ["de", "en", "en", "en", "en"]
    assert [call.language for call in transcriber.calls] == [None] * 5 + ["en"]


def test_with_one_language_per_file_other_chunks_are_decoded_again_in_the_main_one(tmp_path: Path) -> None:
    transcriber = _Transcriber()
    pipeline = _pipeline(tmp_path, transcriber, language_per_chunk=False)
    path = _wav(tmp_path, [(0.9, 5.0), (0.0, 15.0)])  # 5 s "German", then 15 s "English"
    transcript = asyncio.run(pipeline.transcribe(_request(path)))
    assert transcript.language == "en"
    assert [segment.text for segment in transcript.segments] == [" [en]"] * 4
    assert [call.language for call in transcriber.calls] == [None] * 4 + ["en"]  # one chunk decoded again
    assert [segment.start for segment in transcript.segments] == [0.0, 5.0, 10.0, 15.0]  # the file's timeline
    assert _decoded_copies(tmp_path) == []  # the decoded copy is gone


def test_a_given_language_is_used_for_every_chunk_and_nothing_is_spooled(tmp_path: Path) -> None:
    transcriber = _Transcriber()
    transcript = asyncio.run(_pipeline(tmp_path, transcriber).transcribe(_request(_wav(tmp_path, [(0.9, 8.0)]), "fr")))
    assert transcript.language == "fr"
    assert [call.language for call in transcriber.calls] == ["fr", "fr"]
    assert _decoded_copies(tmp_path) == []  # never written


def test_at_most_max_chunks_in_flight_are_sent_at_once(tmp_path: Path) -> None:
    transcriber = _Transcriber(delay_s=0.02)
    path = _wav(tmp_path, [(0.1, 60.0)])  # 12 chunks of 5 s
    asyncio.run(_pipeline(tmp_path, transcriber).transcribe(_request(path, "en")))
    assert len(transcriber.calls) == 12 and transcriber.most_in_flight == 3


def test_each_chunk_says_whether_more_are_on_their_way(tmp_path: Path) -> None:
    """So that the Transcriber can hold an idle engine for a fuller batch: all but the file's last say so."""
    transcriber = _Transcriber()
    asyncio.run(_pipeline(tmp_path, transcriber).transcribe(_request(_wav(tmp_path, [(0.1, 22.0)]), "en")))
    assert transcriber.more_coming == [True, True, True, True, False]


def test_the_last_chunk_of_a_file_says_more_are_coming_while_other_files_are_decoded(tmp_path: Path) -> None:
    transcriber = _Transcriber()
    pipeline = _pipeline(tmp_path, transcriber)
    pipeline.files_decoding[False] = 1  # another job's file is being decoded in this replica
    asyncio.run(pipeline.transcribe(_request(_wav(tmp_path, [(0.1, 4.0)]), "en")))
    assert transcriber.more_coming == [True]
    assert pipeline.files_decoding == {True: 0, False: 1}  # its own count came and went


def test_the_diarizer_reads_the_same_decoded_audio_from_the_spool(tmp_path: Path) -> None:
    diarizer = _Diarizer()
    path = _wav(tmp_path, [(0.2, 3.0), (0.0, 4.0)])
    result = asyncio.run(_pipeline(tmp_path, diarizer=diarizer).transcribe(_request(path, "en", diarize=True)))
    assert isinstance(result, DiarizedTranscript)
    assert diarizer.samples is not None
    assert np.array_equal(diarizer.samples, np.concatenate(list(decode_windows(path))))
    assert {segment.speaker for segment in result.segments} == {"speaker_0"}
    assert _decoded_copies(tmp_path) == []


def test_progress_rises_then_the_result_comes_last(tmp_path: Path) -> None:
    async def events() -> list:
        pipeline = _pipeline(tmp_path, _Transcriber(delay_s=0.01))
        return [event async for event in pipeline.transcribe_streaming(_request(_wav(tmp_path, [(0.1, 30.0)])))]

    received = asyncio.run(events())
    shares = [event.share for event in received[:-1]]
    assert all(isinstance(event, PipelineProgress) for event in received[:-1]) and len(shares) == 6
    assert shares == sorted(shares) and shares[-1] < 1.0
    assert received[-1].duration == 30.0


def _streamed(tmp_path: Path, levels: list[tuple[float, float]], language_per_chunk: bool = True) -> list:
    async def events() -> list:
        pipeline = _pipeline(tmp_path, _Transcriber(delay_s=0.01), language_per_chunk=language_per_chunk)
        request = _request(_wav(tmp_path, levels)).model_copy(update={"stream_text": True})
        return [event async for event in pipeline.transcribe_streaming(request)]

    return asyncio.run(events())


def test_streamed_text_keeps_each_chunks_language_and_the_result_has_the_language_of_most_speech(
    tmp_path: Path,
) -> None:
    """An unsure chunk follows the language of most of the speech streamed before it."""
    received = _streamed(tmp_path, [(0.9, 5.0), (0.1, 10.0), (0.6, 5.0), (0.9, 5.0)])  # de, en, unsure de, de
    texts = [event.text for event in received if isinstance(event, PipelineText)]
    assert texts == [" [de]", " [en]", " [en]", " [en]", " [de]"]
    result = received[-1]
    assert result.language == "en" and result.text == "".join(texts).strip()
    assert [segment.language for segment in result.segments] == ["de", "en", "en", "en", "de"]
    assert _decoded_copies(tmp_path) == []


def test_streamed_text_with_one_language_per_file_is_in_the_first_chunks_language(tmp_path: Path) -> None:
    """Text goes out chunk by chunk, before the run ends; the language is the first chunk's, and a later
    chunk heard in another one is decoded again in it before its text goes out, so the pieces joined are
    the result's text."""

    async def events() -> list:
        pipeline = _pipeline(tmp_path, _Transcriber(delay_s=0.01), language_per_chunk=False)
        path = _wav(tmp_path, [(0.1, 10.0), (0.9, 5.0), (0.1, 5.0)])  # "English", "German", "English"
        request = _request(path).model_copy(update={"stream_text": True})
        return [event async for event in pipeline.transcribe_streaming(request)]

    received = asyncio.run(events())
    texts = [event.text for event in received if isinstance(event, PipelineText)]
    assert texts == [" [en]"] * 4
    assert received.index(next(e for e in received if isinstance(e, PipelineText))) < len(received) - 2
    assert received[-1].language == "en" and received[-1].text == "".join(texts).strip()
    assert _decoded_copies(tmp_path) == []


def test_profanity_is_masked_in_text_segments_and_words(tmp_path: Path) -> None:
    from deployments.files._profanity import mask_text, mask_transcript
    from deployments.types import Transcript, Word

    text = " Oh shit, what the fuck. Assess this class in Scunthorpe."
    assert mask_text(text, "en") == " Oh ****, what the ****. Assess this class in Scunthorpe."
    assert mask_text(" Merde alors, sh1t!", "fr") == " ***** alors, ****!"  # French list, English too, leetspeak
    segment = Segment(id=0, seek=0, start=0.0, end=1.0, text=" Shit happens.", tokens=[], temperature=0.0,
                      avg_logprob=0.0, compression_ratio=1.0, no_speech_prob=0.0)  # fmt: skip
    words = [Word(word=" Shit", start=0.0, end=0.4, prob=0.9), Word(word=" happens.", start=0.5, end=0.9, prob=0.9)]
    masked = mask_transcript(Transcript(language="en", duration=1.0, segments=[segment], words=words))
    assert masked.text == "**** happens." and [w.word for w in masked.words] == [" ****", " happens."]


def test_a_file_shorter_than_the_minimum_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AudioRejectedError, match="too short"):
        asyncio.run(_pipeline(tmp_path).transcribe(_request(_wav(tmp_path, [(0.1, 0.2)]))))


def test_a_declared_duration_over_the_limit_is_refused_before_decoding(tmp_path: Path) -> None:
    path = _wav(tmp_path, [(0.0, 30.0)])
    with pytest.raises(AudioRejectedError, match=r"audio is too long \(30 s\): the maximum is 20 s"):
        asyncio.run(_pipeline(tmp_path, max_duration_s=20).transcribe(_request(path)))


def test_decoding_stops_at_the_duration_limit_without_reading_the_rest() -> None:
    """A stream without a trustworthy header: decoding itself stops one window past the limit."""
    ten_minutes = encode(np.zeros(600 * SAMPLE_RATE, np.float32), "wav")
    windows = decode_windows(ten_minutes, window_s=10, max_duration_s=60)
    started, decoded = time.perf_counter(), 0
    with pytest.raises(AudioRejectedError, match="the maximum is 60 s"):
        for window in windows:
            decoded += len(window)
    assert decoded <= 60 * SAMPLE_RATE  # nothing past the limit was handed on
    full = time.perf_counter() - started
    assert full < 5  # stopped early (a full decode of 10 minutes is not needed to know)


def test_each_files_chunks_name_one_sender_of_their_own(tmp_path: Path) -> None:
    """The Transcriber lets senders take turns, so a file's chunks must say they are that file's."""
    transcriber = _Transcriber()
    pipeline = _pipeline(tmp_path, transcriber)
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    requests = [_request(_wav(tmp_path / name, [(0.1, 10.0)]), "en") for name in ("a", "b")]

    async def both() -> None:
        await asyncio.gather(*(pipeline.transcribe(request) for request in requests))

    asyncio.run(both())
    assert len(transcriber.senders) == 4 and None not in transcriber.senders  # two chunks per file
    assert sorted(transcriber.senders.count(sender) for sender in set(transcriber.senders)) == [2, 2]


def test_main_language_ties_go_to_the_earliest_chunk() -> None:
    transcripts = [ChunkTranscript(language=code, segments=[]) for code in ("de", "en")]
    assert main_language(transcripts, [((0, 100),), ((100, 150), (180, 230))]) == "de"


def test_a_failed_run_cancels_its_chunks_and_removes_the_decoded_spool(tmp_path: Path) -> None:
    class _Failing(_Transcriber):
        async def _transcribe(self, chunk: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
            raise RuntimeError("engine failed")

    transcriber = _Failing()
    transcriber.transcribe_chunk = Remote(transcriber._transcribe)
    run = FileRun(_pipeline(tmp_path, transcriber), _request(_wav(tmp_path, [(0.1, 12.0)])))
    with pytest.raises(RuntimeError, match="engine failed"):
        asyncio.run(run.result())
    assert _decoded_copies(tmp_path) == []


def test_rejections_survive_the_trip_between_processes() -> None:
    """Ray rebuilds a replica's exception from its args in the caller's process: status and message too."""
    import pickle

    from deployments.errors import UrlRejectedError
    from deployments.files.decoding import decode_failed

    for error in (decode_failed("no audio track"), UrlRejectedError("too big", status=413)):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error) and copy.status == error.status


def test_a_chunk_whose_transcriber_replica_died_is_sent_again(tmp_path: Path) -> None:
    """Serve replaces a dead replica and its handle waits for the new one: the chunk is resent (after 1 s)."""
    transcriber = _Transcriber()
    answer = transcriber._transcribe
    deaths: list[int] = []

    async def dies_once_per_chunk(chunk: np.ndarray, options: ChunkOptions, hints: BatchHints) -> ChunkTranscript:
        if len(deaths) < 2:
            deaths.append(1)
            raise ray_errors.ActorDiedError()
        return await answer(chunk, options, hints)

    transcriber.transcribe_chunk = Remote(dies_once_per_chunk)
    request = _request(_wav(tmp_path, [(0.1, 10.0)]), "en").model_copy(update={"interactive": True})
    transcript = asyncio.run(_pipeline(tmp_path, transcriber).transcribe(request))
    assert [segment.text for segment in transcript.segments] == [" [en]"] * 2 and len(deaths) == 2
    assert transcriber.interactive == [True, True]  # a synchronous request's chunks go ahead of jobs'


class _RayTaskError(Exception):
    cause: Exception


class _Analyzer:
    """Answers a fixed analysis, or raises `error` as Ray would hand it over: wrapped, the original in `.cause`."""

    def __init__(self, error: Exception | None = None) -> None:
        self.asked: list[tuple[object, AnalysisOptions]] = []
        self.error = error
        self.analyze = Remote(self._analyze)

    async def _analyze(self, transcript: object, options: AnalysisOptions) -> Analysis:
        self.asked.append((transcript, options))
        if self.error is not None:
            wrapped = type("RayTaskError(LLMBackendError)", (_RayTaskError, type(self.error)), {})("in a replica")
            wrapped.cause = self.error
            raise wrapped
        return Analysis(llm_output="an answer", llm_input_tokens=9, llm_output_tokens=2)


def test_an_analysis_is_asked_after_diarization_and_carried_by_the_result(tmp_path: Path) -> None:
    analyzer = _Analyzer()
    pipeline = _pipeline(tmp_path)
    pipeline.analyzer = analyzer  # type: ignore[assignment]  # a fake for the Ray handle
    options = AnalysisOptions(prompt="Who speaks?", roles="auto")
    request = _request(_wav(tmp_path, [(0.1, 3.0)]), diarize=True).model_copy(update={"analysis": options})
    result = asyncio.run(pipeline.transcribe(request))
    assert result.analysis is not None
    assert isinstance(result, DiarizedTranscript) and result.analysis.llm_output == "an answer"
    ((asked, asked_options),) = analyzer.asked
    assert isinstance(asked, DiarizedTranscript) and asked.analysis is None and asked_options == options
    plain = asyncio.run(pipeline.transcribe(_request(_wav(tmp_path, [(0.1, 3.0)]))))
    assert plain.analysis is None and len(analyzer.asked) == 1  # nothing asked, nothing analysed


def test_an_analysis_error_reaches_the_caller_as_itself(tmp_path: Path) -> None:
    pipeline = _pipeline(tmp_path)
    pipeline.analyzer = _Analyzer(LLMBackendError("down"))  # type: ignore[assignment]  # a fake for the Ray handle
    request = _request(_wav(tmp_path, [(0.1, 3.0)])).model_copy(update={"analysis": AnalysisOptions(prompt="Hi")})
    with pytest.raises(LLMBackendError) as raised:
        asyncio.run(pipeline.transcribe(request))
    assert type(raised.value) is LLMBackendError and str(raised.value) == "down"  # unwrapped, for the edge
    assert analysis_failure(raised.value) is raised.value


class _AudioEmotions:
    """Hears 'angry' in a loud piece and 'neutral' in a quiet one; records the pieces it was sent, per call."""

    def __init__(self, error: Exception | None = None, delay_s: float = 0.0) -> None:
        self.calls: list[list[np.ndarray]] = []
        self.error = error
        self.delay_s = delay_s
        self.classify = Remote(self._classify)

    async def _classify(self, pieces: list[np.ndarray]) -> list[Emotion | None]:
        self.calls.append(pieces)
        await asyncio.sleep(self.delay_s)
        if self.error is not None:
            wrapped = type("RayTaskError(AudioEmotionsUnavailable)", (_RayTaskError, type(self.error)), {})("replica")
            wrapped.cause = self.error
            raise wrapped
        return [_heard("angry" if float(np.mean(piece)) > 0.3 else "neutral") for piece in pieces]


def _heard(label: str) -> Emotion:
    return Emotion(label=label, confidence=1.0, probs={name: float(name == label) for name in EMOTION_LABELS})


def _with_audio_emotions(tmp_path: Path, audio_emotions: _AudioEmotions) -> tuple[TranscriptionPipeline, _Analyzer]:
    pipeline, analyzer = _pipeline(tmp_path), _Analyzer()
    pipeline.analyzer, pipeline.audio_emotions = analyzer, audio_emotions  # type: ignore[assignment]  # fakes for the Ray handles
    return pipeline, analyzer


def _emotions_request(tmp_path: Path, **options: object) -> PipelineRequest:
    """Three diarized segments (0-1 s quiet, 5-6 s and 10-11 s loud), with an analysis that asks for emotions."""
    request = _request(_wav(tmp_path, [(0.1, 3.0), (0.6, 8.0)]), diarize=True)
    return request.model_copy(update={"analysis": AnalysisOptions(emotions=True, **options)})


def test_with_an_audio_classifier_emotions_are_heard_over_the_segments_spans_and_not_asked_of_the_llm(
    tmp_path: Path,
) -> None:
    audio_emotions = _AudioEmotions()
    pipeline, analyzer = _with_audio_emotions(tmp_path, audio_emotions)
    result = asyncio.run(pipeline.transcribe(_emotions_request(tmp_path, prompt="Who speaks?", roles="auto")))
    assert isinstance(result, DiarizedTranscript) and result.analysis is not None
    assert [e.label if e else None for e in result.analysis.emotions] == ["neutral", "angry", "angry"]
    assert result.analysis.llm_output == "an answer" and result.analysis.llm_input_tokens == 9  # the LLM's part
    ((_, asked),) = analyzer.asked
    assert asked == AnalysisOptions(prompt="Who speaks?", roles="auto", emotions=False)  # not asked for emotions
    (pieces,) = audio_emotions.calls  # each segment's own samples, read from the decoded spool
    spans = [(segment.start, segment.end) for segment in result.segments]
    assert [len(piece) for piece in pieces] == [
        int(end * SAMPLE_RATE) - int(start * SAMPLE_RATE) for start, end in spans
    ]
    assert [float(np.mean(piece)) for piece in pieces] == pytest.approx([0.1, 0.6, 0.6], abs=1e-3)
    assert _decoded_copies(tmp_path) == []


def test_emotions_alone_with_an_audio_classifier_ask_nothing_of_the_llm(tmp_path: Path) -> None:
    pipeline, analyzer = _with_audio_emotions(tmp_path, _AudioEmotions())
    result = asyncio.run(pipeline.transcribe(_emotions_request(tmp_path)))
    assert result.analysis is not None and len(result.analysis.emotions) == len(result.segments) == 3
    assert analyzer.asked == [] and result.analysis.llm_input_tokens == result.analysis.llm_output_tokens == 0


def test_without_an_audio_classifier_the_llm_judges_the_emotions(tmp_path: Path) -> None:
    pipeline, analyzer = _pipeline(tmp_path), _Analyzer()
    pipeline.analyzer = analyzer  # type: ignore[assignment]  # a fake for the Ray handle
    asyncio.run(pipeline.transcribe(_emotions_request(tmp_path, prompt="Who speaks?")))
    ((_, asked),) = analyzer.asked
    assert asked == AnalysisOptions(prompt="Who speaks?", emotions=True)


def test_an_audio_classifier_error_reaches_the_caller_as_itself(tmp_path: Path) -> None:
    pipeline, _ = _with_audio_emotions(tmp_path, _AudioEmotions(AudioEmotionsUnavailable("no model")))
    with pytest.raises(AudioEmotionsUnavailable) as raised:
        asyncio.run(pipeline.transcribe(_emotions_request(tmp_path)))
    assert type(raised.value) is AudioEmotionsUnavailable and str(raised.value) == "no model"
    assert _decoded_copies(tmp_path) == []


def test_the_audio_emotions_of_a_synchronous_request_keep_to_its_analysis_budget(tmp_path: Path) -> None:
    pipeline, _ = _with_audio_emotions(tmp_path, _AudioEmotions(delay_s=5.0))
    started = time.monotonic()
    with pytest.raises(AnalysisTimeout):
        asyncio.run(pipeline.transcribe(_emotions_request(tmp_path, timeout_s=0.2)))
    assert time.monotonic() - started < 4.0


def test_segments_go_to_the_classifier_in_batches_of_bounded_audio(tmp_path: Path) -> None:
    segments = [DiarizedSegment(id=i, start=30.0 * i, end=30.0 * i + 25, text="", speaker="s") for i in range(5)]
    segments.append(DiarizedSegment(id=5, start=200.0, end=300.0, text="", speaker="s"))  # heard: its middle 30 s
    sent = list(batches(segments))
    assert [len(batch) for batch in sent] == [2, 2, 2]  # the last: 25 s and the 100 s segment's heard 30 s
    assert [segment for batch in sent for segment in batch] == segments
    assert list(batches([])) == []
    spool = tmp_path / "decoded.f32"
    np.arange(3 * SAMPLE_RATE, dtype=np.float32).tofile(spool)
    piece = segment_samples(spool, 1.0, 2.5)
    assert piece[0] == SAMPLE_RATE and len(piece) == int(1.5 * SAMPLE_RATE)
    assert len(segment_samples(spool, 2.5, 4.0)) == SAMPLE_RATE // 2  # a span past the end: what there is
