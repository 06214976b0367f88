"""The assemblyai SDK keeps its address and key in global settings: pointed at the service for a test, then
put back, as its README tells users to set them."""

from collections.abc import Iterator
from contextlib import contextmanager

import assemblyai as aai


@contextmanager
def assemblyai_pointed_at(base_url: str, key: str) -> Iterator[None]:
    saved = aai.settings.copy()
    aai.settings.base_url = base_url
    aai.settings.api_key = key
    aai.settings.polling_interval = 0.5
    aai.settings.http_timeout = 300
    try:
        yield
    finally:
        for name, value in saved.dict().items():
            setattr(aai.settings, name, value)
