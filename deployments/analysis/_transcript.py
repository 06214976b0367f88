"""The transcript as the LLM reads it, and how a long one is made to fit the model's context.

Each segment is one line, `speaker: text` (a plain transcript has no speakers: `- text`). The rule for a
transcript longer than the budget (the context less the instructions and the answer): keep whole lines from
the start and from the end, alternately, until the budget is spent, and put one line
`[... N lines omitted ...]` where the middle was cut. A conversation's purpose and its outcome usually sit at
its two ends, which is what a summary or an extraction needs. Roles read the same cut transcript; emotions
never need cutting, since they judge a few segments per call.
"""

from collections.abc import Callable

from deployments.types import DiarizedTranscript, Transcript


def lines(transcript: Transcript | DiarizedTranscript) -> list[str]:
    if isinstance(transcript, DiarizedTranscript):
        return [f"{segment.speaker}: {segment.text.strip()}" for segment in transcript.segments]
    return [f"- {segment.text.strip()}" for segment in transcript.segments]


def fit(all_lines: list[str], budget_tokens: int, count_tokens: Callable[[str], int]) -> str:
    """The lines joined, cut in the middle to at most `budget_tokens` (see the module's docstring)."""
    costs = [count_tokens(line) + 1 for line in all_lines]
    if sum(costs) <= budget_tokens:
        return "\n".join(all_lines)
    head: list[int] = []
    tail: list[int] = []
    spent = count_tokens("[... 99999 lines omitted ...]") + 1
    low, high = 0, len(all_lines) - 1
    take_head = True
    while low <= high:
        index = low if take_head else high
        if spent + costs[index] > budget_tokens:
            break
        spent += costs[index]
        if take_head:
            head.append(low)
            low += 1
        else:
            tail.append(high)
            high -= 1
        take_head = not take_head
    omitted = len(all_lines) - len(head) - len(tail)
    kept = (
        [all_lines[i] for i in head] + [f"[... {omitted} lines omitted ...]"] + [all_lines[i] for i in reversed(tail)]
    )
    return "\n".join(kept)
