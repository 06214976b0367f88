"""OpenAI realtime transcription sessions (`/v1/realtime`): a protocol adapter over the live sessions'
LiveTranscriber (`connection`, over `_config` and `_events`)."""
