"""Bulk transcription on Ray Data (`stt batch`, `python -m serve_app.batch`): a folder, prefix or manifest of
recordings through the service's own pipeline and engines, one output per input, resumable.

`inputs` lists what to transcribe, `stages` is the actor pool that transcribes, `outputs` writes atomically,
`resume` says what a rerun skips and `run` streams the files through Ray Data. Rendering is the edge's
(`serve_app/batch/`): it is passed in, so these workers keep returning domain objects.
"""
