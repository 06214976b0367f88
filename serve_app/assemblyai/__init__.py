"""AssemblyAI's API (`/v2/upload`, `/v2/transcript...`, `/lemur/v3/generate/task`) over the service's own jobs
and Analyzer, so that the `assemblyai` SDK works with `aai.settings.base_url` pointed here."""
