"""task=diarize end to end over HTTP: real two-speaker speech, the embedded pyannote pipeline, real Whisper."""

import numpy as np
import pytest

from deployments.files.decoding import decode_audio
from devkit.media import SHARED_AUDIO, encode, pyannote_sample
from tests.conftest import Service
from tests.test_jobs_service import _submit, _wait


@pytest.fixture(scope="module")
def two_speakers_wav() -> bytes:
    return pyannote_sample().read_bytes()


def _diarize(service: Service, data: bytes, **fields: str) -> dict:
    with service.client() as client:
        response = client.post(
            "/v1/audio/transcriptions", files={"file": ("call.wav", data)}, data={"task": "diarize", **fields}
        )
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("application/json")
    return response.json()


@pytest.fixture(scope="module")
def short_call_wav() -> bytes:
    """The call's first 12 s (both speakers talk in it): enough for the tests that check options."""
    return encode(decode_audio(pyannote_sample()).samples[: 12 * 16_000], "flac")


@pytest.fixture(scope="module")
def call_result(service: Service, two_speakers_wav: bytes) -> dict:
    return _diarize(service, two_speakers_wav)


def test_two_speakers_found_and_every_word_has_one(call_result: dict) -> None:
    result = call_result
    assert result["task"] == "diarize" and result["language"] == "en"
    assert abs(result["duration"] - 30.0) < 0.5
    assert [speaker["speaker"] for speaker in result["speakers"]] == ["speaker_0", "speaker_1"]
    assert all(speaker["speaking_time"] > 3 for speaker in result["speakers"])
    segments = result["segments"]
    assert {segment["speaker"] for segment in segments} == {"speaker_0", "speaker_1"}
    for segment in segments:
        assert segment["type"] == "transcript.text.segment" and segment["text"]
        assert segment["start"] <= segment["end"]
        inside = [w for w in result["words"] if segment["start"] <= (w["start"] + w["end"]) / 2 <= segment["end"]]
        assert inside and any(word["speaker"] == segment["speaker"] for word in inside)
    words = result["words"]
    assert {word["speaker"] for word in words} == {"speaker_0", "speaker_1"}
    assert all(word["word"] == word["word"].strip() and 0 <= word["prob"] <= 1 for word in words)
    assert [segment["id"] for segment in segments] == list(range(len(segments)))
    assert "".join(segment["text"] for segment in segments).replace(" ", "") == result["text"].replace(" ", "")


def test_num_speakers_is_honoured(service: Service, short_call_wav: bytes) -> None:
    result = _diarize(service, short_call_wav, num_speakers="1")
    assert len(result["speakers"]) == 1
    assert {segment["speaker"] for segment in result["segments"]} == {result["speakers"][0]["speaker"]}


@pytest.mark.parametrize("setting", ["general", "meeting", "telephonic"])
def test_every_setting_is_accepted_and_the_result_is_json_whatever_the_format(
    service: Service, short_call_wav: bytes, setting: str
) -> None:
    result = _diarize(service, short_call_wav, diarization_setting=setting, response_format="srt")
    assert 1 <= len(result["speakers"]) <= 2


def test_silence_gives_no_speakers_not_an_error(service: Service) -> None:
    result = _diarize(service, encode(np.zeros(3 * 16_000, dtype=np.float32), "wav"))
    assert result["speakers"] == [] and result["segments"] == [] and result["text"] == ""


def test_bad_diarization_fields_are_validation_errors(service: Service, two_speakers_wav: bytes) -> None:
    with service.client() as client:
        for field, value in [("num_speakers", "0"), ("num_speakers", "-2"), ("num_speakers", "NaN"),
                             ("diarization_setting", "podcast")]:  # fmt: skip
            response = client.post(
                "/v1/audio/transcriptions", files={"file": ("a.wav", two_speakers_wav)}, data={field: value}
            )
            assert response.status_code == 422, (field, value)
            assert response.json()["detail"][0]["loc"] == ["body", field]


def test_diarize_as_a_job(service: Service) -> None:
    half = decode_audio(pyannote_sample()).samples[: 20 * 16_000]
    job = _wait(service, _submit(service, encode(half, "flac"), task="diarize", num_speakers="2")["job_id"])
    assert job["status"] == "complete", job
    result = job["result"]
    assert result["task"] == "diarize" and len(result["speakers"]) == 2
    assert result["words"] and all(word["speaker"] in ("speaker_0", "speaker_1") for word in result["words"])


def _annotation(items: list[dict]):
    from pyannote.core import Annotation, Segment

    result = Annotation()
    for index, item in enumerate(items):
        result[Segment(item["start"], item["end"]), index] = item["speaker"]
    return result


def test_segments_and_turns_score_close_to_the_reference(call_result: dict) -> None:
    """Strict DER (no collar, overlap scored) against sample.rttm, from what the user gets back: the
    turns (5.2% with the embedded pipeline) and the segments, which follow them (6.5% with Whisper base,
    scripts/bench_diarization.py; a little more with tiny.en, the test model)."""
    from pyannote.database.util import load_rttm
    from pyannote.metrics.diarization import DiarizationErrorRate

    reference = next(iter(load_rttm(str(pyannote_sample().with_suffix(".rttm"))).values()))
    result = call_result
    assert len(result["speakers"]) == len(reference.labels()) == 2
    der = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    assert der(reference, _annotation(result["turns"])) <= 0.08
    assert der(reference, _annotation(result["segments"])) <= 0.08


AMI_DEV = ["dev00", "dev01"]


@pytest.mark.skipif(not (SHARED_AUDIO / "ami_dev.rttm").exists(), reason="../shared/audio (AMI excerpts) absent")
def test_meeting_excerpts_get_their_speaker_count_and_a_der_bound(service: Service) -> None:
    """The AMI dev excerpts (far-field meetings, two speakers each, overlap), sent as jobs at once: the
    default setting counts two speakers, and the turns and segments stay under the DER measured by
    scripts/bench_diarization.py (dev00 11.4/14.8%, dev01 47.7/48.7%) plus a margin for tiny.en; the
    turns' total over both stays within issue 18's 28%."""
    from pyannote.core import Segment, Timeline
    from pyannote.database.util import load_rttm
    from pyannote.metrics.diarization import DiarizationErrorRate

    references = load_rttm(str(SHARED_AUDIO / "ami_dev.rttm"))
    jobs = {name: _submit(service, (SHARED_AUDIO / f"{name}.wav").read_bytes(), task="diarize") for name in AMI_DEV}
    bounds = {"dev00": 0.17, "dev01": 0.52}
    turns_total = DiarizationErrorRate(collar=0.0, skip_overlap=False)
    for name, submitted in jobs.items():
        job = _wait(service, submitted["job_id"])
        assert job["status"] == "complete", job
        result, reference = job["result"], references[name]
        assert len(result["speakers"]) == len(reference.labels()) == 2, (name, result["speakers"])
        uem = Timeline([Segment(0, 30)])
        for field in ("turns", "segments"):
            der = DiarizationErrorRate(collar=0.0, skip_overlap=False)(reference, _annotation(result[field]), uem=uem)
            assert der <= bounds[name], (name, field, der)
        turns_total(reference, _annotation(result["turns"]), uem=uem)
    assert abs(turns_total) <= 0.28


JOB_WAVE = 6
"""Jobs submitted at once: the test key's running-job limit."""
SEGMENTS_TOTAL_BOUND = 0.37
"""scripts/bench_diarization.py, Whisper base words: 29.4% over the twelve files (README, Diarization accuracy);
with tiny.en, the test model, which hears fewer of the quiet words: 34.0% here."""
SEGMENTS_WITH_COUNT_TOTAL_BOUND = 0.39
"""The same with the reference's count given: 31.0% with base (trn08 and trn09 worse, none better), 35.1% with
tiny.en here."""


@pytest.mark.bench  # 24 diarization jobs, ~4 min on 2 cores: `pytest -m bench` (README, Diarization accuracy)
@pytest.mark.skipif(not (SHARED_AUDIO / "ami_train.rttm").exists(), reason="../shared/audio (AMI excerpts) absent")
def test_every_reference_meeting_scores_within_the_measured_totals(service: Service) -> None:
    """Every reference recording of ../shared/audio (the call and twelve AMI excerpts, 1 to 4 speakers, quiet
    and overlapped), as jobs: the segments' total strict DER stays within the total measured by
    scripts/bench_diarization.py plus a margin for tiny.en (the test model), with and without `num_speakers`.
    Each job completes and every segment has end > start."""
    from pyannote.metrics.diarization import DiarizationErrorRate

    from devkit.diarization_references import reference_cases, speakers_in

    meetings = reference_cases()  # what the bench scores, as it scores them
    runs: list[tuple[str, dict[str, str]]] = [(case.name, {}) for case in meetings] + [
        (case.name, {"num_speakers": str(speakers_in(case))}) for case in meetings
    ]
    results: dict[tuple[str, bool], dict] = {}
    for wave in range(0, len(runs), JOB_WAVE):
        submitted = [
            (name, fields, _submit(service, (SHARED_AUDIO / f"{name}.wav").read_bytes(), task="diarize", **fields))
            for name, fields in runs[wave : wave + JOB_WAVE]
        ]
        for name, fields, job in submitted:
            done = _wait(service, job["job_id"])
            assert done["status"] == "complete", done
            results[name, bool(fields)] = done["result"]
    totals = {given: DiarizationErrorRate(collar=0.0, skip_overlap=False) for given in (False, True)}
    for case in meetings:
        for given, total in totals.items():
            segments = results[case.name, given]["segments"]
            assert all(segment["end"] > segment["start"] for segment in segments)
            total(case.reference, _annotation(segments), uem=case.uem)
    print(f"\nsegments DER over {len(meetings)} files: {abs(totals[False]):.3f}, count given {abs(totals[True]):.3f}")
    assert abs(totals[False]) <= SEGMENTS_TOTAL_BOUND, abs(totals[False])
    assert abs(totals[True]) <= SEGMENTS_WITH_COUNT_TOTAL_BOUND, abs(totals[True])
