"""Where a subtitle's lines and cues break: the places that read naturally (after a sentence or a clause, before
a joining word, not after an article or a preposition), the breaks a cue must take (a change of speaker, a long
pause), words laid out in lines, and the room a speaker's label takes on a cue's first line."""

import re

from serve_app.rendering.subtitles.rules import PAUSE_BREAK_S, SubtitleRules
from serve_app.rendering.subtitles.words import CueWord

SENTENCE_END = re.compile("[.?!\u2026\u3002\uff1f\uff01]['\"\u201d\u00bb)]*$")
CLAUSE_END = re.compile("[,;:\u2014\u2013]['\"”»)]*$|-$")
_JOINERS_TEXT = (
    "and but or nor so yet because although though while when whenever where"
    " whereas if unless until since that which who whom whose than as after before"
)
JOINERS = frozenset(_JOINERS_TEXT.split())
"""A line or cue may well start before one of these."""
_BINDERS_TEXT = (
    "a an the this that these those my your his her its our their some any"
    " no every each to of in on at for with from by into onto about very not"
)
BINDERS = frozenset(_BINDERS_TEXT.split())
"""A line or cue should not end on one of these: it belongs with the word after it."""


def speaker_label(speaker: str | None, rules: SubtitleRules) -> str | None:
    """The speaker as a cue shows it, when asked: at most a third of a line (none on lines under 10 characters)."""
    if not rules.show_speakers or not speaker or rules.max_line_width < 10:  # no room for it on a line
        return None
    return speaker[: max(1, rules.max_line_width // 3 - 3)]


def label_width(speaker: str | None, rules: SubtitleRules) -> int:
    """Room the speaker's label takes on a cue's first line, when shown (`[label] `)."""
    label = speaker_label(speaker, rules)
    return len(label) + 3 if label else 0


def split_long_words(words: list[CueWord], width: int) -> list[CueWord]:
    """A word wider than a line cut into line-wide pieces, timed by their characters: no line may overflow."""
    out: list[CueWord] = []
    for word in words:
        if len(word.text) <= width:
            out.append(word)
            continue
        pieces = [word.text[i : i + width] for i in range(0, len(word.text), width)]
        at, step = word.start, (word.end - word.start) / len(word.text)
        for piece in pieces:
            out.append(CueWord(piece, at, at + step * len(piece), word.speaker))
            at += step * len(piece)
    return out


def break_after(word: CueWord, following: CueWord | None) -> float:
    """How good a place the gap after `word` is for a line or cue break: higher is better."""
    if SENTENCE_END.search(word.text):
        return 3.0
    if CLAUSE_END.search(word.text):
        return 2.0
    score = 0.0
    if word.text.lower() in BINDERS:
        score -= 3.0
    if following is not None and following.text.lower().strip("\"'“«(") in JOINERS:
        score += 1.0
    return score


def layout(words: list[CueWord], width: int, max_lines: int, first_line_taken: int = 0) -> list[list[CueWord]] | None:
    """The words in at most `max_lines` lines of at most `width` characters, broken at the best places (natural
    breaks, lines of even length); None when they do not fit."""
    n = len(words)
    if n == 0:
        return []
    lengths = [len(word.text) for word in words]

    def line_length(i: int, j: int) -> int:
        return sum(lengths[i:j]) + (j - i - 1)

    # best[k][j]: the cost of words[:j] in k lines; a line's cost favours fullness evenly and natural breaks
    inf = float("inf")
    best = [[inf] * (n + 1) for _ in range(max_lines + 1)]
    back = [[0] * (n + 1) for _ in range(max_lines + 1)]
    best[0][0] = 0.0
    for k in range(1, max_lines + 1):
        room = width - (first_line_taken if k == 1 else 0)
        for j in range(1, n + 1):
            for i in range(j - 1, -1, -1):
                used = line_length(i, j)
                if used > room:
                    break
                if best[k - 1][i] == inf:
                    continue
                slack = (room - used) / width
                cost = best[k - 1][i] + slack * slack
                if j < n:
                    cost -= 0.3 * break_after(words[j - 1], words[j])
                if cost < best[k][j]:
                    best[k][j], back[k][j] = cost, i
    options = [(best[k][n] + 0.2 * k, k) for k in range(1, max_lines + 1) if best[k][n] < inf]
    if not options:
        return None
    _, k = min(options)
    lines: list[list[CueWord]] = []
    j = n
    while k > 0:
        i = back[k][j]
        lines.insert(0, words[i:j])
        j, k = i, k - 1
    return lines


def fits(words: list[CueWord], rules: SubtitleRules) -> bool:
    if words[-1].end - words[0].start > rules.max_cue_duration_s and len(words) > 1:
        return False
    return _line_count(words, rules.max_line_width, label_width(words[0].speaker, rules)) <= rules.max_line_count


def _line_count(words: list[CueWord], width: int, first_line_taken: int) -> int:
    """The fewest lines the words take (each line filled as far as it goes), as `layout` needs to find a way;
    a word wider than its line counts past any limit."""
    lines, used, room = 1, -1, width - first_line_taken
    for word in words:
        if used + 1 + len(word.text) <= room:
            used += 1 + len(word.text)
        elif used < 0 or len(word.text) > width:
            return 1 << 30
        else:
            lines, used, room = lines + 1, len(word.text), width
    return lines


def hard_break(previous: CueWord, word: CueWord) -> bool:
    """Whether a cue must end between these words: a change of speaker, a long pause, a pause after a sentence."""
    gap = word.start - previous.end
    return (
        word.speaker != previous.speaker
        or gap >= PAUSE_BREAK_S
        or (SENTENCE_END.search(previous.text) is not None and gap >= PAUSE_BREAK_S / 3)
    )
