"""Enrolled voices (deployments/voices/): how many a key keeps, how many a request names, and how much speech
an enrolment clip gives."""

from pydantic import Field

from deployments.config.base import StrictModel


class VoicesConfig(StrictModel):
    """Voices enrolled once (`POST /v1/voices`) and named in every diarized transcript that asks for them."""

    max_per_key: int = Field(100, ge=0, description="Voices one API key may keep enrolled (0: enrolment is off).")
    max_per_request: int = Field(
        20, ge=1, description="Voice ids one request may name (`voices`): each is compared with every speaker."
    )
    min_speech_s: float = Field(
        3.0, gt=0, description="Speech (after voice activity detection) an enrolment clip must hold at least."
    )
    max_speech_s: float = Field(
        60.0, gt=0, description="Speech an enrolment embeds at most: a longer clip is trimmed to its first this much."
    )
    max_clip_s: float = Field(
        600.0, gt=0, description="An enrolment clip longer than this is refused before it is decoded further."
    )
