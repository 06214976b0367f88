"""How the edge's JSON bodies write a moment in time: one way for every API (a job's times, a usage entry's, an
admin key's), so every client parses them alike."""

from datetime import datetime
from typing import Annotated

from pydantic import PlainSerializer

UtcDatetime = Annotated[datetime, PlainSerializer(lambda moment: moment.isoformat(), return_type=str)]
"""ISO 8601 with an explicit offset (`+00:00`), which every client's parser accepts."""
