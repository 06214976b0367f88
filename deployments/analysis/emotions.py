"""Per-segment emotions judged by the LLM from the words (no audio-emotion weights ship offline; see
`audio_emotions` for an operator's audio classifier).

With a backend that scores (the embedded one), each segment is one question and `probs` is the model's own
distribution over the four labels as the answer, calibrated against the same question about "N/A" (see
`_labels`); the label is its argmax. Otherwise segments go `emotion_batch` at a time, the model writes a label
and its confidence in percent for each, constrained to the four labels, and `probs` is that stated
confidence on the label with the rest shared evenly: self-reported, so coarse."""

from typing import Any

from deployments.analysis._calls import Session
from deployments.analysis._labels import probabilities
from deployments.analysis.errors import LLMOutputInvalid
from deployments.types import EMOTION_LABELS, DiarizedTranscript, Emotion, Transcript

SYSTEM = (
    "You judge the emotion of each utterance in a conversation: angry (annoyed, hostile, complaining),"
    " sad (unhappy, disappointed, grieving), positive (happy, grateful, pleased, excited), or neutral"
    " (plain facts, questions, no clear emotion)."
)
MIN_CONFIDENCE = 0.25
CONTENT_FREE = "N/A"


def question(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": f'Utterance: "{text[:400]}"\nEmotion?'}]


def scored(session: Session, transcript: Transcript | DiarizedTranscript) -> list[Emotion | None]:
    """Each segment's emotion from the label probabilities (the backend must score)."""
    if not transcript.segments:
        return []
    labels = list(EMOTION_LABELS)
    baseline = session.score(question(CONTENT_FREE), labels)
    result: list[Emotion | None] = []
    for segment in transcript.segments:
        exact = probabilities(session, question(segment.text.strip()), labels, baseline)
        label = max(exact, key=lambda name: exact[name])
        probs = {name: round(value, 4) for name, value in exact.items()}
        result.append(Emotion(label=label, confidence=probs[label], probs=probs))
    return result


def batch_schema(count: int) -> dict[str, Any]:
    item = {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": list(EMOTION_LABELS)},
            "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        },
        "required": ["label", "confidence"],
        "additionalProperties": False,
    }
    return {"type": "array", "items": item, "minItems": count, "maxItems": count}


def emotion(label: str, confidence: float) -> Emotion:
    """An Emotion with probs that sum to 1: `confidence` (clamped to [0.25, 1]) on `label`, the rest shared."""
    confidence = min(max(float(confidence), MIN_CONFIDENCE), 1.0)
    rest = (1.0 - confidence) / (len(EMOTION_LABELS) - 1)
    probs = {name: round(confidence if name == label else rest, 4) for name in EMOTION_LABELS}
    return Emotion(label=label, confidence=round(confidence, 4), probs=probs)


def parse(answer: object, count: int) -> list[Emotion | None]:
    """The model's answer as `count` emotions; an item that is not a known label with a number is None."""
    items = answer if isinstance(answer, list) else []
    result: list[Emotion | None] = []
    for index in range(count):
        item = items[index] if index < len(items) else None
        if isinstance(item, dict) and item.get("label") in EMOTION_LABELS:
            confidence = item.get("confidence")
            result.append(emotion(item["label"], confidence / 100 if isinstance(confidence, int | float) else 0.5))
        else:
            result.append(None)
    return result


def judge(session: Session, transcript: Transcript | DiarizedTranscript, batch: int) -> list[Emotion | None]:
    if session.can_score:
        return scored(session, transcript)
    texts = [segment.text.strip() for segment in transcript.segments]
    result: list[Emotion | None] = []
    for start in range(0, len(texts), batch):
        group = texts[start : start + batch]
        numbered = "\n".join(f"{n}. {text[:400]}" for n, text in enumerate(group, 1))
        user = (
            f"Utterances:\n{numbered}\n\nFor each of the {len(group)} utterances, in order, give its emotion label"
            " (angry, sad, neutral or positive) and your confidence in percent (0 to 100), as a JSON array."
        )
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        try:
            answer = session.complete_json(messages, batch_schema(len(group)), 32 * len(group) + 8)
        except LLMOutputInvalid:
            answer = []
        result.extend(parse(answer, len(group)))
    return result
