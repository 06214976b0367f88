"""Who said what: a transcript with word times plus a diarization -> a diarized transcript.

Each word gets the speaker whose exclusive turn overlaps it most; a word that no such turn overlaps gets
the nearest turn's speaker. Segments are split wherever the speaker changes from one word to the next.
Speaking times count every turn, overlapped speech included.
"""

from itertools import groupby

from deployments.types import (
    Diarization,
    DiarizedSegment,
    DiarizedTranscript,
    DiarizedWord,
    Segment,
    SpeakerSummary,
    SpeakerTurn,
    Transcript,
    Word,
)


def speaker_of(start: float, end: float, turns: list[SpeakerTurn]) -> str | None:
    if not turns:
        return None
    overlap, speaker = max((min(end, turn.end) - max(start, turn.start), turn.speaker) for turn in turns)
    if overlap > 0:
        return speaker
    middle = (start + end) / 2
    return min(turns, key=lambda turn: min(abs(turn.start - middle), abs(turn.end - middle))).speaker


def words_per_segment(segments: list[Segment], words: list[Word]) -> list[list[Word]]:
    """The words of each segment, by where each word's middle falls (both lists are in time order)."""
    grouped: list[list[Word]] = [[] for _ in segments]
    index = 0
    for word in words:
        middle = (word.start + word.end) / 2
        while index < len(segments) - 1 and middle > segments[index].end:
            index += 1
        if segments:
            grouped[index].append(word)
    return grouped


def diarized_transcription(transcript: Transcript, diarization: Diarization) -> DiarizedTranscript:
    turns = diarization.exclusive_turns or diarization.turns
    segments: list[DiarizedSegment] = []
    for segment, words in zip(
        transcript.segments, words_per_segment(transcript.segments, transcript.words), strict=True
    ):
        labelled = [
            DiarizedWord(
                word=word.word, start=word.start, end=word.end, speaker=speaker_of(word.start, word.end, turns)
            )
            for word in words
        ]
        if not labelled:  # no word times inside: the speaker of the segment's whole span
            speaker = speaker_of(segment.start, segment.end, turns)
            segments.append(DiarizedSegment(id=len(segments), start=segment.start, end=segment.end,
                                            text=segment.text.strip(), speaker=speaker, words=[]))  # fmt: skip
            continue
        runs = [list(run) for _, run in groupby(labelled, key=lambda word: word.speaker)]
        for number, run in enumerate(runs):
            start = segment.start if number == 0 else run[0].start
            end = segment.end if number == len(runs) - 1 else run[-1].end
            text = "".join(word.word for word in run).strip()
            segments.append(DiarizedSegment(id=len(segments), start=start, end=end, text=text,
                                            speaker=run[0].speaker, words=run))  # fmt: skip
    return DiarizedTranscript(
        text=transcript.text,
        language=transcript.language,
        duration=transcript.duration,
        speakers=speaker_summaries(diarization.turns),
        segments=segments,
    )


def speaker_summaries(turns: list[SpeakerTurn]) -> list[SpeakerSummary]:
    """Speakers in order of first appearance, with their total speaking time."""
    totals: dict[str, float] = {}
    for turn in sorted(turns, key=lambda turn: turn.start):
        totals[turn.speaker] = totals.get(turn.speaker, 0.0) + turn.end - turn.start
    return [SpeakerSummary(speaker=speaker, speaking_time=round(seconds, 3)) for speaker, seconds in totals.items()]
