"""Subtitle cues built from a transcript's word timings, by the rules subtitlers follow: short lines broken at
natural places, a cue at most two lines and a few seconds long, on screen long enough to be read, one speaker a cue.

Pure functions over words, so that every protocol's srt and vtt (REST, asr_webservice, AssemblyAI, ...) cut cues
alike. Callers give `rules` and `words`; `cues` cuts them (where lines and cues break: `_breaks`; when each cue
shows: `_timing`; the reading-speed repair: `_resplit`) and `documents` writes SRT and VTT.
"""

from serve_app.rendering.subtitles.cues import build_cues
from serve_app.rendering.subtitles.documents import srt_document, vtt_document
from serve_app.rendering.subtitles.rules import MIN_CUE_DURATION_S, SubtitleRules
from serve_app.rendering.subtitles.words import Cue, CueWord, cue_words, subtitle_words, words_of_segments

__all__ = [
    "MIN_CUE_DURATION_S",
    "Cue",
    "CueWord",
    "SubtitleRules",
    "build_cues",
    "cue_words",
    "srt_document",
    "subtitle_words",
    "vtt_document",
    "words_of_segments",
]
