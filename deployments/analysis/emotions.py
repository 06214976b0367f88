"""Per-segment emotions judged by the LLM from the words (no audio-emotion weights ship offline; see
`audio_emotions` for an operator's audio classifier). Segments go `emotion_batch` at a time; the model
answers each with a label and its confidence in percent, constrained to the four labels.

`probs`: the stated confidence on the label, the rest shared evenly by the other three; a text model's
self-reported confidence, so coarse."""

from deployments.analysis._calls import Session
from deployments.analysis.errors import LLMOutputInvalid
from deployments.types import EMOTION_LABELS, DiarizedTranscript, Emotion, Transcript

SYSTEM = (
    "You judge the emotion of each utterance in a conversation: angry (annoyed, hostile, complaining),"
    " sad (unhappy, disappointed, grieving), positive (happy, grateful, pleased, excited), or neutral"
    " (plain facts, questions, no clear emotion)."
)
MIN_CONFIDENCE = 0.25


def batch_schema(count: int) -> dict:
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
