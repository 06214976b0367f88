"""Enrolled voices: speakers named across recordings (docs/voices.md)."""
