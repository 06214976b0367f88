"""A file's chunk transcripts put together: in chunk order, each chunk in its language (or all in the file's
main one), on the file's timeline."""

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from deployments.files._chunking import Pieces, file_time, speech_samples
from deployments.files._profanity import mask_text
from deployments.files._sending import ChunkSender
from deployments.redaction.redactor import Redactor
from deployments.types import SAMPLE_RATE, ChunkTranscript, PipelineText, Segment, Transcript, Word
from deployments.vocabulary.applied import AppliedVocabulary


@dataclass(frozen=True)
class LanguageRule:
    """Which language each chunk of a file is decoded in, when the request does not fix one.

    `per_chunk`: a chunk keeps the language detected in it (speech whose language changes keeps each part's
    words), unless the detection is less sure than `min_probability`: it then follows the file's main language.
    Otherwise every chunk is decoded in the main language (Whisper then translates the others)."""

    per_chunk: bool = True
    min_probability: float = 0.6

    def keeps(self, transcript: ChunkTranscript) -> bool:
        """Whether the chunk keeps the language it was detected in, whatever the file's main one is."""
        if not self.per_chunk:
            return False
        probability = transcript.language_probability
        return probability is None or probability >= self.min_probability


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
        rule: LanguageRule = LanguageRule(),
        vocabulary: AppliedVocabulary | None = None,
        second_reading: bool = False,
        rereads: bool = False,
        redactor: Redactor | None = None,
    ) -> None:
        self.sender = sender
        self.redactor = redactor  # streamed text redacted chunk by chunk (an entity is rarely cut by a pause)
        self.options = sender.options
        self.profanity_filter = profanity_filter
        self.on_text = on_text
        self.rule = rule
        self.vocabulary = vocabulary  # terms to correct the words with (deployments/vocabulary/)
        self.second_reading = second_reading  # each chunk read again with the terms like its words
        self.rereads = rereads  # or, all the terms in the prompt, a chunk that read them back read again without
        self.in_order: asyncio.Task[list[ChunkTranscript]] | None = None
        if stream_text:
            self.in_order = asyncio.ensure_future(self._texts_in_order())

    def cancel(self) -> None:
        if self.in_order is not None:
            self.in_order.cancel()

    async def transcript(self, duration: float) -> Transcript:
        """The chunks' transcripts on the file's timeline.

        Without a language, every chunk's language is detected in the encoder pass that decodes it (no
        extra pass). The file's language is the one most of its speech is in. A chunk that came out in
        another one keeps it (`LanguageRule`), or is decoded again in the file's (read back from the decoded
        spool) when its detection was unsure or the rule is one language per file. A chunk beside a change
        of language is decoded again piece by piece (`_by_pieces`), as the change may lie inside it; a file
        in one language pays nothing for this."""
        sender, options = self.sender, self.options
        if not sender.transcripts:  # silence: nothing to transcribe
            return Transcript(language=options.language or "en", duration=duration, segments=[])
        if self.in_order is not None:  # streamed: the text already sent is the transcript's
            transcripts = await self.in_order
            if options.language is not None:
                language = options.language
            elif self.rule.per_chunk:
                language = main_language(transcripts, sender.pieces)
            else:
                language = transcripts[0].language
            return join_chunks(transcripts, sender.pieces, duration, language)
        transcripts = list(await asyncio.gather(*sender.transcripts))
        language = options.language or main_language(transcripts, sender.pieces)
        settled = options.model_copy(update={"language": language})
        redo = [
            index
            for index, transcript in enumerate(transcripts)
            if transcript.language != language and not self.rule.keeps(transcript)
        ]
        redone = await asyncio.gather(*(sender.resend(index, settled) for index in redo))
        for index, transcript in zip(redo, redone, strict=True):
            transcripts[index] = transcript
        if self.second_reading:
            transcripts = await self._read_with_terms(transcripts)
        elif self.rereads:
            transcripts = await self._read_without_terms(transcripts)
        if options.language is not None or not self.rule.per_chunk:
            return join_chunks(self._corrected(transcripts), sender.pieces, duration, language)
        beside_change = changes(transcripts)
        parts = await asyncio.gather(
            *(self._by_pieces(transcript, pieces) if index in beside_change else _kept(transcript, pieces)
              for index, (transcript, pieces) in enumerate(zip(transcripts, sender.pieces, strict=True)))
        )  # fmt: skip
        parts_transcripts = self._corrected([transcript for part in parts for transcript, _ in part])
        return join_chunks(parts_transcripts, [pieces for part in parts for _, pieces in part], duration, language)

    async def _read_with_terms(self, transcripts: list[ChunkTranscript]) -> list[ChunkTranscript]:
        """Each chunk read again, in its language, with the vocabulary's terms that sound like words of its first
        reading as the prompt; a chunk like none of them keeps its first reading."""
        assert self.vocabulary is not None
        prompts = [self.vocabulary.second_prompt(transcript) for transcript in transcripts]
        again = [index for index, prompt in enumerate(prompts) if prompt is not None]
        read = await asyncio.gather(
            *(
                self.sender.resend(
                    index,
                    self.options.model_copy(update={"language": transcripts[index].language, "prompt": prompts[index]}),
                )
                for index in again
            )
        )
        transcripts = list(transcripts)
        for index, transcript in zip(again, read, strict=True):
            if self.vocabulary.keeps(transcripts[index], transcript):
                transcripts[index] = transcript
        return transcripts

    async def _read_without_terms(self, transcripts: list[ChunkTranscript]) -> list[ChunkTranscript]:
        """A chunk whose reading wrote the terms of its prompt back instead of the speech, read again with the
        client's prompt alone (the terms still correct its words)."""
        assert self.vocabulary is not None
        again = [index for index, transcript in enumerate(transcripts) if self.vocabulary.reads_back(transcript)]
        options = [
            self.options.model_copy(
                update={"language": transcripts[index].language, "prompt": self.vocabulary.client_prompt}
            )
            for index in again
        ]
        read = await asyncio.gather(*(self.sender.resend(index, o) for index, o in zip(again, options, strict=True)))
        transcripts = list(transcripts)
        for index, transcript in zip(again, read, strict=True):
            transcripts[index] = transcript
        return transcripts

    def _corrected(self, transcripts: list[ChunkTranscript]) -> list[ChunkTranscript]:
        if self.vocabulary is None:
            return transcripts
        return [self.vocabulary.correct(transcript) for transcript in transcripts]

    async def _by_pieces(self, transcript: ChunkTranscript, pieces: Pieces) -> list[tuple[ChunkTranscript, Pieces]]:
        """A chunk beside a change of language may hold both: each of its pieces of speech (cut at pauses) is
        decoded on its own, in the language detected in it, or in the chunk's where that was unsure."""
        if len(pieces) < 2:
            return [(transcript, pieces)]
        sender, chunk_language = self.sender, self.options.model_copy(update={"language": transcript.language})
        parts = list(await asyncio.gather(*(sender.resend_pieces((piece,), self.options) for piece in pieces)))
        unsure = [
            i for i, part in enumerate(parts) if part.language != transcript.language and not self.rule.keeps(part)
        ]
        redone = await asyncio.gather(*(sender.resend_pieces((pieces[i],), chunk_language) for i in unsure))
        for index, part in zip(unsure, redone, strict=True):
            parts[index] = part
        return [(part, (piece,)) for part, piece in zip(parts, pieces, strict=True)]

    async def _texts_in_order(self) -> list[ChunkTranscript]:
        """Each chunk's text, once it and every chunk before it are back. Text sent is final, so a chunk that
        does not keep its own language (`LanguageRule`) is decoded again before its text goes out, in the
        language of most of the speech settled so far (one language per file: the first chunk's)."""
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
            if self.rule.per_chunk and self.options.language is None:
                language = main_language(settled, sender.pieces[:index]) if settled else transcript.language
            language = language or transcript.language
            if transcript.language != language and not self.rule.keeps(transcript):
                transcript = await sender.resend(index, self.options.model_copy(update={"language": language}))
            if self.vocabulary is not None:
                transcript = self.vocabulary.correct(transcript)
            settled.append(transcript)
            text = "".join(segment.text for segment in transcript.segments)
            if self.profanity_filter:
                text = mask_text(text, transcript.language)
            if self.redactor is not None:
                written_in = "en" if self.options.task == "translate" else transcript.language
                text = await asyncio.to_thread(self.redactor.text, text, written_in)
            if text and self.on_text is not None:
                self.on_text(PipelineText(text=text))


async def _kept(transcript: ChunkTranscript, pieces: Pieces) -> list[tuple[ChunkTranscript, Pieces]]:
    return [(transcript, pieces)]


def changes(transcripts: list[ChunkTranscript]) -> set[int]:
    """The chunks beside a change of language: the change may lie inside either."""
    return {
        index
        for before in range(len(transcripts) - 1)
        if transcripts[before].language != transcripts[before + 1].language
        for index in (before, before + 1)
    }


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
    (`file_time`), ids renumbered, each segment carrying its chunk's language.

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
                        "language": chunk.language,
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
