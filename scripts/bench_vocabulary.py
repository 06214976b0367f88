"""Domain vocabulary, measured (issue 48): on the labelled set (tests/data/vocabulary/sentences.json, voiced by
espeak-ng), term recall (terms written right / terms said) and the WER of the other words, without the
vocabulary and with each mechanism: decoding bias only (the terms in Whisper's prompt), correction only, both.

Each sentence names what a request would: `dictionary=medical` for the medical sentences, the set's names and
products of its language as `hotwords` for the others. The engine alone (CTranslate2, 2 threads) reads each
sentence as the pipeline reads a one-chunk file (language given, plain text), with the pipeline's own steps
(`AppliedVocabulary`): all the terms in the prompt when they fit, else a first reading and a second one with the
terms like its words; correction after. English-only models (`.en`) read the English sentences only.

    .venv/bin/python -m scripts.bench_vocabulary [--models embedded:base,embedded:tiny.en] [--speed 140]
"""

import argparse
import tempfile
from collections import defaultdict
from pathlib import Path

import numpy as np

from deployments.config import VocabularyConfig, WhisperModelConfig
from deployments.transcriber.engines.ctranslate2_engine import CTranslate2Engine
from deployments.types import ChunkOptions, ChunkTranscript
from deployments.vocabulary.applied import AppliedVocabulary
from devkit.vocabulary_set import Sentence, other_word_errors, sentences, terms_written, vocabulary_for, voiced

CONDITIONS = ("none", "bias", "correction", "both")


def text_of(transcript: ChunkTranscript) -> str:
    return "".join(segment.text for segment in transcript.segments).strip()


def readings(
    engine: CTranslate2Engine, samples: np.ndarray, sentence: Sentence, every: list[Sentence]
) -> dict[str, str]:
    """The sentence's text under each condition, read as the pipeline reads it."""
    options = ChunkOptions(language=sentence.language, segment_timestamps=False)
    applied = AppliedVocabulary.of(vocabulary_for(sentence, every), VocabularyConfig(), None)
    assert applied is not None
    (plain,) = engine.transcribe_batch([samples], options)
    prompt = (
        applied.first_prompt(sentence.language) if applied.fits(sentence.language) else applied.second_prompt(plain)
    )
    biased = plain
    if prompt is not None:
        (biased,) = engine.transcribe_batch([samples], options.model_copy(update={"prompt": prompt}))
        if not applied.fits(sentence.language) and not applied.keeps(plain, biased):
            biased = plain  # as the pipeline: a second reading that echoes its prompt is dropped
    return {
        "none": text_of(plain),
        "bias": text_of(biased),
        "correction": text_of(applied.correct(plain)),
        "both": text_of(applied.correct(biased)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="embedded:base,embedded:tiny.en")
    parser.add_argument("--speed", type=int, default=140, help="espeak-ng words a minute")
    parser.add_argument("--show", action="store_true", help="print each sentence's readings")
    args = parser.parse_args()
    every = sentences()
    with tempfile.TemporaryDirectory() as folder:
        audio = {s.text: voiced(s.text, s.language, Path(folder), args.speed) for s in every}
    print("| model | sentences | mechanism | term recall | other-words WER |")
    print("|---|---|---|---|---|")
    for model in args.models.split(","):
        engine = CTranslate2Engine(WhisperModelConfig(model=model, cpu_threads=2))
        said: dict[str, int] = defaultdict(int)
        right: dict[tuple[str, str], int] = defaultdict(int)
        errors: dict[tuple[str, str], int] = defaultdict(int)
        words: dict[str, int] = defaultdict(int)
        for sentence in every:
            if sentence.language != "en" and not engine.multilingual:
                continue
            texts = readings(engine, audio[sentence.text], sentence, every)
            for group in ("all", sentence.language):
                said[group] += len(sentence.terms)
                words[group] += other_word_errors(sentence, sentence.text)[1]
                for condition, text in texts.items():
                    right[group, condition] += terms_written(sentence, text)
                    errors[group, condition] += other_word_errors(sentence, text)[0]
            if args.show:
                print(f"<!-- {sentence.text} | " + " | ".join(f"{c}: {t}" for c, t in texts.items()) + " -->")
        for group in sorted(said, key=lambda g: g != "all"):
            for condition in CONDITIONS:
                print(
                    f"| {model.removeprefix('embedded:')} | {group} | {condition}"
                    f" | {right[group, condition] / said[group]:.1%} ({right[group, condition]}/{said[group]})"
                    f" | {errors[group, condition] / words[group]:.1%} |",
                    flush=True,
                )


if __name__ == "__main__":
    main()
