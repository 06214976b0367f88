"""whisper-asr-webservice's API (`POST /asr`, `POST /detect-language`), for the subtitle tools that call it
(Bazarr's whisperai provider, among others). Those tools send no key: the routes are off unless the operator
enables them, open only to callers in `allowed_networks`, and charged to one named key."""
