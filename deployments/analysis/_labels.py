"""Choosing one of a few labels by the model's probabilities rather than its writing.

A small model that writes its choice mostly repeats a favourite label; comparing the log-probability of each
label as the answer is steadier, and its softmax gives real `probs`. Tiny models also lean towards some labels
whatever the input, so a label's score can be calibrated against a content-free baseline: the same question
about "N/A" (contextual calibration, Zhao et al. 2021), whose log-probabilities are subtracted.
"""

import math

from deployments.analysis._calls import Session
from deployments.analysis.backends import Message


def softmax(logprobs: list[float]) -> list[float]:
    top = max(logprobs)
    weights = [math.exp(value - top) for value in logprobs]
    total = sum(weights)
    return [weight / total for weight in weights]


def probabilities(
    session: Session, messages: list[Message], labels: list[str], baseline: list[float] | None = None
) -> dict[str, float]:
    """The probability of each label as the answer to `messages`, less `baseline`'s log-probabilities."""
    logprobs = session.score(messages, labels)
    if baseline is not None:
        logprobs = [value - prior for value, prior in zip(logprobs, baseline, strict=True)]
    return dict(zip(labels, softmax(logprobs), strict=True))
