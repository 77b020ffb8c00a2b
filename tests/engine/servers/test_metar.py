"""METAR parser and ATIS phraseology: a real-format corpus with every element's expected parse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.servers.aviation_atis.metar import MetarError, is_newer, parse_metar
from engine.servers.aviation_atis.phraseology import atis_text, digits, hundreds, runway, trend
from engine.servers.aviation_atis.source import latest_for

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "metar" / "corpus.txt"

# Expected parse per corpus line, keyed by "STATION TIME"; keys are dotted paths into the parse.
EXPECTED: dict[str, dict[str, Any]] = {
    "LSZH 121250Z": {
        "wind.direction": 240,
        "wind.speed": 8,
        "wind.gust": None,
        "visibility.metres": 9999,
        "visibility.ten_km_or_more": True,
        "clouds": [{"cover": "FEW", "height_ft": 3000, "type": None}],
        "temperature": 15,
        "dew_point": 9,
        "qnh.hpa": 1013,
        "qnh.inhg": 29.91,
        "trend": "NOSIG",
    },
    "EGLL 121320Z": {
        "weather.0.intensity": "light",
        "weather.0.phenomena": ["RA"],
        "clouds.1.cover": "BKN",
        "clouds.1.height_ft": 2000,
        "qnh.hpa": 1006,
    },
    "KJFK 121351Z": {
        "wind.gust": 25,
        "visibility.statute_miles": 10.0,
        "visibility.metres": 16093,
        "temperature": -2,
        "dew_point": -12,
        "qnh.inhg": 30.12,
        "qnh.hpa": 1020,
        "qnh.reported": "inHg",
        "remarks": "AO2 SLP201 T10221117",
        "clouds.1.height_ft": 25000,
    },
    "ENGM 121350Z": {
        "visibility.metres": 400,
        "rvr.0.runway": "01L",
        "rvr.0.prefix": "more_than",
        "rvr.0.value": 1500,
        "rvr.0.tendency": "no_change",
        "rvr.1.prefix": "less_than",
        "rvr.1.value": 50,
        "rvr.1.tendency": "down",
        "weather.0.phenomena": ["FG"],
        "vertical_visibility_ft": 100,
        "temperature": -2,
        "trend": "BECMG 0800",
    },
    "EDDF 121350Z": {
        "wind.variable": True,
        "wind.direction": None,
        "wind.speed": 2,
        "cavok": True,
        "clouds": [],
        "temperature": 18,
    },
    "LFPG 121400Z": {
        "wind.gust": 32,
        "wind.variable_from": 240,
        "wind.variable_to": 300,
        "visibility.metres": 6000,
        "weather.0.intensity": "heavy",
        "weather.0.descriptor": "TS",
        "weather.0.phenomena": ["RA"],
        "clouds.0.type": "CB",
        "clouds.0.height_ft": 1500,
        "qnh.hpa": 998,
        "trend": "TEMPO 3000 TSRA",
    },
    "KORD 121451Z": {
        "wind.calm": True,
        "visibility.statute_miles": 0.5,
        "rvr.0.unit": "FT",
        "rvr.0.value": 2400,
        "rvr.0.variable_to": 4000,
        "weather.0.phenomena": ["BR"],
        "clouds.0.cover": "OVC",
        "clouds.0.height_ft": 200,
        "qnh.inhg": 29.98,
    },
    "KDEN 121453Z": {
        "visibility.statute_miles": 1.5,
        "visibility.text": "1 1/2SM",
        "weather.0.descriptor": "SH",
        "weather.0.phenomena": ["SN"],
        "temperature": -5,
        "dew_point": -7,
    },
    "EHAM 121425Z": {
        "weather.0.vicinity": True,
        "weather.0.descriptor": "SH",
        "weather.0.phenomena": [],
        "clouds.0.type": "TCU",
    },
    "LOWW 121420Z": {"wind.direction": 290, "wind.speed": 25, "wind.gust": 38},
    "ESSA 121420Z": {"visibility.metres": 3000, "weather.0.phenomena": ["BR"], "sky_condition": "NSC"},
    "EKCH 121420Z": {"sky_condition": "NCD", "qnh.hpa": 1016},
    "KLAX 121453Z": {"sky_condition": "SKC", "qnh.inhg": 29.9, "qnh.hpa": 1013},
    "KSFO 121456Z": {"sky_condition": "CLR", "remarks": "AO2"},
    "CYYZ 121400Z": {
        "visibility.statute_miles": 15.0,
        "weather.0.descriptor": "FZ",
        "weather.0.phenomena": ["DZ"],
        "weather.0.intensity": "light",
        "temperature": -1,
    },
    "UUEE 121430Z": {
        "wind.unit": "MPS",
        "wind.speed": 4,
        "temperature": -12,
        "dew_point": -14,
        "runway_state": ["R06C/290050"],
        "qnh.hpa": 1030,
    },
    "RJTT 121430Z": {"clouds.2.cover": "BKN", "clouds.2.height_ft": 6000, "weather.0.descriptor": "SH"},
    "OMDB 121400Z": {"weather.0.phenomena": ["HZ"], "temperature": 38, "qnh.hpa": 1000},
    "YSSY 121430Z": {"weather.0.intensity": "moderate", "trend": "TEMPO 5000 SHRA"},
    "LEMD 121430Z": {"cavok": True, "wind.variable_from": 350, "wind.variable_to": 60, "dew_point": -1},
    "EIDW 121430Z": {"weather.0.phenomena": ["DZ"], "trend": "BECMG FEW020"},
    "BIKF 121430Z": {
        "weather.0.descriptor": "BL",
        "weather.0.phenomena": ["SN"],
        "vertical_visibility_ft": 400,
        "qnh.hpa": 982,
        "wind.gust": 41,
    },
    "LIRF 121420Z": {
        "visibility.metres": 350,
        "rvr.0.tendency": "up",
        "weather.0.descriptor": "FZ",
        "weather.0.phenomena": ["FG"],
        "sky_obscured": True,
        "vertical_visibility_ft": None,
    },
    "KBOS 121512Z": {
        "type": "SPECI",
        "visibility.statute_miles": 0.25,
        "rvr.0.value": 1000,
        "weather.0.intensity": "heavy",
        "weather.1.phenomena": ["FG"],
        "vertical_visibility_ft": 300,
    },
    "LKPR 121430Z": {"type": "METAR", "recent_weather.0.phenomena": ["RA"], "weather": []},
    "EGPH 121420Z": {"weather.0.phenomena": ["RA", "GS"], "clouds.1.type": "CB", "recent_weather.0.phenomena": ["RA"]},
    "LSGG 121420Z": {"auto": True, "sky_condition": "NCD"},
    "KMIA 121453Z": {"weather.0.vicinity": True, "weather.0.descriptor": "TS", "clouds.0.type": "CB"},
    "VHHH 121430Z": {"weather.0.intensity": "heavy", "weather.1.phenomena": ["BR"], "wind_shear": ["R07L"]},
    "EBBR 121420Z": {"weather.0.phenomena": ["RA", "DZ"], "visibility.metres": 7000},
    "LFMN 121430Z": {
        "visibility.metres": 4000,
        "minimum_visibility": {"metres": 1200, "direction": "SW"},
        "clouds.0.height_ft": 300,
    },
    "KPHX 121451Z": {
        "wind.variable": True,
        "visibility.more_than": True,
        "visibility.statute_miles": 6.0,
        "dew_point": -3,
    },
    "PANC 121453Z": {"visibility.less_than": True, "visibility.statute_miles": 0.25, "temperature": -15},
    "EFHK 121420Z": {"weather.0.phenomena": ["SN", "RA"], "temperature": 0, "dew_point": 0},
    "LGAV 121430Z": {"cavok": True, "visibility.ten_km_or_more": True},
}


def _corpus() -> list[str]:
    return [line.strip() for line in CORPUS.read_text().splitlines() if line.strip() and line[0] != "#"]


def _get(data: Any, path: str) -> Any:
    for part in path.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def test_corpus_is_large_and_fully_described() -> None:
    lines = _corpus()
    assert len(lines) >= 30
    keys = set()
    for line in lines:
        parsed = parse_metar(line)
        keys.add(f"{parsed['station']} {parsed['time']['text']}")
    assert keys == set(EXPECTED)


@pytest.mark.parametrize(
    "line", _corpus(), ids=lambda line: line.split()[0 if line[0] != "M" and line[0] != "S" else 1]
)
def test_corpus_line_parses_as_expected(line: str) -> None:
    parsed = parse_metar(line)
    assert parsed["unparsed"] == []
    expected = EXPECTED[f"{parsed['station']} {parsed['time']['text']}"]
    for path, value in expected.items():
        assert _get(parsed, path) == value, f"{parsed['station']}: {path}"
    # Every report is speakable.
    text = atis_text(parsed, {})
    assert text.endswith(".") and "information, time" in text


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "the METAR is empty"),
        ("   =  ", "the METAR is empty"),
        ("HELLO WORLD", "must start with a 4-letter ICAO station"),
        ("LSZH 24008KT 9999", "expected the observation time like 121250Z after LSZH"),
        ("LSZH 329950Z 24008KT", "not a valid day/hour/minute"),
        ("LSZH 121250Z NIL", "NIL"),
        ("LSZH 121250Z BANANA SPLIT", "no weather groups could be read"),
    ],
)
def test_malformed_metars_are_refused(raw: str, message: str) -> None:
    with pytest.raises(MetarError, match=message):
        parse_metar(raw)


def test_zurich_example_phraseology() -> None:
    parsed = parse_metar("LSZH 121250Z 24008KT 9999 FEW030 15/09 Q1013")
    assert atis_text(parsed, {"name": "Zurich", "runway_in_use": "14"}) == (
        "Zurich information, time one two five zero zulu. Runway in use one four. Wind two four zero "
        "degrees, eight knots. Visibility one zero kilometres or more. Few clouds at three thousand feet. "
        "Temperature one five, dew point niner. QNH one zero one three."
    )


def test_phraseology_details() -> None:
    assert digits(1009) == "one zero zero niner"
    assert hundreds(3500) == "three thousand five hundred"
    assert hundreds(12000) == "one two thousand"
    assert hundreds(50) == "five zero"
    assert runway("28L") == "two eight left"
    assert trend("NOSIG") == "No significant change"
    assert trend("TEMPO 3000 -SHRA") == ("Trend: temporarily visibility three thousand metres, light rain showers")
    kjfk = atis_text(parse_metar("KJFK 121351Z 31015G25KT 1 1/2SM +TSRA VV002 M05/M07 A2992"), {})
    assert kjfk.startswith("Kilo Juliett Foxtrot Kilo information, time one three five one zulu.")
    for part in (
        "gusting two five knots",
        "one and one half statute miles",
        "Heavy thunderstorm with rain",
        "Vertical visibility two hundred feet",
        "Temperature minus five, dew point minus seven",
        "Altimeter two niner niner two",
    ):
        assert part in kjfk
    cavok = atis_text(
        parse_metar("EDDF 121350Z VRB02KT CAVOK 18/07 Q1021 NOSIG"),
        {"advisories": ["Bird activity reported."], "frequency": "118.025"},
    )
    assert "Wind variable, two knots. CAVOK." in cavok
    assert cavok.endswith(
        "No significant change. Bird activity reported. ATIS frequency one one eight decimal zero two five."
    )


def test_latest_line_per_station_wins() -> None:
    text = (
        "LSZH 121220Z 24006KT 9999 FEW045 16/08 Q1019=\nEGLL 121250Z 27012KT 9999 BKN025 12/10 Q1008=\n"
        "LSZH 121250Z 24008KT 9999 FEW030 15/09 Q1013=\nLSZH 121150Z 24008KT 9999 FEW030 14/09 Q1013=\n"
    )
    assert latest_for("LSZH", text) == "LSZH 121250Z 24008KT 9999 FEW030 15/09 Q1013"
    assert latest_for("KJFK", text) is None
    assert is_newer((1, 0, 20), (31, 23, 50))  # month wrap
    assert not is_newer((31, 23, 50), (1, 0, 20))
