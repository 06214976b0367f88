"""Multichannel files (`multichannel=true`): each channel transcribed on its own, then merged by time.

A call recording usually holds one party per channel, the most exact diarization there is. The file is decoded
once into one 16 kHz mono copy per channel beside it (spooled like the decoded copies, so whoever removes the
input removes them), each copy runs as a file of its own (`FileRun`: chunks, Whisper, and with
`within_channels` the Diarizer), and the results are merged: every segment and word tagged with its `channel`.
With diarization a channel is a speaker, `channel_0`, `channel_1`, ... unless speakers are told apart within
each channel (Deepgram's `diarize` with `multichannel`), whose labels then name their channel. Each channel is
charged (`billed_seconds`: the duration times the channels), as Deepgram charges multichannel audio.
"""

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import av
import numpy as np

from deployments.diarization.words import diarized_transcription
from deployments.errors import AudioRejectedError
from deployments.files._file_run import FileRun, ask_analyzer
from deployments.files._url_fetch import fetch_to_file
from deployments.files.decoding import open_audio, too_long
from deployments.storage.spool import decoded_copy_path
from deployments.types import (
    SAMPLE_RATE,
    Diarization,
    DiarizedTranscript,
    PipelineProgress,
    PipelineRequest,
    PipelineResult,
    PipelineText,
    SpeakerSummary,
    SpeakerTurn,
    Transcript,
)

if TYPE_CHECKING:
    from deployments.files.pipeline import TranscriptionPipeline

MAX_CHANNELS = 8
FIELD = "multichannel"

Event = PipelineProgress | PipelineText


def split_channels(source: str | Path, max_duration_s: float) -> list[Path]:
    """One 16 kHz mono WAV per channel of the first audio stream, beside `source` (decoded-copy names). A mono
    file, or one of more than MAX_CHANNELS channels, is refused naming the field."""
    with open_audio(source) as container:
        stream = container.streams.audio[0]
        channels = stream.codec_context.layout.nb_channels
        if channels < 2:
            raise AudioRejectedError(f"{FIELD}: the audio has one channel; leave {FIELD} out to transcribe it")
        if channels > MAX_CHANNELS:
            raise AudioRejectedError(f"{FIELD}: the audio has {channels} channels; at most {MAX_CHANNELS} are split")
        paths = [decoded_copy_path(source) for _ in range(channels)]
        outputs = [av.open(str(path), mode="w", format="wav") for path in paths]
        try:
            streams = [output.add_stream("pcm_s16le", rate=SAMPLE_RATE, layout="mono") for output in outputs]
            resampler = av.AudioResampler(format="s16p", layout=stream.codec_context.layout, rate=SAMPLE_RATE)
            decoded = 0
            for frame in container.decode(stream):
                for planar in resampler.resample(frame):
                    decoded += planar.samples
                    if decoded > max_duration_s * SAMPLE_RATE:
                        raise too_long(max_duration_s)
                    _write(planar.to_ndarray(), streams, outputs)
            for planar in resampler.resample(None):
                _write(planar.to_ndarray(), streams, outputs)
            for output, out_stream in zip(outputs, streams, strict=True):
                for packet in out_stream.encode(None):
                    output.mux(packet)
        except BaseException:
            for path in paths:
                path.unlink(missing_ok=True)
            raise
        finally:
            for output in outputs:
                output.close()
    return paths


def _write(planes: np.ndarray, streams: list[av.AudioStream], outputs: list[av.container.OutputContainer]) -> None:
    for plane, out_stream, output in zip(planes, streams, outputs, strict=True):
        frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(plane[None, :]), format="s16", layout="mono")
        frame.sample_rate = SAMPLE_RATE
        for packet in out_stream.encode(frame):
            output.mux(packet)


def channel_request(request: PipelineRequest, path: Path) -> PipelineRequest:
    """One channel's run: its copy as the input, no URL, and the Diarizer only when speakers are told apart
    within channels (else the channel is the speaker, and word times are what a speaker's words need)."""
    diarization = request.diarization
    within = diarization is not None and diarization.within_channels
    options = request.options.model_copy(
        update={"multichannel": False, "word_timestamps": request.options.word_timestamps or diarization is not None}
    )
    return request.model_copy(
        update={"source_path": str(path), "url": None, "options": options, "stream_text": False, "analysis": None,
                "diarization": diarization if within else None}
    )  # fmt: skip


class ChannelProgress:
    """The channels' progress as one share (their mean), for a job's progress."""

    def __init__(self, channels: int, on_event: Callable[[Event], object] | None) -> None:
        self.shares = [0.0] * channels
        self.on_event = on_event

    def of(self, channel: int) -> Callable[[Event], None] | None:
        if self.on_event is None:
            return None
        on_event = self.on_event

        def heard(event: Event) -> None:
            if isinstance(event, PipelineProgress):
                self.shares[channel] = event.share
                on_event(PipelineProgress(share=sum(self.shares) / len(self.shares)))

        return heard


def merged(results: list[PipelineResult], diarized: bool) -> PipelineResult:
    """The channels' results as one, in time order, every segment and word tagged with its channel."""
    if not diarized:
        return _merged_transcripts([_tagged(result, channel) for channel, result in enumerate(results)])
    per_channel = [
        _relabelled(result, channel) if isinstance(result, DiarizedTranscript) else _channel_speaker(result, channel)
        for channel, result in enumerate(results)
    ]
    return _merged_diarized(per_channel)


def _tagged(result: PipelineResult, channel: int) -> Transcript:
    assert isinstance(result, Transcript)
    return result.model_copy(
        update={
            "segments": [segment.model_copy(update={"channel": channel}) for segment in result.segments],
            "words": [word.model_copy(update={"channel": channel}) for word in result.words],
        }
    )


def _merged_transcripts(transcripts: list[Transcript]) -> Transcript:
    segments = sorted((s for t in transcripts for s in t.segments), key=lambda s: (s.start, s.channel or 0))
    words = sorted((w for t in transcripts for w in t.words), key=lambda w: (w.start, w.channel or 0))
    return Transcript(
        language=_main_language(transcripts),
        duration=max(t.duration for t in transcripts),
        segments=[segment.model_copy(update={"id": index}) for index, segment in enumerate(segments)],
        words=words,
        channels=len(transcripts),
    )


def _main_language(results: list[Transcript] | list[DiarizedTranscript]) -> str:
    """The language of the channel that holds most speech."""
    spoken: dict[str, float] = {}
    for result in results:
        seconds = sum(segment.end - segment.start for segment in result.segments)
        spoken[result.language] = spoken.get(result.language, 0.0) + seconds
    return max(spoken, key=spoken.__getitem__) if spoken else results[0].language


def _channel_speaker(result: PipelineResult, channel: int) -> DiarizedTranscript:
    """A channel's transcript as one speaker's, `channel_N`, whose turns are its Whisper segments."""
    transcript = _tagged(result, channel)
    speaker = f"channel_{channel}"
    turns = [SpeakerTurn(speaker=speaker, start=s.start, end=s.end) for s in transcript.segments if s.end > s.start]
    diarization = Diarization(turns=turns, exclusive_turns=turns, names={speaker: speaker})
    diarized = diarized_transcription(transcript, diarization)
    return _relabelled(diarized, channel, rename=False)


def _relabelled(result: DiarizedTranscript, channel: int, rename: bool = True) -> DiarizedTranscript:
    """Tagged with its channel; with `rename`, an unnamed speaker_N of the channel becomes channel_C_speaker_N
    (two channels' speaker_0 are two people), a known speaker's name stays."""

    def label(speaker: str) -> str:
        return f"channel_{channel}_{speaker}" if rename and speaker.startswith("speaker_") else speaker

    return result.model_copy(
        update={
            "segments": [
                s.model_copy(update={"speaker": label(s.speaker), "channel": channel,
                                     "words": [w.model_copy(update={"speaker": label(w.speaker), "channel": channel})
                                               for w in s.words]})
                for s in result.segments
            ],
            "words": [w.model_copy(update={"speaker": label(w.speaker), "channel": channel}) for w in result.words],
            "speakers": [SpeakerSummary(speaker=label(s.speaker), speaking_time=s.speaking_time, channel=channel)
                         for s in result.speakers],
            "turns": [t.model_copy(update={"speaker": label(t.speaker)}) for t in result.turns],
        }
    )  # fmt: skip


def _merged_diarized(results: list[DiarizedTranscript]) -> DiarizedTranscript:
    segments = sorted((s for r in results for s in r.segments), key=lambda s: (s.start, s.channel or 0))
    return DiarizedTranscript(
        text=" ".join(segment.text for segment in segments).strip(),
        language=_main_language(results),
        duration=max(r.duration for r in results),
        speakers=[summary for r in results for summary in r.speakers],
        segments=[segment.model_copy(update={"id": index}) for index, segment in enumerate(segments)],
        words=sorted((w for r in results for w in r.words), key=lambda w: (w.start, w.channel or 0)),
        turns=sorted((t for r in results for t in r.turns), key=lambda t: (t.start, t.end)),
        channels=len(results),
    )


async def channels_result(
    pipeline: "TranscriptionPipeline", request: PipelineRequest, on_event: Callable[[Event], None] | None = None
) -> PipelineResult:
    """The multichannel request's result: its file (fetched first for a `url`) split, the channels run side by side
    as files of their own, merged; an analysis, when asked, reads the merged transcript."""
    source = Path(request.source_path)
    if request.url is not None:
        await fetch_to_file(request.url, source, request.max_bytes, pipeline.config.url_input)
    paths = await asyncio.to_thread(split_channels, source, pipeline.config.limits.max_duration_s)
    try:
        progress = ChannelProgress(len(paths), on_event)
        runs = [
            FileRun(pipeline, channel_request(request, path), progress.of(index)) for index, path in enumerate(paths)
        ]
        result = merged(list(await asyncio.gather(*(run.result() for run in runs))), request.diarization is not None)
        if request.analysis is not None and request.analysis.wanted:
            analysis = await ask_analyzer(pipeline.analyzer, result, request.analysis)
            result = result.model_copy(update={"analysis": analysis})
        return result
    finally:
        for path in paths:
            path.unlink(missing_ok=True)
