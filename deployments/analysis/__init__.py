"""Understanding the conversation: an LLM answers a client's prompt over the transcript (optionally as JSON
valid against a schema), tags diarized speakers with roles, and labels each segment's emotion (the `Analyzer`
deployment). It reads transcripts only, never audio; `audio_emotions` is the optional audio-based classifier
for the stage that has the audio."""
