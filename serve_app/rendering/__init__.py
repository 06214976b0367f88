"""Results rendered for clients, the same for every protocol: the response formats (`response_formats`, with the
JSON objects of `bodies`), srt and vtt cues (`subtitles`), and a job's public answer (`job_answer`, which its poll
and its callback both send). Apart from the protocols so that none imports another to render alike: a batch's
outputs are the REST API's bodies, the asr_webservice and AssemblyAI cut subtitles by the same rules."""
