"""Subtitle cues built from a transcript's word timings, by the rules subtitlers follow: short lines broken at
natural places, a cue at most two lines and a few seconds long, on screen long enough to be read, one speaker a cue.

Pure functions over words, so that every protocol's srt and vtt (REST, asr_webservice, ...) cut cues alike.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, Field

from deployments.types import DiarizedSegment, Segment, Word

MIN_CUE_DURATION_S = 5 / 6
"""A cue shorter than this flickers by; cues are lengthened into free time up to it."""
PAUSE_BREAK_S = 1.5
"""A pause this long between words ends a cue: a subtitle should not hang over silence."""
LEAD_IN_S = 0.25
"""How far before its first word a cue that reads too fast may start, into free time."""
LAG_S = 0.5
"""How far after its first word a cue may start to give the cue before it reading time."""
RESPLIT_REACH = 2
"""How many cues on each side of one that reads too fast may be cut again to give it time."""
TIME_EPSILON_S = 1e-6
"""Times closer than this are equal (sums of float word times)."""

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


class SubtitleRules(BaseModel):
    """How srt and vtt cues are cut: chosen with the request (form fields of the same names), stored with a job."""

    max_line_width: int = Field(42, ge=1, le=1000, description="At most this many characters a subtitle line.")
    max_line_count: int = Field(2, ge=1, le=10, description="At most this many lines a cue.")
    max_cue_duration_s: float = Field(7.0, ge=1.0, le=60.0, description="At most this many seconds a cue.")
    max_chars_per_second: float = Field(
        20.0, ge=5.0, le=100.0, description="Reading speed: a cue stays up at least its characters / this, where the"
        " time before the next cue allows.",
    )  # fmt: skip
    show_speakers: bool = Field(
        False, description="Show each cue's speaker (`<v speaker_0>` in VTT, `[speaker_0]` in SRT) where known."
    )
    word_highlights: bool = Field(False, description="VTT: time each word inside its cue (karaoke style).")


@dataclass(frozen=True)
class CueWord:
    """A word as subtitles show it: stripped, with its speaker where known."""

    text: str
    start: float
    end: float
    speaker: str | None = None


@dataclass
class Cue:
    start: float
    end: float
    lines: list[list[CueWord]]
    speaker: str | None = None
    words: list[CueWord] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "\n".join(" ".join(word.text for word in line) for line in self.lines)

    @property
    def characters(self) -> int:
        """What a viewer reads: the text with line breaks as spaces."""
        return sum(len(word.text) for word in self.words) + len(self.words) - 1


def cue_words(words: Sequence[Word]) -> list[CueWord]:
    """The transcript's words as subtitles take them: stripped, empty ones left out, times never going back."""
    stripped = [CueWord(word.word.strip(), word.start, word.end, getattr(word, "speaker", None)) for word in words]
    return _in_order([word for word in stripped if word.text])


def words_of_segments(segments: Sequence[Segment | DiarizedSegment]) -> list[CueWord]:
    """Words for a transcript that has none (one transcribed without word timestamps, an old stored job): each
    segment's words timed evenly by their characters over the segment."""
    out: list[CueWord] = []
    for segment in segments:
        texts = segment.text.split()
        total = sum(len(text) + 1 for text in texts)
        at, span = segment.start, max(segment.end - segment.start, 0.0)
        speaker = getattr(segment, "speaker", None)
        for text in texts:
            length = span * (len(text) + 1) / total
            out.append(CueWord(text, at, at + length, speaker))
            at += length
    return _in_order(out)


def _in_order(words: list[CueWord]) -> list[CueWord]:
    """Words whose times never go back: a word starts no earlier than the one before, ends no earlier than it
    starts."""
    last = 0.0
    kept = []
    for word in words:
        start = max(word.start, last)
        kept.append(CueWord(word.text, start, max(word.end, start), word.speaker))
        last = start
    return kept


def _label(speaker: str | None, rules: SubtitleRules) -> str | None:
    """The speaker as a cue shows it, when asked: at most a third of a line (none on lines under 10 characters)."""
    if not rules.show_speakers or not speaker or rules.max_line_width < 10:  # no room for it on a line
        return None
    return speaker[: max(1, rules.max_line_width // 3 - 3)]


def _prefix(speaker: str | None, rules: SubtitleRules) -> int:
    """Room the speaker's label takes on a cue's first line, when shown (`[label] `)."""
    label = _label(speaker, rules)
    return len(label) + 3 if label else 0


def _split_long(words: list[CueWord], width: int) -> list[CueWord]:
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


def _break_after(word: CueWord, following: CueWord | None) -> float:
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
                    cost -= 0.3 * _break_after(words[j - 1], words[j])
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


def _fits(words: list[CueWord], rules: SubtitleRules) -> bool:
    if words[-1].end - words[0].start > rules.max_cue_duration_s and len(words) > 1:
        return False
    return _line_count(words, rules.max_line_width, _prefix(words[0].speaker, rules)) <= rules.max_line_count


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


def _cut(cue: list[CueWord], word: CueWord, rules: SubtitleRules) -> int:
    """Where to end a full cue that `word` does not fit into: the count of its words to keep, at the most natural
    break that keeps the cue at least half full and lets the rest go on with `word`."""
    total = sum(len(w.text) + 1 for w in cue)
    best, best_score = len(cue), _break_after(cue[-1], word)
    filled = 0
    for keep in range(1, len(cue)):
        filled += len(cue[keep - 1].text) + 1
        if filled * 2 < total:
            continue
        score = _break_after(cue[keep - 1], cue[keep]) + filled / total
        if score > best_score + 1.0 and _fits([*cue[keep:], word], rules):
            best, best_score = keep, score
    return best


def _hard_break(previous: CueWord, word: CueWord) -> bool:
    """Whether a cue must end between these words: a change of speaker, a long pause, a pause after a sentence."""
    gap = word.start - previous.end
    return (
        word.speaker != previous.speaker
        or gap >= PAUSE_BREAK_S
        or (SENTENCE_END.search(previous.text) is not None and gap >= PAUSE_BREAK_S / 3)
    )


def group_words(words: list[CueWord], rules: SubtitleRules) -> list[list[CueWord]]:
    """The words cut into cues: each as full as the rules let it be, ended at a natural break, a long pause or a
    change of speaker."""
    groups: list[list[CueWord]] = []
    current: list[CueWord] = []
    for word in words:
        if current and _hard_break(current[-1], word):
            groups.append(current)
            current = []
        if not current or _fits([*current, word], rules):
            current.append(word)
            continue
        keep = _cut(current, word, rules)
        groups.append(current[:keep])
        current = [*current[keep:], word]
    if current:
        groups.append(current)
    return groups


def _timed(groups: list[list[CueWord]], rules: SubtitleRules, previous_end: float = 0.0) -> list[tuple[float, float]]:
    """Each cue's start and end: its words' span, lengthened into the free time after it (never over the next cue)
    until it is on screen long enough to read and at least MIN_CUE_DURATION_S, never past max_cue_duration_s; a cue
    still read too fast may start a little earlier, after the cue before, or end a little later, delaying the next
    cue by at most LAG_S; and where two cues meet, the one read too fast takes time the other can spare (at most
    LAG_S after, LEAD_IN_S before)."""
    times: list[tuple[float, float]] = []
    needs = [_need(group, rules) for group in groups]
    for index, (group, wanted) in enumerate(zip(groups, needs, strict=True)):
        start, end = group[0].start, group[-1].end
        previous_end = times[-1][1] if times else previous_end
        start = max(start, previous_end)
        limit = groups[index + 1][0].start if index + 1 < len(groups) else float("inf")
        end = min(max(end, start + wanted), limit, start + rules.max_cue_duration_s)
        if end - start < wanted - TIME_EPSILON_S:
            start = max(previous_end, min(start, end - wanted), start - LEAD_IN_S, end - rules.max_cue_duration_s)
        end = max(min(end, limit), start)
        times.append((start, end))
    for index in range(len(times) - 1):
        (start, end), (next_start, next_end) = times[index], times[index + 1]
        if end < next_start:
            continue  # free time was there to take
        spare = (next_end - next_start) - needs[index + 1]
        later = min(start + needs[index] - end, LAG_S, spare, start + rules.max_cue_duration_s - end)
        earlier = min(next_start + needs[index + 1] - next_end, LEAD_IN_S, (end - start) - needs[index],
                      next_start + rules.max_cue_duration_s - next_end)  # fmt: skip
        shift = later if later > 0 else -earlier if earlier > 0 else 0.0
        if shift:
            times[index], times[index + 1] = (start, end + shift), (next_start + shift, next_end)
    return times


def _shift_boundaries(
    groups: list[list[CueWord]], times: list[tuple[float, float]], needs: list[float], rules: SubtitleRules
) -> list[tuple[float, float]]:
    """Where cues follow one another within PAUSE_BREAK_S / 3 and one is still short of its time, every boundary
    along that run may move (within LEAD_IN_S before to LAG_S after its cue's first word), so that time spare a few
    cues away reaches it; kept where fewer cues of the run are then short."""
    out, first = list(times), 0
    while first < len(out):
        last = first
        while last + 1 < len(out) and out[last][1] > out[last + 1][0] - PAUSE_BREAK_S / 3:
            last += 1
        run_needs = needs[first : last + 1]
        if last > first and _short_count(out[first : last + 1], run_needs):
            limit = out[last + 1][0] if last + 1 < len(out) else float("inf")
            moved = _run_timed(groups[first : last + 1], out[first : last + 1], run_needs, limit, rules)
            if _short_count(moved, run_needs) < _short_count(out[first : last + 1], run_needs):
                out[first : last + 1] = moved
        first = last + 1
    return out


def _short_count(times: list[tuple[float, float]], needs: list[float]) -> int:
    """How many of the timed cues are up for less than they need."""
    return sum(end - start < need - TIME_EPSILON_S for (start, end), need in zip(times, needs, strict=True))


def _run_timed(
    groups: list[list[CueWord]], times: list[tuple[float, float]], needs: list[float], limit: float,
    rules: SubtitleRules,
) -> list[tuple[float, float]]:  # fmt: skip
    """A run of cues timed again: each cue starts and ends where it did, unless it needs to start earlier or end
    later to be read, or to end earlier to leave the cues after it theirs, within the bounds of the first words
    and `limit`."""
    count, longest = len(groups), rules.max_cue_duration_s
    latest = [0.0] * (count + 1)  # how late each boundary may be and leave the cues after it their time
    latest[count] = limit
    for k in range(count - 1, 0, -1):
        latest[k] = min(groups[k][0].start + LAG_S, latest[k + 1] - needs[k])
    out, start = [], times[0][0]
    for k in range(count):
        end = max(min(max(times[k][1], start + needs[k]), latest[k + 1], start + longest), start)
        out.append((start, end))
        if k + 1 < count:
            start = max(end, groups[k + 1][0].start - LEAD_IN_S, min(times[k + 1][0], latest[k + 2] - needs[k + 1]))
    valid = all(s <= e <= s + longest + 1e-9 for s, e in out) and out[-1][1] <= limit
    return out if valid else times


def _characters(group: list[CueWord]) -> int:
    return sum(len(word.text) for word in group) + len(group) - 1


def _reads_too_fast(group: list[CueWord], time: tuple[float, float], rules: SubtitleRules) -> bool:
    """Whether a cue is on screen for less than its characters take at `max_chars_per_second`."""
    start, end = time
    return end - start < _characters(group) / rules.max_chars_per_second - TIME_EPSILON_S


def _need(group: list[CueWord], rules: SubtitleRules) -> float:
    """How long a cue should stay up: long enough to read, and not to flicker by."""
    return max(_characters(group) / rules.max_chars_per_second, MIN_CUE_DURATION_S)


def _shortfall(
    groups: list[list[CueWord]], times: list[tuple[float, float]], rules: SubtitleRules
) -> tuple[int, float]:
    """How far timed cues fall short: the count read too fast, then the seconds missing from them all."""
    fast, missing = 0, 0.0
    for group, (start, end) in zip(groups, times, strict=True):
        fast += _reads_too_fast(group, (start, end), rules)
        missing += max(0.0, _need(group, rules) - (end - start))
    return fast, missing


def _recut(words: list[CueWord], rules: SubtitleRules, start: float, end: float) -> list[list[CueWord]]:
    """`words` cut again into the cues that best get their reading time between `start` and `end`, timed as
    `_timed` may (a cue ends where it has its time, between LEAD_IN_S before and LAG_S after the next cue's first
    word); among cuts as well timed, the one at the most natural breaks with the fewest cues."""
    n = len(words)
    room = rules.max_line_width * rules.max_line_count
    inf = float("inf")
    best: list[tuple[float, float]] = [(0.0, start)] + [(inf, inf)] * n  # (cost, where the cue ending here ends)
    back = [0] * (n + 1)
    for b in range(1, n + 1):
        characters = -1
        for a in range(b - 1, -1, -1):
            if a < b - 1 and _hard_break(words[a], words[a + 1]):
                break  # a cue never runs over a pause or a change of speaker
            group, characters = words[a:b], characters + len(words[a].text) + 1
            too_long = group[-1].end - group[0].start > rules.max_cue_duration_s and len(group) > 1
            if characters > room or too_long:
                break  # and longer still for any earlier `a`
            (cost, at), need = best[a], max(characters / rules.max_chars_per_second, MIN_CUE_DURATION_S)
            if cost == inf or not _fits(group, rules):
                continue
            latest = min(end if b == n else words[b].start + LAG_S, at + rules.max_cue_duration_s)
            until = latest if b == n else max(min(at + need, latest), words[b].start - LEAD_IN_S, at)
            cost += 100 * max(0.0, need - (until - at)) + 1
            if b < n:
                cost -= 0.3 * _break_after(words[b - 1], words[b])
            if (cost, until) < best[b]:
                best[b], back[b] = (cost, until), a
    groups: list[list[CueWord]] = []
    b = n
    while b > 0:
        groups.insert(0, words[back[b] : b])
        b = back[b]
    return groups


def _latest_start(group: list[CueWord], time: tuple[float, float], rules: SubtitleRules) -> float:
    """How late a cue may start: up to LAG_S after its first word, keeping its reading time."""
    start, end = time
    return max(start, min(group[0].start + LAG_S, end - _need(group, rules)))


def resplit(groups: list[list[CueWord]], rules: SubtitleRules) -> list[list[CueWord]]:
    """Where a cue still reads too fast (fast speech with the next cue right behind), it and up to RESPLIT_REACH
    cues on each side are cut again (never over a pause or a change of speaker) so that words move to a neighbour
    with time to spare, as subtitlers re-split; kept only where fewer cues then read too fast, in each window and
    in the whole."""
    cut, times = groups, _cue_times(groups, rules)
    index = 0
    while index < len(groups):
        start, end = times[index]
        if not _reads_too_fast(groups[index], (start, end), rules):
            index += 1
            continue
        lo, hi = max(index - RESPLIT_REACH, 0), min(index + RESPLIT_REACH + 1, len(groups))
        limit = _latest_start(groups[hi], times[hi], rules) if hi < len(groups) else float("inf")
        words = [word for group in groups[lo:hi] for word in group]
        if _characters(words) / rules.max_chars_per_second > limit - times[lo][0]:
            index += 1  # too fast throughout: no cut gives every cue its time
            continue
        recut = _recut(words, rules, times[lo][0], limit)
        # judged on the window and a cue each side, timed alike; the cue after it (if any) is there as a limit
        first, last = max(lo - 1, 0), min(hi + 1, len(groups))
        before = times[first - 1][1] if first > 0 else 0.0
        old, new = groups[first:last], [*groups[first:lo], *recut, *groups[hi:last]]
        old_times, new_times = _cue_times(old, rules, before), _cue_times(new, rules, before)
        if _shortfall(new, new_times, rules) < _shortfall(old, old_times, rules):
            kept = times[hi:last]  # the limit's own time stays until the whole is timed again
            groups = [*groups[:lo], *recut, *groups[hi:]]
            times = [*times[:first], *new_times[: len(new_times) - len(kept)], *kept, *times[last:]]
            index = lo + len(recut)
        else:
            index += 1
    if _shortfall(groups, _cue_times(groups, rules), rules) < _shortfall(cut, _cue_times(cut, rules), rules):
        return groups
    return cut


def _cue_times(
    groups: list[list[CueWord]], rules: SubtitleRules, previous_end: float = 0.0
) -> list[tuple[float, float]]:
    needs = [_need(group, rules) for group in groups]
    return _shift_boundaries(groups, _timed(groups, rules, previous_end), needs, rules)


def build_cues(words: list[CueWord], rules: SubtitleRules) -> list[Cue]:
    """The cues of a transcript's words under `rules`: in order, not overlapping, every word in one cue."""
    words = _split_long(words, rules.max_line_width - _longest_prefix(words, rules))
    groups = resplit(group_words(words, rules), rules)
    cues = []
    for group, (start, end) in zip(groups, _cue_times(groups, rules), strict=True):
        speaker = group[0].speaker
        lines = layout(group, rules.max_line_width, rules.max_line_count, _prefix(speaker, rules))
        assert lines is not None  # a cue is grouped only while its words fit
        cues.append(Cue(start=start, end=end, lines=lines, speaker=speaker, words=group))
    return cues


def _longest_prefix(words: list[CueWord], rules: SubtitleRules) -> int:
    return max((_prefix(word.speaker, rules) for word in words), default=0)


def _srt_time(seconds: float) -> str:
    return vtt_time(seconds).replace(".", ",")


def vtt_time(seconds: float) -> str:
    millis = round(seconds * 1000)
    hours, millis = divmod(millis, 3_600_000)
    minutes, millis = divmod(millis, 60_000)
    secs, millis = divmod(millis, 1000)
    return f"{hours:02d}:{minutes:02d}:{secs:02d}.{millis:03d}"


def srt_document(cues: list[Cue], rules: SubtitleRules) -> str:
    """SubRip: cues numbered from 1, `00:00:01,000 --> 00:00:02,500`, the speaker as `[speaker_0] ` when shown."""
    blocks = []
    for number, cue in enumerate(cues, start=1):
        label = _label(cue.speaker, rules)
        text = f"[{label}] {cue.text}" if label else cue.text
        blocks.append(f"{number}\n{_srt_time(cue.start)} --> {_srt_time(cue.end)}\n{text}\n")
    return "\n".join(blocks)


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _vtt_text(cue: Cue, rules: SubtitleRules) -> str:
    if not rules.word_highlights:
        return _escape(cue.text)
    lines = []
    for line in cue.lines:
        parts = []
        for word in line:
            inside = vtt_time(cue.start) < vtt_time(word.start) < vtt_time(cue.end)  # strictly, as WebVTT wants
            at = f"<{vtt_time(word.start)}>" if inside else ""
            parts.append(f"{at}<c>{_escape(word.text)}</c>")
        lines.append(" ".join(parts))
    return "\n".join(lines)


def vtt_document(cues: list[Cue], rules: SubtitleRules) -> str:
    """WebVTT: a `WEBVTT` header, cues timed `00:00:01.000 --> 00:00:02.500`; the speaker as a voice span
    (`<v speaker_0>`) when shown, each word timed inside its cue with word_highlights."""
    blocks = ["WEBVTT\n"]
    for cue in cues:
        label = _label(cue.speaker, rules)
        text = _vtt_text(cue, rules)
        if label:
            text = f"<v {_escape(label)}>{text}"
        blocks.append(f"{vtt_time(cue.start)} --> {vtt_time(cue.end)}\n{text}\n")
    return "\n".join(blocks)


def subtitle_words(words: Sequence[Word], segments: Sequence[Segment | DiarizedSegment]) -> list[CueWord]:
    """The words to cut cues from: the transcript's own, or its segments' split evenly when it has none."""
    return cue_words(words) if words else words_of_segments(segments)
