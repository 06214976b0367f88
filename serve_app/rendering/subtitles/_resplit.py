"""Reading-speed repair: where a cue still reads too fast once timed (fast speech with the next cue right behind),
it and its neighbours are cut again so that words move to a cue with time to spare, as subtitlers re-split."""

from serve_app.rendering.subtitles._breaks import break_after, fits, hard_break
from serve_app.rendering.subtitles._timing import character_count, cue_times, reads_too_fast, shortfall, time_needed
from serve_app.rendering.subtitles.rules import LAG_S, LEAD_IN_S, MIN_CUE_DURATION_S, RESPLIT_REACH, SubtitleRules
from serve_app.rendering.subtitles.words import CueWord


def _recut(words: list[CueWord], rules: SubtitleRules, start: float, end: float) -> list[list[CueWord]]:
    """`words` cut again into the cues that best get their reading time between `start` and `end`, timed as
    `_timing._timed` may (a cue ends where it has its time, between LEAD_IN_S before and LAG_S after the next
    cue's first word); among cuts as well timed, the one at the most natural breaks with the fewest cues."""
    n = len(words)
    room = rules.max_line_width * rules.max_line_count
    inf = float("inf")
    best: list[tuple[float, float]] = [(0.0, start)] + [(inf, inf)] * n  # (cost, where the cue ending here ends)
    back = [0] * (n + 1)
    for b in range(1, n + 1):
        characters = -1
        for a in range(b - 1, -1, -1):
            if a < b - 1 and hard_break(words[a], words[a + 1]):
                break  # a cue never runs over a pause or a change of speaker
            group, characters = words[a:b], characters + len(words[a].text) + 1
            too_long = group[-1].end - group[0].start > rules.max_cue_duration_s and len(group) > 1
            if characters > room or too_long:
                break  # and longer still for any earlier `a`
            (cost, at), need = best[a], max(characters / rules.max_chars_per_second, MIN_CUE_DURATION_S)
            if cost == inf or not fits(group, rules):
                continue
            latest = min(end if b == n else words[b].start + LAG_S, at + rules.max_cue_duration_s)
            until = latest if b == n else max(min(at + need, latest), words[b].start - LEAD_IN_S, at)
            cost += 100 * max(0.0, need - (until - at)) + 1
            if b < n:
                cost -= 0.3 * break_after(words[b - 1], words[b])
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
    return max(start, min(group[0].start + LAG_S, end - time_needed(group, rules)))


def resplit(groups: list[list[CueWord]], rules: SubtitleRules) -> list[list[CueWord]]:
    """Where a cue still reads too fast (fast speech with the next cue right behind), it and up to RESPLIT_REACH
    cues on each side are cut again (never over a pause or a change of speaker) so that words move to a neighbour
    with time to spare, as subtitlers re-split; kept only where fewer cues then read too fast, in each window and
    in the whole."""
    cut, times = groups, cue_times(groups, rules)
    index = 0
    while index < len(groups):
        start, end = times[index]
        if not reads_too_fast(groups[index], (start, end), rules):
            index += 1
            continue
        lo, hi = max(index - RESPLIT_REACH, 0), min(index + RESPLIT_REACH + 1, len(groups))
        limit = _latest_start(groups[hi], times[hi], rules) if hi < len(groups) else float("inf")
        words = [word for group in groups[lo:hi] for word in group]
        if character_count(words) / rules.max_chars_per_second > limit - times[lo][0]:
            index += 1  # too fast throughout: no cut gives every cue its time
            continue
        recut = _recut(words, rules, times[lo][0], limit)
        # judged on the window and a cue each side, timed alike; the cue after it (if any) is there as a limit
        first, last = max(lo - 1, 0), min(hi + 1, len(groups))
        before = times[first - 1][1] if first > 0 else 0.0
        old, new = groups[first:last], [*groups[first:lo], *recut, *groups[hi:last]]
        old_times, new_times = cue_times(old, rules, before), cue_times(new, rules, before)
        if shortfall(new, new_times, rules) < shortfall(old, old_times, rules):
            kept = times[hi:last]  # the limit's own time stays until the whole is timed again
            groups = [*groups[:lo], *recut, *groups[hi:]]
            times = [*times[:first], *new_times[: len(new_times) - len(kept)], *kept, *times[last:]]
            index = lo + len(recut)
        else:
            index += 1
    if shortfall(groups, cue_times(groups, rules), rules) < shortfall(cut, cue_times(cut, rules), rules):
        return groups
    return cut
