"""Cues written as SubRip (srt) and WebVTT (vtt) documents: the speaker's label where asked, and in WebVTT each
word timed inside its cue with word_highlights."""

from serve_app.rendering.subtitles._breaks import speaker_label
from serve_app.rendering.subtitles.rules import SubtitleRules
from serve_app.rendering.subtitles.words import Cue


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
        label = speaker_label(cue.speaker, rules)
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
        label = speaker_label(cue.speaker, rules)
        text = _vtt_text(cue, rules)
        if label:
            text = f"<v {_escape(label)}>{text}"
        blocks.append(f"{vtt_time(cue.start)} --> {vtt_time(cue.end)}\n{text}\n")
    return "\n".join(blocks)
