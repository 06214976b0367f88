"""Enrolled voices: the store's contract on SQLite and a real PostgreSQL server (per key, the embedding and the
name but no audio, the per-key limit held under concurrent enrolments), naming speakers by voices (one name
never to two speakers, a voice enrolled twice is one name), and the solo stretches a job's speaker is enrolled
from."""

import threading

import numpy as np

from deployments.config import StorageConfig
from deployments.diarization._known_speakers import match_speakers
from deployments.types import SpeakerTurn
from deployments.voices.store import VoiceLimitError, VoiceStore
from serve_app.voices.job_speech import solo_spans

EMBEDDING = [0.6, 0.8, 0.0]


def test_a_key_sees_only_its_own_voices(storage: StorageConfig) -> None:
    store = VoiceStore(storage)
    alice = store.create("owner-a", "Alice", EMBEDDING, 12.5, "campplus", max_per_key=10)
    bob = store.create("owner-a", "Bob", [0.0, 0.0, 1.0], 4.0, "campplus", max_per_key=10)
    other = store.create("owner-b", "Carol", EMBEDDING, 5.0, "campplus", max_per_key=10)
    assert alice.voice_id.startswith("voice_") and alice.embedding == EMBEDDING and alice.speech_s == 12.5
    assert VoiceStore(storage).get("owner-a", alice.voice_id) == alice  # another replica reads the same
    assert store.get("owner-a", other.voice_id) is None and store.get("owner-b", alice.voice_id) is None
    assert set(store.many("owner-a", [alice.voice_id, other.voice_id, "voice_x"])) == {alice.voice_id}
    assert [voice.voice_id for voice in store.page("owner-a", None, 10)] == [alice.voice_id, bob.voice_id]
    assert [voice.voice_id for voice in store.page("owner-a", alice.seq, 10)] == [bob.voice_id]
    renamed = store.rename("owner-a", alice.voice_id, "Alice B.")
    assert renamed is not None and renamed.name == "Alice B." and renamed.embedding == EMBEDDING
    assert store.rename("owner-b", alice.voice_id, "x") is None
    stored = store.get("owner-a", alice.voice_id)
    assert stored is not None and stored.known().name == "Alice B."  # what a request names speakers with
    assert not store.delete("owner-b", alice.voice_id) and store.delete("owner-a", alice.voice_id)
    assert store.get("owner-a", alice.voice_id) is None and not store.delete("owner-a", alice.voice_id)


def test_the_limit_per_key_holds_when_enrolments_race(storage: StorageConfig) -> None:
    stores = [VoiceStore(storage) for _ in range(4)]
    refused: list[Exception] = []

    def enrol(store: VoiceStore) -> None:
        try:
            store.create("owner", "x", EMBEDDING, 3.0, "campplus", max_per_key=2)
        except VoiceLimitError as error:
            refused.append(error)

    threads = [threading.Thread(target=enrol, args=(store,)) for store in stores]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(stores[0].page("owner", None, 10)) == 2 and len(refused) == 2


def unit(vector: list[float]) -> np.ndarray:
    array = np.asarray(vector, dtype=np.float64)
    return array / np.linalg.norm(array)


def test_one_name_never_goes_to_two_speakers() -> None:
    centroids = {"speaker_0": unit([1, 0.1, 0]), "speaker_1": unit([1, 0.5, 0]), "speaker_2": unit([0, 0, 1])}
    # Alice enrolled twice (two clips), Bob once: two candidates, not three
    references = [unit([1, 0.15, 0]), unit([1, 0.1, 0.05]), unit([0, 0.1, 1])]
    names = match_speakers(centroids, references, ["Alice", "Alice", "Bob"], threshold=0.55)
    assert names == {"speaker_0": "Alice", "speaker_2": "Bob"}  # speaker_1 is Alice-like too, but less
    assert match_speakers(centroids, [unit([0, 1, 0])], ["Stranger"], threshold=0.55) == {}


def test_a_job_speaker_is_read_where_they_talk_alone() -> None:
    turns = [SpeakerTurn(speaker="a", start=0, end=10), SpeakerTurn(speaker="b", start=2, end=3),
             SpeakerTurn(speaker="b", start=9, end=12), SpeakerTurn(speaker="a", start=13, end=14)]  # fmt: skip
    assert solo_spans(turns, "a") == [(0, 2), (3, 9), (13, 14)]
    assert solo_spans(turns, "b") == [(10, 12)]
    assert solo_spans(turns, "c") == []
