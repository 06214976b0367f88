"""When each cue is on screen: its words' span, lengthened into free time until it can be read
(`max_chars_per_second`) and does not flicker by, and the boundaries between close cues moved so that time one
cue can spare reaches another that is short of it."""

from serve_app.rendering.subtitles.rules import (
    LAG_S,
    LEAD_IN_S,
    MIN_CUE_DURATION_S,
    PAUSE_BREAK_S,
    TIME_EPSILON_S,
    SubtitleRules,
)
from serve_app.rendering.subtitles.words import CueWord


def _timed(groups: list[list[CueWord]], rules: SubtitleRules, previous_end: float = 0.0) -> list[tuple[float, float]]:
    """Each cue's start and end: its words' span, lengthened into the free time after it (never over the next cue)
    until it is on screen long enough to read and at least MIN_CUE_DURATION_S, never past max_cue_duration_s; a cue
    still read too fast may start a little earlier, after the cue before, or end a little later, delaying the next
    cue by at most LAG_S; and where two cues meet, the one read too fast takes time the other can spare (at most
    LAG_S after, LEAD_IN_S before)."""
    times: list[tuple[float, float]] = []
    needs = [time_needed(group, rules) for group in groups]
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


def character_count(group: list[CueWord]) -> int:
    """What a viewer reads of a cue: its words' characters and the spaces between them."""
    return sum(len(word.text) for word in group) + len(group) - 1


def reads_too_fast(group: list[CueWord], time: tuple[float, float], rules: SubtitleRules) -> bool:
    """Whether a cue is on screen for less than its characters take at `max_chars_per_second`."""
    start, end = time
    return end - start < character_count(group) / rules.max_chars_per_second - TIME_EPSILON_S


def time_needed(group: list[CueWord], rules: SubtitleRules) -> float:
    """How long a cue should stay up: long enough to read, and not to flicker by."""
    return max(character_count(group) / rules.max_chars_per_second, MIN_CUE_DURATION_S)


def shortfall(groups: list[list[CueWord]], times: list[tuple[float, float]], rules: SubtitleRules) -> tuple[int, float]:
    """How far timed cues fall short: the count read too fast, then the seconds missing from them all."""
    fast, missing = 0, 0.0
    for group, (start, end) in zip(groups, times, strict=True):
        fast += reads_too_fast(group, (start, end), rules)
        missing += max(0.0, time_needed(group, rules) - (end - start))
    return fast, missing


def cue_times(
    groups: list[list[CueWord]], rules: SubtitleRules, previous_end: float = 0.0
) -> list[tuple[float, float]]:
    """Each cue's start and end: as `_timed` times them, then with the boundaries along runs of close cues moved
    (`_shift_boundaries`) where fewer of them are then short of time."""
    needs = [time_needed(group, rules) for group in groups]
    return _shift_boundaries(groups, _timed(groups, rules, previous_end), needs, rules)
