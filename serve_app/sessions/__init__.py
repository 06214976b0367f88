"""What every live WebSocket protocol shares (the nexara live protocol, OpenAI realtime, Deepgram): who may open
a session (`admission`), the client's frames
forwarded to the LiveTranscriber (`frames`), its events relayed back (`relay`) over one socket (`socket`), and
the session's audio metered and charged (`usage`)."""
