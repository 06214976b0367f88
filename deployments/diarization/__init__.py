"""Diarization: who spoke when (the `Diarizer` deployment, pyannote.audio on embedded models), and which
speaker said each word (`words`)."""
