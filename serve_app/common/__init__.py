"""The HTTP plumbing every client protocol uses: the app factory, error answers, services and dependencies, API
keys, request metrics, the streaming upload, a request's intake and its charge, the synchronous transcription
and the job submission every protocol calls, finished jobs' answers."""
