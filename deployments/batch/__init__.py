"""Bulk transcription on Ray Data (`stt batch`, `python -m serve_app.batch`): a folder, prefix or manifest of
recordings through the service's own pipeline and engines, one output per input, resumable.

`inputs` lists what to transcribe (streamed), `journal` keeps the driver's listing and outcomes in files, `decode`
(CPU tasks), `engine` (the engines' actor pool), `assemble` (one actor) and `speakers` (a pool, when asked) are
the Ray Data stages over the rows of `stages`, `outputs` writes atomically, `resume` says what a rerun skips,
`scratch` is each process's spool and `run` is the driver. Rendering is the edge's (`serve_app/batch/`): it is
passed in, so these workers keep returning domain objects.
"""
