"""The voices API (`/v1/voices`): speakers enrolled once per key and named in every diarized transcript, job and
live session that lists them (`voices`). docs/voices.md."""
