"""The edge of live sessions: one WebSocket's frames in, events out (`connection`)."""
