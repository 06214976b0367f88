"""Job callbacks (`callbacks:`): the ingress replicas' callback sender."""

from pydantic import Field, model_validator

from deployments.config.base import Networks, StrictModel


class CallbacksConfig(StrictModel):
    """Job callbacks (`callback_url`): the job object POSTed to the client's server when a job ends, from every
    ingress replica, retried with backoff while the result is kept (`jobs.retention_s`)."""

    allowed_networks: Networks = Field(
        default_factory=list,
        description="CIDRs a callback may be sent to even though they are private or loopback (as"
        " url_input.allowed_networks). Empty: public addresses only.",
    )
    timeout_s: float = Field(10, gt=0, description="A delivery is a 2xx answer within this many seconds.")
    backoff_base_s: float = Field(
        10, gt=0, description="Wait after the first failed attempt; each next wait doubles (with jitter)."
    )
    backoff_max_s: float = Field(3600, gt=0, description="Longest wait between two attempts.")
    min_attempts: int = Field(
        8, ge=1, description="Attempts made before giving up, even past the result's retention period."
    )
    poll_interval_s: float = Field(
        1.0, gt=0, description="How often each ingress replica looks for callbacks that are due."
    )
    lease_s: float = Field(
        60,
        gt=0,
        description="How long a replica holds a callback it is sending; a replica that dies holding one lets it go"
        " after this. Longer than timeout_s.",
    )
    max_in_flight: int = Field(32, ge=1, description="Callbacks one ingress replica sends at once.")
    max_response_bytes: int = Field(
        65536, ge=0, description="Bytes of a receiver's answer read at most (the rest is dropped)."
    )

    @model_validator(mode="after")
    def lease_outlasts_a_send(self) -> "CallbacksConfig":
        if self.lease_s <= self.timeout_s:
            raise ValueError("callbacks.lease_s must be longer than callbacks.timeout_s")
        return self
