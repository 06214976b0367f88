"""How the REST API's bodies write a moment in time."""

from datetime import datetime
from typing import Annotated

from pydantic import PlainSerializer

UtcDatetime = Annotated[datetime, PlainSerializer(lambda moment: moment.isoformat(), return_type=str)]
"""ISO 8601 with an explicit offset (`+00:00`), which every client's parser accepts."""
