"""The nexara live protocol (`/v1/transcribe`): one WebSocket's frames in, events out (`route`, `connection`, over
`serve_app.sessions`)."""
