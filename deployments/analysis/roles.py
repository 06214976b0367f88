"""Speaker roles: the LLM reads who said what and gives each diarized speaker a role, from the client's list
(or dict of name -> description) plus "unknown", or with "auto" a short label of its own in the conversation's
language. The answer is constrained to an object with one key per speaker (and with a list, to the allowed
names); a role the model still gets wrong becomes "unknown".

With a list or dict and a backend that scores (the embedded one), the model writes nothing: each speaker gets
the role under which the model finds that speaker's own words most likely ("You are a doctor in a
conversation." followed by what the speaker said, a noisy-channel classifier), or "unknown" when a plain
"person" explains them better than every listed role. Asking a small model "what is speaker_0's role?"
mostly measures its bias for a role name or a speaker label; the likelihood of the words does not have that
bias."""

from typing import Any

from deployments.analysis._calls import Session
from deployments.analysis._transcript import fit, lines
from deployments.analysis.errors import LLMOutputInvalid
from deployments.types import DiarizedTranscript

UNKNOWN = "unknown"
MAX_AUTO_ROLE_CHARS = 32
GENERIC_ROLE = "person"
SPEAKER_WORDS_TOKENS = 400
"""The most of one speaker's words that are scored (cut in the middle like a long transcript)."""


def persona(role: str, description: str) -> list[dict[str, str]]:
    about = f" ({description})" if description else ""
    article = "an" if role[:1].lower() in tuple("aeiou") else "a"
    return [
        {"role": "system", "content": f"You are {article} {role}{about} in a conversation."},
        {"role": "user", "content": "Speak."},
    ]


def scored(session: Session, transcript: DiarizedTranscript, roles: list[str] | dict[str, str]) -> dict[str, str]:
    """Each speaker's most likely role by the likelihood of their words (the backend must score)."""
    described = dict(roles) if isinstance(roles, dict) else dict.fromkeys(roles, "")
    described.pop(UNKNOWN, None)
    candidates = dict(described)
    candidates.setdefault(GENERIC_ROLE, "")
    result = {}
    for speaker in speakers_of(transcript):
        said = [segment.text.strip() for segment in transcript.segments if segment.speaker == speaker]
        words = fit([text for text in said if text], SPEAKER_WORDS_TOKENS, session.backend.count_tokens)
        if not words or not described:
            result[speaker] = UNKNOWN
            continue
        likelihood = {role: session.score(persona(role, about), [words])[0] for role, about in candidates.items()}
        best = max(described, key=lambda role: likelihood[role])
        plain_person = GENERIC_ROLE not in described and likelihood[GENERIC_ROLE] >= likelihood[best]
        result[speaker] = UNKNOWN if plain_person else best
    return result


def speakers_of(transcript: DiarizedTranscript) -> list[str]:
    return list(dict.fromkeys([s.speaker for s in transcript.speakers] + [s.speaker for s in transcript.segments]))


def role_schema(speakers: list[str], allowed: list[str] | None) -> dict[str, Any]:
    value = {"type": "string", "enum": allowed} if allowed else {"type": "string", "maxLength": MAX_AUTO_ROLE_CHARS}
    return {
        "type": "object",
        "properties": {speaker: value for speaker in speakers},
        "required": speakers,
        "additionalProperties": False,
    }


def instructions(roles: str | list[str] | dict[str, str]) -> str:
    if roles == "auto":
        return (
            "Give each speaker a short role label (one or two words, e.g. the job or part they play in the"
            " conversation), written in the conversation's language."
        )
    if isinstance(roles, dict):
        listed = "\n".join(f"- {name}: {description}" for name, description in roles.items())
    else:
        listed = "\n".join(f"- {name}" for name in roles)
    return f"Give each speaker one of these roles, or {UNKNOWN} if none fits:\n{listed}\n- {UNKNOWN}"


def assign(session: Session, transcript: DiarizedTranscript, roles: str | list[str] | dict[str, str]) -> dict[str, str]:
    speakers = speakers_of(transcript)
    if not speakers:
        return {}
    if roles != "auto" and not isinstance(roles, str) and session.can_score:
        return scored(session, transcript, roles)
    allowed = None if roles == "auto" else [*list(roles), UNKNOWN]
    schema = role_schema(speakers, allowed)
    rule = instructions(roles)
    budget = session.backend.context_tokens - session.backend.count_tokens(rule) - 40 * len(speakers) - 160
    text = fit(lines(transcript), max(budget, 64), session.backend.count_tokens)
    user = (
        f"Transcript:\n{text}\n\n{rule}\n\nSpeakers: {', '.join(speakers)}.\n"
        'Answer with JSON mapping each speaker to a role, e.g. {"' + speakers[0] + '": "..."}.'
    )
    messages = [
        {"role": "system", "content": "You identify the roles of the people in a conversation."},
        {"role": "user", "content": user},
    ]
    try:
        answer = session.complete_json(messages, schema, 24 * len(speakers) + 16)
    except LLMOutputInvalid:
        answer = {}
    return {speaker: clean(answer.get(speaker), allowed) for speaker in speakers}


def clean(role: object, allowed: list[str] | None) -> str:
    if not isinstance(role, str) or not role.strip():
        return UNKNOWN
    role = role.strip()[:MAX_AUTO_ROLE_CHARS]
    if allowed is not None and role not in allowed:
        return UNKNOWN
    return role
