"""Files: a spooled upload or URL in, a transcript out. The `TranscriptionPipeline` deployment decodes a
window at a time, cuts speech chunks, sends them to the Transcriber, and asks the Diarizer who spoke."""
