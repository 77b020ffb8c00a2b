"""ICAO radiotelephony phraseology for an ATIS broadcast built from a parsed METAR.

Why it exists: a voice agent reads the ATIS aloud, so numbers must come out the way pilots expect
("one two five zero zulu", "niner", "three thousand five hundred feet", "QNH one zero one three"). The
rules live here, apart from parsing and fetching, and are pure functions over the parser's output.
"""

from __future__ import annotations

import re
from typing import Any

from engine.servers.aviation_atis.metar import parse_cloud, parse_visibility, parse_weather, parse_wind

_DIGITS = {
    "0": "zero",
    "1": "one",
    "2": "two",
    "3": "three",
    "4": "four",
    "5": "five",
    "6": "six",
    "7": "seven",
    "8": "eight",
    "9": "niner",
    ".": "decimal",
}
_PHONETIC = {
    "A": "Alfa",
    "B": "Bravo",
    "C": "Charlie",
    "D": "Delta",
    "E": "Echo",
    "F": "Foxtrot",
    "G": "Golf",
    "H": "Hotel",
    "I": "India",
    "J": "Juliett",
    "K": "Kilo",
    "L": "Lima",
    "M": "Mike",
    "N": "November",
    "O": "Oscar",
    "P": "Papa",
    "Q": "Quebec",
    "R": "Romeo",
    "S": "Sierra",
    "T": "Tango",
    "U": "Uniform",
    "V": "Victor",
    "W": "Whiskey",
    "X": "X-ray",
    "Y": "Yankee",
    "Z": "Zulu",
}
_SIDES = {"L": "left", "R": "right", "C": "center"}
_COVER = {"FEW": "few", "SCT": "scattered", "BKN": "broken", "OVC": "overcast"}
_CLOUD_TYPE = {"CB": "cumulonimbus", "TCU": "towering cumulus"}
_DESCRIPTOR = {
    "MI": "shallow",
    "PR": "partial",
    "BC": "patches of",
    "DR": "low drifting",
    "BL": "blowing",
    "FZ": "freezing",
    "SH": "showers",
    "TS": "thunderstorm",
}
_PHENOMENON = {
    "DZ": "drizzle",
    "RA": "rain",
    "SN": "snow",
    "SG": "snow grains",
    "IC": "ice crystals",
    "PL": "ice pellets",
    "GR": "hail",
    "GS": "small hail",
    "UP": "unknown precipitation",
    "BR": "mist",
    "FG": "fog",
    "FU": "smoke",
    "VA": "volcanic ash",
    "DU": "dust",
    "SA": "sand",
    "HZ": "haze",
    "PY": "spray",
    "PO": "dust whirls",
    "SQ": "squalls",
    "FC": "funnel cloud",
    "SS": "sandstorm",
    "DS": "duststorm",
}
_SKY = {"NSC": "No significant cloud", "NCD": "No cloud detected", "SKC": "Sky clear", "CLR": "Sky clear"}
_UNITS = {"KT": "knots", "MPS": "metres per second", "KMH": "kilometres per hour"}
_SMALL = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "niner"]


def digits(value: int | str) -> str:
    """Read digit by digit: ``1013`` -> ``one zero one three``; ``9`` -> ``niner``."""
    return " ".join(_DIGITS[char] for char in str(value) if char in _DIGITS)


def spell(icao: str) -> str:
    """``LSZH`` -> ``Lima Sierra Zulu Hotel``."""
    return " ".join(_PHONETIC.get(char, char) for char in icao.upper())


def hundreds(value: int) -> str:
    """Heights and distances: ``3500`` -> ``three thousand five hundred``; ``12000`` -> ``one two thousand``.

    Values that are not whole hundreds are read digit by digit.
    """
    if value < 100 or value % 100:
        return digits(value)
    thousands, rest = divmod(value, 1000)
    parts: list[str] = []
    if thousands:
        parts.append(f"{digits(thousands)} thousand")
    if rest:
        parts.append(f"{_SMALL[rest // 100]} hundred")
    return " ".join(parts)


def runway(designator: str) -> str:
    """``28L`` -> ``two eight left``."""
    match = re.fullmatch(r"(\d{2})([LCR]?)", designator.strip().upper())
    if not match:
        return designator
    return digits(match[1]) + (f" {_SIDES[match[2]]}" if match[2] else "")


def runways_in_text(text: str) -> str:
    """Speak every runway designator inside free text (``28 for landing`` -> ``two eight for landing``)."""
    return re.sub(r"\b\d{2}[LCR]?\b", lambda m: runway(m[0]), text)


def bearing(degrees: int) -> str:
    """``90`` -> ``zero niner zero``."""
    return digits(f"{degrees:03d}")


def temperature(value: int) -> str:
    return f"minus {digits(-value)}" if value < 0 else digits(value)


def wind(data: dict[str, Any]) -> str:
    unit = _UNITS[data["unit"]]
    if data["calm"]:
        return "Wind calm"
    speed = f"{digits(data['speed'])} {unit}"
    if data["variable"]:
        text = f"Wind variable, {speed}"
    else:
        text = f"Wind {bearing(data['direction'])} degrees, {speed}"
    if data["gust"]:
        text += f", gusting {digits(data['gust'])} {unit}"
    if data["variable_from"] is not None:
        text += f", varying between {bearing(data['variable_from'])} and {bearing(data['variable_to'])} degrees"
    return text


def _miles(value: float) -> str:
    whole = int(value)
    fraction = value - whole
    words = {
        0.25: "one quarter",
        0.5: "one half",
        0.75: "three quarters",
        0.125: "one eighth",
        0.375: "three eighths",
        0.625: "five eighths",
        0.875: "seven eighths",
        0.0625: "one sixteenth",
    }
    part = words.get(round(fraction, 4), "")
    if whole and part:
        return f"{digits(whole)} and {part}"
    return part or digits(whole)


def visibility(data: dict[str, Any]) -> str:
    if data["statute_miles"] is not None:
        miles = data["statute_miles"]
        prefix = "less than " if data["less_than"] else "more than " if data["more_than"] else ""
        noun = "mile" if miles <= 1 else "miles"
        return f"Visibility {prefix}{_miles(miles)} statute {noun}"
    metres = data["metres"]
    if data["ten_km_or_more"]:
        return "Visibility one zero kilometres or more"
    if metres >= 5000 and metres % 1000 == 0:
        text = f"Visibility {digits(metres // 1000)} kilometres"
    else:
        text = f"Visibility {hundreds(metres)} metres"
    if data["direction"]:
        text += f" towards {_compass(data['direction'])}"
    return text


def _compass(direction: str) -> str:
    names = {"N": "north", "E": "east", "S": "south", "W": "west"}
    return "".join(names[char] for char in direction)


def rvr(data: dict[str, Any]) -> str:
    unit = "feet" if data["unit"] == "FT" else "metres"

    def amount(value: int, prefix: str | None) -> str:
        lead = {"more_than": "more than ", "less_than": "less than "}.get(prefix or "", "")
        return f"{lead}{hundreds(value)}"

    text = f"Runway visual range runway {runway(data['runway'])}, {amount(data['value'], data['prefix'])}"
    if data["variable_to"] is not None:
        text += f" to {amount(data['variable_to'], data['variable_to_prefix'])}"
    text += f" {unit}"
    tendencies = {"up": "increasing", "down": "decreasing", "no_change": "no change"}
    tendency = tendencies.get(data["tendency"] or "")
    return text + (f", {tendency}" if tendency else "")


def weather(data: dict[str, Any]) -> str:
    phenomena = [_PHENOMENON[p] for p in data["phenomena"]]
    if data["phenomena"] == ["FC"] and data["intensity"] == "heavy":
        phenomena, intensity = ["tornado"], ""
    else:
        intensity = "" if data["intensity"] == "moderate" else data["intensity"] + " "
    what = " and ".join(phenomena)
    descriptor = data["descriptor"]
    if descriptor == "TS":
        text = f"{intensity}thunderstorm" + (f" with {what}" if what else "")
    elif descriptor == "SH":
        text = f"{intensity}{what} showers" if what else "showers"
    elif descriptor:
        text = f"{intensity}{_DESCRIPTOR[descriptor]} {what}".strip()
    else:
        text = f"{intensity}{what}"
    if data["vicinity"]:
        text += " in the vicinity"
    return text


def clouds(parsed: dict[str, Any]) -> list[str]:
    sentences: list[str] = []
    layers: list[str] = []
    for index, layer in enumerate(parsed["clouds"]):
        kind = _CLOUD_TYPE.get(layer["type"] or "", "clouds" if index == 0 else "")
        height = (
            "height unknown"
            if layer["height_ft"] is None
            else "below one hundred feet"
            if layer["height_ft"] == 0
            else f"at {hundreds(layer['height_ft'])} feet"
        )
        layers.append(" ".join(part for part in (_COVER[layer["cover"]], kind, height) if part))
    if layers:
        sentences.append(", ".join(layers))
    if parsed["sky_condition"]:
        sentences.append(_SKY[parsed["sky_condition"]])
    if parsed["vertical_visibility_ft"] is not None:
        sentences.append(f"Vertical visibility {hundreds(parsed['vertical_visibility_ft'])} feet")
    if parsed["sky_obscured"]:
        sentences.append("Sky obscured")
    return sentences


def _trend_group(token: str) -> str:
    words = {
        "BECMG": "becoming",
        "TEMPO": "temporarily",
        "NOSIG": "no significant change",
        "NSW": "no significant weather",
        "CAVOK": "CAVOK",
    }
    if token in words:
        return words[token]
    if token in _SKY:
        return _SKY[token].lower()
    if (match := re.fullmatch(r"(FM|TL|AT)(\d{4})", token)) is not None:
        return {"FM": "from", "TL": "until", "AT": "at"}[match[1]] + f" {digits(match[2])}"
    if (parsed_wind := parse_wind(token)) is not None:
        return wind(parsed_wind).lower()
    if (parsed_vis := parse_visibility(token)) is not None:
        return visibility(parsed_vis).lower()
    if (parsed_weather := parse_weather(token)) is not None:
        return weather(parsed_weather)
    if (parsed_cloud := parse_cloud(token)) is not None:
        return clouds(
            {"clouds": [parsed_cloud], "sky_condition": None, "vertical_visibility_ft": None, "sky_obscured": False}
        )[0]
    return token


def trend(raw: str) -> str:
    """``NOSIG`` -> ``No significant change``; ``TEMPO 3000 -SHRA`` -> ``Trend: temporarily, ...``."""
    if raw == "NOSIG":
        return "No significant change"
    segments: list[tuple[str, list[str]]] = []
    for token in raw.split():
        if token in ("BECMG", "TEMPO", "NOSIG") or not segments:
            segments.append(
                (_trend_group(token), []) if token in ("BECMG", "TEMPO", "NOSIG") else ("", [_trend_group(token)])
            )
        else:
            segments[-1][1].append(_trend_group(token))
    spoken = [" ".join(part for part in (head, ", ".join(groups)) if part) for head, groups in segments]
    return "Trend: " + "; ".join(spoken)


def _sentence(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] + ("" if text.endswith(".") else ".")


def atis_text(parsed: dict[str, Any], extras: dict[str, Any]) -> str:
    """The whole broadcast as one paragraph of sentences."""
    name = extras.get("name") or spell(parsed["station"])
    time = parsed["time"]
    clock = "{:02d}{:02d}".format(time["hour"], time["minute"])
    sentences = [f"{name} information, time {digits(clock)} zulu"]
    if extras.get("runway_in_use"):
        sentences.append(f"Runway in use {runways_in_text(str(extras['runway_in_use']))}")
    if parsed["wind"] is not None:
        sentences.append(wind(parsed["wind"]))
    sentences.extend(_visibility_sentences(parsed))
    sentences.extend(rvr(item) for item in parsed["rvr"])
    if parsed["weather"]:
        sentences.append(", ".join(weather(item) for item in parsed["weather"]))
    if parsed["recent_weather"]:
        sentences.append("Recent " + ", ".join(weather(item) for item in parsed["recent_weather"]))
    if not parsed["cavok"]:
        sentences.extend(clouds(parsed))
    sentences.extend(_air_sentences(parsed))
    if parsed["wind_shear"]:
        sentences.append(
            "Wind shear reported "
            + ", ".join(
                "all runways" if item == "ALL RWY" else f"runway {runway(item.removeprefix('R'))}"
                for item in parsed["wind_shear"]
            )
        )
    if parsed["trend"]:
        sentences.append(trend(parsed["trend"]))
    sentences.extend(str(item) for item in extras.get("advisories") or [])
    if extras.get("frequency"):
        sentences.append(f"ATIS frequency {digits(str(extras['frequency']))}")
    return " ".join(_sentence(text) for text in sentences)


def _visibility_sentences(parsed: dict[str, Any]) -> list[str]:
    """CAVOK or the visibility, then the minimum visibility with its direction."""
    sentences = []
    if parsed["cavok"]:
        sentences.append("CAVOK")
    elif parsed["visibility"] is not None:
        sentences.append(visibility(parsed["visibility"]))
    if parsed["minimum_visibility"]:
        low = parsed["minimum_visibility"]
        sentences.append(
            f"Minimum visibility {hundreds(low['metres'])} metres"
            + (f" towards {_compass(low['direction'])}" if low["direction"] else "")
        )
    return sentences


def _air_sentences(parsed: dict[str, Any]) -> list[str]:
    """Temperature and dew point, then QNH (hPa) or the altimeter setting (inHg), as reported."""
    sentences = []
    if parsed["temperature"] is not None:
        text = f"Temperature {temperature(parsed['temperature'])}"
        if parsed["dew_point"] is not None:
            text += f", dew point {temperature(parsed['dew_point'])}"
        sentences.append(text)
    if parsed["qnh"] is not None:
        qnh = parsed["qnh"]
        if qnh["reported"] == "hPa":
            sentences.append(f"QNH {digits(qnh['hpa'])}")
        else:
            sentences.append("Altimeter " + digits("{:04d}".format(round(qnh["inhg"] * 100))))
    return sentences
