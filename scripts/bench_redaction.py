"""Redaction, measured (issue 65): on the labelled set (tests/data/redaction/sentences.json, voiced by espeak-ng),
per class, recall (entities fully hidden) and, over every other word, the share wrongly hidden; the WER of the
sentences without personal data before and after redaction (the words it leaves must be the words it was given).

Each sentence is read as the pipeline reads a one-chunk English file (the CTranslate2 engine, words timed), then
redacted as a request naming every class but `numbers` would be (the service's `Redactor`, over the words). The
`reference` row redacts the spoken text itself: what the finder gets right when the words are right.

    .venv/bin/python -m scripts.bench_redaction [--models embedded:base,embedded:tiny.en] [--speed 150] [--show]
"""

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

import jiwer

from deployments.config import WhisperModelConfig
from deployments.redaction import RedactionClass, RedactionOptions
from deployments.redaction.finder import EntityFinder
from deployments.redaction.redactor import Redactor
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import ChunkOptions, Word
from devkit.redaction_set import Sentence, entity_pieces, hidden, sentences
from devkit.vocabulary_set import voiced

PII = [cls for cls in RedactionClass if cls != RedactionClass.numbers]
_normal = jiwer.Compose([jiwer.ToLowerCase(), jiwer.RemovePunctuation(), jiwer.RemoveMultipleSpaces(), jiwer.Strip()])


class Tally:
    def __init__(self) -> None:
        self.said: Counter[str] = Counter()
        self.hidden: Counter[str] = Counter()
        self.other_words = 0
        self.wrongly_hidden = 0
        self.clean_before: list[tuple[str, str]] = []
        self.clean_after: list[tuple[str, str]] = []
        self.seconds = 0.0
        self.sentences = 0

    def add(self, sentence: Sentence, words: list[str], redacted: list[str]) -> None:
        text = "".join(redacted)
        for entity in sentence.entities:
            self.said[entity.cls] += 1
            self.hidden[entity.cls] += hidden(entity, text)
        for before, after, of_entity in zip(words, redacted, entity_pieces(sentence, words), strict=True):
            if not of_entity:
                self.other_words += 1
                self.wrongly_hidden += before != after
        if not sentence.entities:
            self.clean_before.append((sentence.text, "".join(words)))
            self.clean_after.append((sentence.text, text))

    def rows(self, name: str) -> list[str]:
        def wer(pairs: list[tuple[str, str]]) -> float:
            return float(jiwer.wer([_normal(r) for r, _ in pairs], [_normal(h) or "-" for _, h in pairs]))

        out = [
            f"| {name} | {cls} | {self.hidden[cls] / self.said[cls]:.1%} ({self.hidden[cls]}/{self.said[cls]}) |"
            for cls in sorted(self.said)
        ]
        total_hidden, total = sum(self.hidden.values()), sum(self.said.values())
        out.append(f"| {name} | **all entities** | {total_hidden / total:.1%} ({total_hidden}/{total}) |")
        out.append(
            f"| {name} | other words hidden | {self.wrongly_hidden / self.other_words:.2%}"
            f" ({self.wrongly_hidden}/{self.other_words}) |"
        )
        out.append(
            f"| {name} | clean sentences' WER before / after | {wer(self.clean_before):.1%} /"
            f" {wer(self.clean_after):.1%} |"
        )
        per_sentence_ms = 1000 * self.seconds / max(self.sentences, 1)
        out.append(f"| {name} | redaction's time per sentence | {per_sentence_ms:.1f} ms |")
        return out


def score(redactor: Redactor, every: list[Sentence], transcripts: list[list[str]], show: bool) -> Tally:
    tally = Tally()
    for sentence, words in zip(every, transcripts, strict=True):
        started = time.perf_counter()
        redacted = [text or "" for text in redactor.pieces(words, "en")]
        tally.seconds += time.perf_counter() - started
        tally.sentences += 1
        tally.add(sentence, words, redacted)
        if show and (sentence.entities or redacted != words):
            flags = entity_pieces(sentence, words)
            wrong = [b for b, a, e in zip(words, redacted, flags, strict=True) if b != a and not e]
            print(f"<!-- {sentence.text} || {''.join(words).strip()} || {''.join(redacted).strip()} || {wrong} -->")
    return tally


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="embedded:base,embedded:tiny.en")
    parser.add_argument("--speed", type=int, default=150, help="espeak-ng words a minute")
    parser.add_argument("--show", action="store_true", help="print each sentence: spoken, heard, redacted")
    args = parser.parse_args()
    every = sentences()
    redactor = Redactor(RedactionOptions(classes=PII), EntityFinder())
    with tempfile.TemporaryDirectory() as folder:
        audio = [voiced(s.text, "en", Path(folder), args.speed) for s in every]
    print("| words | class | recall (fully hidden) |")
    print("|---|---|---|")
    reference = [[" " + word for word in s.text.split()] for s in every]
    for row in score(redactor, every, reference, args.show).rows("reference"):
        print(row, flush=True)
    for model in args.models.split(","):
        engine = CTranslate2Engine(WhisperModelConfig(model=model, cpu_threads=2))
        options = ChunkOptions(language="en", word_timestamps=True)
        started = time.perf_counter()
        heard: list[list[Word]] = [engine.transcribe_batch([samples], options)[0].words for samples in audio]
        transcribing = (time.perf_counter() - started) / len(audio)
        texts = [[word.word for word in words] for words in heard]
        tally = score(redactor, every, texts, args.show)
        name = model.removeprefix("embedded:")
        for row in tally.rows(name):
            print(row, flush=True)
        per_sentence = tally.seconds / tally.sentences
        print(f"| {name} | cost: redaction ÷ transcription, a sentence | {per_sentence / transcribing:.1%}"
              f" ({1000 * per_sentence:.1f} ms of {1000 * transcribing:.0f} ms) |")  # fmt: skip
        whole = [word for words in texts for word in words]
        started = time.perf_counter()
        redactor.pieces(whole, "en")
        speech_s = sum(len(samples) for samples in audio) / 16_000
        print(f"| {name} | the whole set as one transcript ({len(whole)} words, {speech_s:.0f} s of speech)"
              f" | {1000 * (time.perf_counter() - started):.0f} ms |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
