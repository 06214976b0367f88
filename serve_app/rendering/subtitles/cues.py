"""A transcript's words cut into cues: each as full as the rules let it be and ended at a natural break, cut again
where one reads too fast (`_resplit`), timed (`_timing`) and laid out in lines (`_breaks`)."""

from serve_app.rendering.subtitles._breaks import break_after, fits, hard_break, label_width, layout, split_long_words
from serve_app.rendering.subtitles._resplit import resplit
from serve_app.rendering.subtitles._timing import cue_times
from serve_app.rendering.subtitles.rules import SubtitleRules
from serve_app.rendering.subtitles.words import Cue, CueWord


def _cut(cue: list[CueWord], word: CueWord, rules: SubtitleRules) -> int:
    """Where to end a full cue that `word` does not fit into: the count of its words to keep, at the most natural
    break that keeps the cue at least half full and lets the rest go on with `word`."""
    total = sum(len(w.text) + 1 for w in cue)
    best, best_score = len(cue), break_after(cue[-1], word)
    filled = 0
    for keep in range(1, len(cue)):
        filled += len(cue[keep - 1].text) + 1
        if filled * 2 < total:
            continue
        score = break_after(cue[keep - 1], cue[keep]) + filled / total
        if score > best_score + 1.0 and fits([*cue[keep:], word], rules):
            best, best_score = keep, score
    return best


def group_words(words: list[CueWord], rules: SubtitleRules) -> list[list[CueWord]]:
    """The words cut into cues: each as full as the rules let it be, ended at a natural break, a long pause or a
    change of speaker."""
    groups: list[list[CueWord]] = []
    current: list[CueWord] = []
    for word in words:
        if current and hard_break(current[-1], word):
            groups.append(current)
            current = []
        if not current or fits([*current, word], rules):
            current.append(word)
            continue
        keep = _cut(current, word, rules)
        groups.append(current[:keep])
        current = [*current[keep:], word]
    if current:
        groups.append(current)
    return groups


def build_cues(words: list[CueWord], rules: SubtitleRules) -> list[Cue]:
    """The cues of a transcript's words under `rules`: in order, not overlapping, every word in one cue."""
    words = split_long_words(words, rules.max_line_width - _widest_label(words, rules))
    groups = resplit(group_words(words, rules), rules)
    cues = []
    for group, (start, end) in zip(groups, cue_times(groups, rules), strict=True):
        speaker = group[0].speaker
        lines = layout(group, rules.max_line_width, rules.max_line_count, label_width(speaker, rules))
        assert lines is not None  # a cue is grouped only while its words fit
        cues.append(Cue(start=start, end=end, lines=lines, speaker=speaker, words=group))
    return cues


def _widest_label(words: list[CueWord], rules: SubtitleRules) -> int:
    return max((label_width(word.speaker, rules) for word in words), default=0)
