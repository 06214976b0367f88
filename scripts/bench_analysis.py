"""Quality and cost of the analyses on the labelled set tests/data/analysis/quality.json, for the embedded
backend and for the openai-compatible backend against the same weights (devkit/analysis_server.py).

Prints, per backend: role accuracy (speakers given the role a person gave them, list mode), emotion accuracy
(4 labels, per utterance), JSON-schema validity rate (answers valid against the schema, retry included), and
seconds and LLM tokens per analysis.

    python scripts/bench_analysis.py [--backends embedded,openai]
"""

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from deployments.analysis.analyzer import analyze  # noqa: E402
from deployments.analysis.backends import LLMBackend, make_backend  # noqa: E402
from deployments.analysis.errors import LLMOutputInvalid  # noqa: E402
from deployments.config import AnalysisConfig  # noqa: E402
from deployments.types import (  # noqa: E402
    Analysis,
    AnalysisOptions,
    DiarizedSegment,
    DiarizedTranscript,
    SpeakerSummary,
)

DATA = ROOT / "tests" / "data" / "analysis" / "quality.json"


def conversation(turns: list[list[str]]) -> DiarizedTranscript:
    segments = [
        DiarizedSegment(id=i, start=3.0 * i, end=3.0 * i + 2.5, text=text, speaker=speaker)
        for i, (speaker, text) in enumerate(turns)
    ]
    speakers = [SpeakerSummary(speaker=s, speaking_time=1.0) for s in dict.fromkeys(s for s, _ in turns)]
    return DiarizedTranscript(
        text=" ".join(t for _, t in turns), language="en", duration=3.0 * len(turns), speakers=speakers,
        segments=segments,
    )  # fmt: skip


class Tally:
    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.tokens: list[tuple[int, int]] = []

    def run(
        self, backend: LLMBackend, config: AnalysisConfig, transcript: DiarizedTranscript, options: AnalysisOptions
    ) -> Analysis:
        started = time.perf_counter()
        try:
            result = analyze(backend, config, transcript, options)
        finally:
            self.seconds.append(time.perf_counter() - started)
        self.tokens.append((result.llm_input_tokens, result.llm_output_tokens))
        return result

    def line(self, name: str) -> str:
        n = len(self.seconds) or 1
        tokens_in = sum(t[0] for t in self.tokens) / max(len(self.tokens), 1)
        tokens_out = sum(t[1] for t in self.tokens) / max(len(self.tokens), 1)
        return (
            f"  {name:9s} {sum(self.seconds) / n:6.2f} s/analysis, {tokens_in:6.0f} in + {tokens_out:4.0f} out tokens"
        )


def bench(backend: LLMBackend, config: AnalysisConfig, data: dict) -> None:
    roles_tally, emotions_tally, schema_tally = Tally(), Tally(), Tally()
    right = total = 0
    for item in data["conversations"]:
        result = roles_tally.run(backend, config, conversation(item["turns"]), AnalysisOptions(roles=item["roles"]))
        for speaker, role in item["expected"].items():
            right += result.roles.get(speaker) == role
            total += 1
    role_accuracy = right / total

    utterances = data["utterances"]
    transcript = conversation([["speaker_0", text] for text, _ in utterances])
    result = emotions_tally.run(backend, config, transcript, AnalysisOptions(emotions=True))
    emotion_right = sum(
        1 for emotion, (_, label) in zip(result.emotions, utterances, strict=True) if emotion and emotion.label == label
    )
    confusion: dict[str, dict[str, int]] = {}
    for emotion, (_, label) in zip(result.emotions, utterances, strict=True):
        said = emotion.label if emotion else "none"
        confusion.setdefault(label, {}).setdefault(said, 0)
        confusion[label][said] += 1

    valid = 0
    call = conversation(data["conversations"][0]["turns"])
    for item in data["schemas"]:
        options = AnalysisOptions(prompt=item["prompt"], json_schema=item["schema"])
        try:
            schema_tally.run(backend, config, call, options)
            valid += 1
        except LLMOutputInvalid:
            pass
    print(f"  role accuracy      {role_accuracy:.0%} ({right}/{total} speakers, list mode)")
    print(f"  emotion accuracy   {emotion_right / len(utterances):.0%} ({emotion_right}/{len(utterances)}, 4 labels)")
    print(f"  emotion confusion  {json.dumps(confusion)}")
    print(f"  json_schema valid  {valid / len(data['schemas']):.0%} ({valid}/{len(data['schemas'])})")
    print(roles_tally.line("roles"))
    print(emotions_tally.line("emotions") + f" ({len(utterances)} segments)")
    print(schema_tally.line("prompt+schema"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="embedded,openai")
    args = parser.parse_args()
    data = json.loads(DATA.read_text())
    config = AnalysisConfig()
    embedded = make_backend(config)
    for name in args.backends.split(","):
        if name == "embedded":
            print(f"embedded ({config.model}, in-process llama.cpp):")
            bench(embedded, config, data)
        elif name == "openai":
            from devkit.analysis_server import serve

            server = serve(embedded)
            openai_config = AnalysisConfig(
                backend="openai", model="smollm2-135m", base_url=f"http://127.0.0.1:{server.server_port}/v1"
            )
            print("openai-compatible (HTTP, devkit/analysis_server.py over the same weights):")
            client = make_backend(openai_config)
            bench(client, openai_config, data)
            client.close()
            server.shutdown()


if __name__ == "__main__":
    main()
