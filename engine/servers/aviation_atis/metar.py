"""A METAR parser producing a plain, JSON-ready structure.

Why it exists: the ATIS server turns a METAR into spoken phraseology, and both the speech and the
structured answer need every element decoded (wind incl. variable and gusts, visibility in metres or
statute miles, RVR, present weather, clouds incl. CAVOK/NSC/NCD/SKC/CLR/VV, temperatures incl. negatives,
QNH in hPa and inHg, trends and remarks kept raw). It is pure and has no I/O, so a corpus of real METARs
can pin its behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from typing import Any

HPA_PER_INHG = 33.8639


class MetarError(ValueError):
    """A METAR that is empty, malformed or NIL; the message says what was wrong."""


_STATION = re.compile(r"^[A-Z][A-Z0-9]{3}$")
_TIME = re.compile(r"^(\d{2})(\d{2})(\d{2})Z$")
_WIND = re.compile(r"^(?P<dir>\d{3}|VRB)(?P<speed>\d{2,3})(?:G(?P<gust>\d{2,3}))?(?P<unit>KT|MPS|KMH)$")
_WIND_RANGE = re.compile(r"^(\d{3})V(\d{3})$")
_VIS_METRES = re.compile(r"^(\d{4})(N|NE|E|SE|S|SW|W|NW)?(NDV)?$")
_VIS_SM = re.compile(r"^(?P<prefix>[MP])?(?P<value>\d{1,2}|\d/\d{1,2}|\d{1,2}/\d{1,2})SM$")
_RVR = re.compile(
    r"^R(?P<rwy>\d{2}[LCR]?)/(?P<p1>[PM])?(?P<v1>\d{4})(?:V(?P<p2>[PM])?(?P<v2>\d{4}))?(?P<ft>FT)?/?(?P<tend>[UDN])?$"
)
_DESCRIPTORS = "MI|PR|BC|DR|BL|SH|TS|FZ"
_PHENOMENA = "DZ|RA|SN|SG|IC|PL|GR|GS|UP|BR|FG|FU|VA|DU|SA|HZ|PY|PO|SQ|FC|SS|DS"
_WEATHER = re.compile(rf"^(?P<int>[-+]|VC)?(?P<desc>{_DESCRIPTORS})?(?P<phen>(?:{_PHENOMENA})*)$")
_CLOUD = re.compile(r"^(?P<cover>FEW|SCT|BKN|OVC)(?P<height>\d{3}|///)(?P<type>CB|TCU|///)?$")
_VV = re.compile(r"^VV(\d{3}|///)$")
_TEMP = re.compile(r"^(?P<t>M?\d{2})/(?P<d>M?\d{2}|//)?$")
_QNH = re.compile(r"^(?P<kind>[QA])(?P<value>\d{4})$")
_RUNWAY_STATE = re.compile(r"^R\d{2}[LCR]?/(?:\d{6}|CLRD\d{2}|CLRD//|[\d/]{6})$")
_TREND_WORDS = ("NOSIG", "BECMG", "TEMPO")
_INTENSITY = {"-": "light", "+": "heavy", None: "moderate"}


def _temperature(text: str) -> int:
    return -int(text[1:]) if text.startswith("M") else int(text)


def parse_wind(token: str) -> dict[str, Any] | None:
    match = _WIND.match(token)
    if not match:
        return None
    speed = int(match["speed"])
    variable = match["dir"] == "VRB"
    return {
        "direction": None if variable else int(match["dir"]),
        "variable": variable,
        "speed": speed,
        "gust": int(match["gust"]) if match["gust"] else None,
        "unit": match["unit"],
        "calm": speed == 0 and not match["gust"],
        "variable_from": None,
        "variable_to": None,
    }


def parse_visibility(token: str) -> dict[str, Any] | None:
    match = _VIS_METRES.match(token)
    if match:
        metres = int(match[1])
        return {
            "text": token,
            "metres": metres,
            "statute_miles": None,
            "ten_km_or_more": metres == 9999,
            "less_than": False,
            "more_than": False,
            "direction": match[2],
            "ndv": bool(match[3]),
        }
    match = _VIS_SM.match(token)
    if match:
        miles = float(Fraction(match["value"]))
        return {
            "text": token,
            "metres": round(miles * 1609.344),
            "statute_miles": miles,
            "ten_km_or_more": False,
            "less_than": match["prefix"] == "M",
            "more_than": match["prefix"] == "P",
            "direction": None,
            "ndv": False,
        }
    return None


def parse_rvr(token: str) -> dict[str, Any] | None:
    match = _RVR.match(token)
    if not match:
        return None
    return {
        "runway": match["rwy"],
        "value": int(match["v1"]),
        "prefix": {"P": "more_than", "M": "less_than"}.get(match["p1"] or ""),
        "variable_to": int(match["v2"]) if match["v2"] else None,
        "variable_to_prefix": {"P": "more_than", "M": "less_than"}.get(match["p2"] or ""),
        "unit": "FT" if match["ft"] else "M",
        "tendency": {"U": "up", "D": "down", "N": "no_change"}.get(match["tend"] or ""),
    }


def parse_weather(token: str) -> dict[str, Any] | None:
    match = _WEATHER.match(token)
    if not match or not (match["desc"] or match["phen"]):
        return None
    if match["int"] == "VC" and not match["desc"] and not match["phen"]:
        return None
    phenomena = re.findall(r"..", match["phen"])
    return {
        "text": token,
        "intensity": _INTENSITY[match["int"] if match["int"] != "VC" else None],
        "vicinity": match["int"] == "VC",
        "descriptor": match["desc"],
        "phenomena": phenomena,
    }


def parse_cloud(token: str) -> dict[str, Any] | None:
    match = _CLOUD.match(token)
    if not match:
        return None
    height = match["height"]
    cloud_type = match["type"] if match["type"] in ("CB", "TCU") else None
    return {"cover": match["cover"], "height_ft": None if height == "///" else int(height) * 100, "type": cloud_type}


def _empty(raw: str) -> dict[str, Any]:
    return {
        "raw": raw,
        "type": "METAR",
        "station": "",
        "time": None,
        "auto": False,
        "correction": False,
        "wind": None,
        "cavok": False,
        "visibility": None,
        "minimum_visibility": None,
        "rvr": [],
        "weather": [],
        "recent_weather": [],
        "clouds": [],
        "sky_condition": None,
        "vertical_visibility_ft": None,
        "sky_obscured": False,
        "temperature": None,
        "dew_point": None,
        "qnh": None,
        "wind_shear": [],
        "runway_state": [],
        "trend": None,
        "remarks": None,
        "unparsed": [],
    }


def _parse_body_group(tokens: list[str], index: int, out: dict[str, Any]) -> int:
    """Decode the group at ``tokens[index]`` into ``out``; return how many tokens it used."""
    for decode in _GROUPS:
        if used := decode(tokens, index, out):
            return used
    if tokens[index].strip("/") != "":  # else a group reported missing by an automatic station ("////")
        out["unparsed"].append(tokens[index])
    return 1


def _wind_group(tokens: list[str], index: int, out: dict[str, Any]) -> int:
    token = tokens[index]
    if (wind := parse_wind(token)) is not None and out["wind"] is None:
        out["wind"] = wind
    elif (match := _WIND_RANGE.match(token)) and out["wind"] is not None:
        out["wind"]["variable_from"], out["wind"]["variable_to"] = int(match[1]), int(match[2])
    else:
        return 0
    return 1


def _visibility_group(tokens: list[str], index: int, out: dict[str, Any]) -> int:
    token = tokens[index]
    if token == "CAVOK":
        out["cavok"] = True
        out["visibility"] = _visibility_text(token, 9999, None, ten_km_or_more=True)
    elif (
        re.fullmatch(r"\d", token)
        and index + 1 < len(tokens)
        and re.fullmatch(r"\d/\d{1,2}SM", tokens[index + 1])
        and out["visibility"] is None
    ):
        miles = int(token) + Fraction(tokens[index + 1][:-2])
        text = f"{token} {tokens[index + 1]}"
        out["visibility"] = _visibility_text(text, round(float(miles) * 1609.344), float(miles))
        return 2
    elif (vis := parse_visibility(token)) is not None and out["visibility"] is None:
        out["visibility"] = vis
    elif vis is not None and out["minimum_visibility"] is None and vis["statute_miles"] is None:
        out["minimum_visibility"] = {"metres": vis["metres"], "direction": vis["direction"]}
    else:
        return 0
    return 1


def _visibility_text(text: str, metres: int, miles: float | None, *, ten_km_or_more: bool = False) -> dict[str, Any]:
    return {
        "text": text,
        "metres": metres,
        "statute_miles": miles,
        "ten_km_or_more": ten_km_or_more,
        "less_than": False,
        "more_than": False,
        "direction": None,
        "ndv": False,
    }


def _weather_group(tokens: list[str], index: int, out: dict[str, Any]) -> int:
    """Runway visual range and state, recent and present weather."""
    token = tokens[index]
    if (rvr := parse_rvr(token)) is not None:
        out["rvr"].append(rvr)
    elif _RUNWAY_STATE.match(token):
        out["runway_state"].append(token)
    elif token.startswith("RE") and (recent := parse_weather(token[2:])) is not None:
        out["recent_weather"].append(recent)
    elif (weather := parse_weather(token)) is not None:
        out["weather"].append(weather)
    else:
        return 0
    return 1


def _sky_group(tokens: list[str], index: int, out: dict[str, Any]) -> int:
    token = tokens[index]
    if (cloud := parse_cloud(token)) is not None:
        out["clouds"].append(cloud)
    elif (match := _VV.match(token)) is not None:
        if match[1] == "///":
            out["sky_obscured"] = True
        else:
            out["vertical_visibility_ft"] = int(match[1]) * 100
    elif token in ("NSC", "NCD", "SKC", "CLR"):
        out["sky_condition"] = token
    else:
        return 0
    return 1


def _air_group(tokens: list[str], index: int, out: dict[str, Any]) -> int:
    """Temperature and dew point, then the pressure (QNH in hPa or altimeter in inHg)."""
    token = tokens[index]
    if (match := _TEMP.match(token)) is not None and out["temperature"] is None:
        out["temperature"] = _temperature(match["t"])
        out["dew_point"] = _temperature(match["d"]) if match["d"] and match["d"] != "//" else None
    elif (match := _QNH.match(token)) is not None and out["qnh"] is None:
        value = int(match["value"])
        if match["kind"] == "Q":
            out["qnh"] = {"hpa": value, "inhg": round(value / HPA_PER_INHG, 2), "reported": "hPa"}
        else:
            inhg = value / 100
            out["qnh"] = {"hpa": round(inhg * HPA_PER_INHG), "inhg": inhg, "reported": "inHg"}
    else:
        return 0
    return 1


def _wind_shear_group(tokens: list[str], index: int, out: dict[str, Any]) -> int:
    if tokens[index] != "WS" or index + 1 >= len(tokens):
        return 0
    if tokens[index + 1] == "ALL" and index + 2 < len(tokens) and tokens[index + 2] == "RWY":
        out["wind_shear"].append("ALL RWY")
        return 3
    out["wind_shear"].append(tokens[index + 1])
    return 2


#: The body's group decoders in the order they are tried; each returns the tokens it used, 0 when not its group.
_GROUPS: tuple[Callable[[list[str], int, dict[str, Any]], int], ...] = (
    _wind_group,
    _visibility_group,
    _weather_group,
    _sky_group,
    _air_group,
    _wind_shear_group,
)


def parse_metar(raw: str) -> dict[str, Any]:
    """Parse one METAR/SPECI line; raise :class:`MetarError` when it is empty, NIL or malformed."""
    text = " ".join(raw.replace("=", " ").split()).upper()
    if not text:
        raise MetarError("the METAR is empty")
    tokens = text.split(" ")
    out = _empty(text)
    if tokens[0] in ("METAR", "SPECI"):
        out["type"] = tokens.pop(0)
    if tokens and tokens[0] == "COR":
        out["correction"] = True
        tokens.pop(0)
    if not tokens or not _STATION.match(tokens[0]):
        got = tokens[0] if tokens else "nothing"
        raise MetarError(f"a METAR must start with a 4-letter ICAO station like LSZH, got {got!r}")
    out["station"] = tokens.pop(0)
    match = _TIME.match(tokens[0]) if tokens else None
    if not match:
        got = tokens[0] if tokens else "nothing"
        raise MetarError(f"expected the observation time like 121250Z after {out['station']}, got {got!r}")
    day, hour, minute = int(match[1]), int(match[2]), int(match[3])
    if not (1 <= day <= 31 and hour <= 23 and minute <= 59):
        raise MetarError(f"the observation time {tokens[0]!r} is not a valid day/hour/minute")
    out["time"] = {"text": tokens.pop(0), "day": day, "hour": hour, "minute": minute}
    if tokens and tokens[0] == "NIL":
        raise MetarError(f"the METAR for {out['station']} is NIL (no report was issued)")
    body_end = len(tokens)
    for index, token in enumerate(tokens):
        if token in _TREND_WORDS or token == "RMK":
            body_end = index
            break
    index = 0
    while index < body_end:
        if tokens[index] in ("AUTO", "COR"):
            out["auto" if tokens[index] == "AUTO" else "correction"] = True
            index += 1
            continue
        index += _parse_body_group(tokens[:body_end], index, out)
    rest = tokens[body_end:]
    if "RMK" in rest:
        cut = rest.index("RMK")
        out["remarks"] = " ".join(rest[cut + 1 :]) or None
        rest = rest[:cut]
    out["trend"] = " ".join(rest) or None
    recognised = ("wind", "visibility", "temperature", "qnh")
    if not any(out[key] is not None for key in recognised) and not out["clouds"]:
        raise MetarError(f"no weather groups could be read in the METAR for {out['station']}: {' '.join(tokens)!r}")
    return out


def observation_key(parsed: dict[str, Any]) -> tuple[int, int, int]:
    """(day, hour, minute) of a parsed METAR, for picking the latest of several."""
    time = parsed["time"]
    return (time["day"], time["hour"], time["minute"])


def is_newer(candidate: tuple[int, int, int], current: tuple[int, int, int]) -> bool:
    """Whether ``candidate`` is at or after ``current``, treating day 1..5 after day 25..31 as next month."""
    if candidate[0] <= 5 and current[0] >= 25:
        return True
    if current[0] <= 5 and candidate[0] >= 25:
        return False
    return candidate >= current
