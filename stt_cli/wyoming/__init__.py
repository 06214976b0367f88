"""`stt wyoming`: a Wyoming speech-to-text server (Home Assistant's voice pipelines) in front of the service,
as a client of its live API (live.py) or of its REST API (rest.py). Imported only by that command: the
`wyoming` and `websockets` packages stay out of `stt --help`."""
