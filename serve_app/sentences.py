"""`timestamp_granularities[]=sentence`: the transcript's words grouped into sentences, timed by their words
(the grouping is `deployments.transcriber.segmenting`'s, the one that also cuts aligned words into segments)."""

from deployments.transcriber.segmenting import sentence_groups
from deployments.types import Word
from serve_app.schemas import Sentence


def sentences(words: list[Word], language: str) -> list[Sentence]:
    return [
        Sentence(start=group[0].start, end=group[-1].end, text="".join(word.word for word in group).strip())
        for group in sentence_groups(words, language)
    ]
