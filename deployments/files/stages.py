"""The pipeline's parts as other pipelines reuse them (the bulk mode's Ray Data stages, `deployments/batch/`):
the same decoder, VAD chunker, chunk sender and assembly the `TranscriptionPipeline` runs, not copies."""

from deployments.files._assembly import LanguageRule, TranscriptAssembly
from deployments.files._chunking import Chunk, SpeechChunker, StreamingChunker
from deployments.files._profanity import mask_transcript
from deployments.files._sending import ChunkSender, FileProgress
from deployments.files._url_fetch import fetch_to_file

__all__ = [
    "Chunk",
    "ChunkSender",
    "FileProgress",
    "LanguageRule",
    "SpeechChunker",
    "StreamingChunker",
    "TranscriptAssembly",
    "fetch_to_file",
    "mask_transcript",
]
