"""Live sessions: PCM in over a WebSocket, final words, speakers and turn ends out as they are spoken
(`LiveTranscriber`), on the same batched Transcriber as files. `events` is what the edge sends on the wire."""
