"""OpenAI realtime transcription sessions (`/v1/realtime`): a protocol adapter over the live sessions'
LiveTranscriber (`route`, `connection`, over `_config`, `_events` and `serve_app.sessions`)."""
