"""The reference recordings diarization is scored on (every `*.rttm` of ../shared/audio with its `<name>.wav`):
scripts/bench_diarization.py scores them, tests/test_diarization_service.py bounds the service on the same ones."""

from dataclasses import dataclass

import numpy as np
from pyannote.core import Annotation, Timeline
from pyannote.database.util import load_rttm, load_uem

from deployments.files.decoding import decode_audio
from deployments.types import DiarizationSetting
from devkit.media import SHARED_AUDIO


@dataclass
class Case:
    name: str
    samples: np.ndarray
    reference: Annotation
    setting: DiarizationSetting
    uem: Timeline | None = None


SETTING_OF_REFERENCE = {"sample.rttm": DiarizationSetting.telephonic}
"""The `diarization_setting` preset meant for each reference file's recordings; meeting for the rest (AMI)."""


def reference_cases() -> list[Case]:
    """Every recording named in a `*.rttm` of ../shared/audio that has its `<name>.wav` there, scored on the
    UEM of the same stem where one exists (AMI: 0-30 s), on the whole reference otherwise."""
    cases = []
    for rttm in sorted(SHARED_AUDIO.glob("*.rttm")):
        uem_path = rttm.with_suffix(".uem")
        uems = load_uem(str(uem_path)) if uem_path.exists() else {}  # type: ignore[no-untyped-call]
        setting = SETTING_OF_REFERENCE.get(rttm.name, DiarizationSetting.meeting)
        for name, reference in sorted(load_rttm(str(rttm)).items()):  # type: ignore[no-untyped-call]
            if (SHARED_AUDIO / f"{name}.wav").exists():
                samples = decode_audio(SHARED_AUDIO / f"{name}.wav").samples
                cases.append(Case(name, samples, reference, setting, uems.get(name)))
    return cases


def speakers_in(case: Case) -> int:
    """How many speakers the reference has, within its UEM."""
    return len((case.reference.crop(case.uem) if case.uem is not None else case.reference).labels())
