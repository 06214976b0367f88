"""`python -m serve_app.batch INPUT OUTPUT` (what `stt batch` runs, and a `ray job submit` entrypoint): the edge
of the bulk mode. It reads the options as the transcription form does (`TranscriptionForm`: the same checks and
the same engine options for the same choices), hands `deployments/batch/` the files and renders each result as
the REST API renders it (`serve_app/rendering/response_formats.py`), so a batch's outputs are the service's
bodies."""
