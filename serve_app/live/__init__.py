"""The edge of live sessions: one WebSocket's frames in, events out (`connection`, over `_client_frames`,
`_relay`, `_socket` and `_usage`)."""
