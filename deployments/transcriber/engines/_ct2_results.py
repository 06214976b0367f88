"""The CTranslate2 engine's results as the service's types: faster-whisper's segment dicts become a chunk's
`ChunkTranscript`, and one batch item's alignment stands in for faster-whisper's model in its word timing."""

from typing import Any

from deployments.transcriber.segmenting import fit_in_chunk
from deployments.types import ChunkTranscript, Segment, Word


class OneItemAlignment:
    """Stands in for the WhisperModel inside `add_word_timestamps` for one batch item: it answers
    `find_alignment` with that item's alignment, computed for the whole batch at once."""

    def __init__(self, alignment: list[dict[str, Any]], frames_per_second: int) -> None:
        self.alignment = alignment
        self.frames_per_second = frames_per_second

    def find_alignment(self, *args: object, **kwargs: object) -> list[list[dict[str, Any]]]:
        return [self.alignment]


def chunk_transcript(
    segments: list[dict[str, Any]], language: str, temperature: float, duration: float
) -> ChunkTranscript:
    """The chunk's segments and words, each fitted into the chunk with a length of its own (`fit_in_chunk`):
    the alignment can give a word no time, and faster-whisper then gives its segment none either."""
    out = ChunkTranscript(language=language, segments=[])
    for index, segment in enumerate(segments):
        out.segments.append(
            Segment(
                id=index,
                seek=0,
                start=round(float(segment["start"]), 3),
                end=round(float(segment["end"]), 3),
                text=segment["text"],
                tokens=list(segment["tokens"]),
                temperature=temperature,
                avg_logprob=float(segment["avg_logprob"]),
                compression_ratio=float(segment["compression_ratio"]),
                no_speech_prob=float(segment["no_speech_prob"]),
            )
        )
        out.words.extend(
            Word(
                word=word["word"],
                start=round(float(word["start"]), 3),
                end=round(float(word["end"]), 3),
                prob=float(word["probability"]),
            )
            for word in segment.get("words") or ()
        )
    return out.model_copy(
        update={"segments": fit_in_chunk(out.segments, duration), "words": fit_in_chunk(out.words, duration)}
    )
