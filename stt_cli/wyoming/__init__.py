"""`stt wyoming`: a Wyoming speech-to-text server (Home Assistant's voice pipelines) in front of the service,
as a client of its REST API. Imported only by that command: the `wyoming` package stays out of `stt --help`."""
