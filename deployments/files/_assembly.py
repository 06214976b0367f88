"""A file's chunk transcripts put together: in chunk order, in one language, on the file's timeline."""

import asyncio
from collections.abc import Callable

from deployments.files._chunking import Pieces, file_time, speech_samples
from deployments.files._profanity import mask_text
from deployments.files._sending import ChunkSender
from deployments.types import SAMPLE_RATE, ChunkTranscript, PipelineText, Segment, Transcript, Word


class TranscriptAssembly:
    """Waits for the chunks the sender sends, settles their language and joins them into the transcript.

    With `stream_text`, the chunks are settled in order as they come back, each chunk's text going to
    `on_text` once it and every chunk before it are back: the streamed text is then the transcript's."""

    def __init__(
        self,
        sender: ChunkSender,
        profanity_filter: bool,
        stream_text: bool = False,
        on_text: Callable[[PipelineText], None] | None = None,
    ) -> None:
        self.sender = sender
        self.options = sender.options
        self.profanity_filter = profanity_filter
        self.on_text = on_text
        self.in_order: asyncio.Task[list[ChunkTranscript]] | None = None
        if stream_text:
            self.in_order = asyncio.ensure_future(self._texts_in_order())

    def cancel(self) -> None:
        if self.in_order is not None:
            self.in_order.cancel()

    async def transcript(self, duration: float) -> Transcript:
        """The chunks' transcripts in one language on the file's timeline.

        Without a language, every chunk's language is detected in the encoder pass that decodes it (no
        extra pass). The file's language is the one most of its speech is in; the rare chunk that came out
        in another one is decoded again in it (read back from the decoded spool), so the transcript is in
        one language."""
        sender, options = self.sender, self.options
        if not sender.transcripts:  # silence: nothing to transcribe
            return Transcript(language=options.language or "en", duration=duration, segments=[])
        if self.in_order is not None:  # streamed: the text already sent is the transcript's
            transcripts = await self.in_order
            return join_chunks(transcripts, sender.pieces, duration, options.language or transcripts[0].language)
        transcripts = list(await asyncio.gather(*sender.transcripts))
        language = options.language or main_language(transcripts, sender.pieces)
        settled = options.model_copy(update={"language": language})
        redo = [index for index, transcript in enumerate(transcripts) if transcript.language != language]
        redone = await asyncio.gather(*(sender.resend(index, settled) for index in redo))
        for index, transcript in zip(redo, redone, strict=True):
            transcripts[index] = transcript
        return join_chunks(transcripts, sender.pieces, duration, language)

    async def _texts_in_order(self) -> list[ChunkTranscript]:
        """Each chunk's text, once it and every chunk before it are back. Text sent is final, so the language
        is settled by the first chunk (when not given), and a later chunk that came back in another language
        is decoded again in it before its text goes out."""
        sender, settled = self.sender, list[ChunkTranscript]()
        language = self.options.language
        while True:
            while len(settled) == len(sender.transcripts):
                if sender.done:
                    return settled
                sender.sent.clear()
                await sender.sent.wait()
            index = len(settled)
            transcript = await sender.transcripts[index]
            language = language or transcript.language
            if transcript.language != language:
                transcript = await sender.resend(index, self.options.model_copy(update={"language": language}))
            settled.append(transcript)
            text = "".join(segment.text for segment in transcript.segments)
            if self.profanity_filter:
                text = mask_text(text, language)
            if text and self.on_text is not None:
                self.on_text(PipelineText(text=text))


def main_language(transcripts: list[ChunkTranscript], chunk_pieces: list[Pieces]) -> str:
    """The language of the most speech (chunk samples), ties going to the earliest chunk's."""
    samples_per_language: dict[str, int] = {}
    for transcript, pieces in zip(transcripts, chunk_pieces, strict=True):
        speech = speech_samples(pieces)
        samples_per_language[transcript.language] = samples_per_language.get(transcript.language, 0) + speech
    return max(samples_per_language, key=samples_per_language.__getitem__)


def join_chunks(
    chunk_transcripts: list[ChunkTranscript], chunk_pieces: list[Pieces], duration: float, language: str
) -> Transcript:
    """One transcript on the file's timeline: chunk times mapped onto the file through each chunk's pieces
    (`file_time`), ids renumbered.

    Whisper may put a last timestamp past the end of a chunk (into its padding); times are clamped to it.
    """
    segments: list[Segment] = []
    words: list[Word] = []
    for pieces, chunk in zip(chunk_pieces, chunk_transcripts, strict=True):
        for segment in chunk.segments:
            segments.append(
                segment.model_copy(
                    update={
                        "id": len(segments),
                        "seek": round(pieces[0][0] / SAMPLE_RATE * 100),  # Whisper's seek counts 10 ms mel frames
                        "start": round(file_time(segment.start, pieces), 3),
                        "end": round(file_time(segment.end, pieces, is_end=True), 3),
                    }
                )
            )
        words.extend(
            word.model_copy(
                update={
                    "start": round(file_time(word.start, pieces), 3),
                    "end": round(file_time(word.end, pieces, is_end=True), 3),
                }
            )
            for word in chunk.words
        )
    return Transcript(language=language, duration=duration, segments=segments, words=words)
