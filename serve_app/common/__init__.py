"""The HTTP plumbing every client protocol uses: the app factory, error answers, services and dependencies, API
keys, request metrics, the streaming upload, a request's intake and its charge, finished jobs' answers."""
