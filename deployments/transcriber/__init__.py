"""The Transcriber: Whisper on batches of speech chunks from every file and live session, behind a gate that
lets interactive work go first and gives each request its turn. Engines: CTranslate2 (faster-whisper) and
Hugging Face transformers."""
