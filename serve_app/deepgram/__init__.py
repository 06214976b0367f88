"""Deepgram's speech-to-text API (`/v1/listen`, pre-recorded and live), so the `deepgram-sdk` works unchanged
but for its address: a protocol adapter over the file pipeline, the job machinery and the live sessions' worker."""
