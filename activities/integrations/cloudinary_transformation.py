"""Cloudinary's transformation strings, as its Python SDK writes them from options (what Julep's `cloudinary`
provider passed it): `[{"crop": "fill", "width": 250}, {"overlay": {"url": ...}}]` is `c_fill,w_250/l_fetch:...`.

Each mapping is one component: its options by their URL keys (`width` is `w`), sorted, joined by `,`; a list
is components joined by `/`; a text (or a list of texts) names a transformation (`t_name`). The options are
the SDK's common ones (PARAMS); variables, conditions and custom functions are not written (refused, naming
the option, rather than dropped as the SDK drops what it does not know); `raw_transformation` is appended as
it is.
"""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote

from contracts.json import JsonObject, JsonValue

# option -> its key in the URL
PARAMS = {
    "angle": "a",
    "aspect_ratio": "ar",
    "audio_codec": "ac",
    "audio_frequency": "af",
    "background": "b",
    "bit_rate": "br",
    "border": "bo",
    "color": "co",
    "color_space": "cs",
    "crop": "c",
    "default_image": "d",
    "delay": "dl",
    "density": "dn",
    "dpr": "dpr",
    "duration": "du",
    "effect": "e",
    "end_offset": "eo",
    "fetch_format": "f",
    "flags": "fl",
    "fps": "fps",
    "gravity": "g",
    "height": "h",
    "keyframe_interval": "ki",
    "opacity": "o",
    "overlay": "l",
    "page": "pg",
    "prefix": "p",
    "quality": "q",
    "radius": "r",
    "start_offset": "so",
    "streaming_profile": "sp",
    "underlay": "u",
    "video_codec": "vc",
    "video_sampling": "vs",
    "width": "w",
    "x": "x",
    "y": "y",
    "zoom": "z",
}
# Options whose values the SDK writes as expressions: spaces and underscores become one `_`.
EXPRESSIONS = frozenset("a ar dpr du e eo h o q so w x y z".split())
UNSAFE = re.compile(r"[^a-zA-Z0-9_.\-/:]+")


class Refused(ValueError):
    """An option or value Mint does not write; the message names it."""


def transformation(value: JsonValue) -> str:
    """The transformation string of `value`: a mapping, a list of mappings (or names), or a name."""
    if value is None or value == "":
        return ""
    if isinstance(value, dict):
        return component(value)
    items: list[JsonValue] = value if isinstance(value, list) else [value]
    if not any(isinstance(item, dict) for item in items):
        return component({"transformation": items})
    return "/".join(part for part in (transformation(item) for item in items) if part)


def component(options: JsonObject) -> str:
    """One mapping's string: its nested `transformation` (chained before it) and its own options."""
    base, named = [], None
    nested = options.get("transformation")
    if isinstance(nested, dict) or (isinstance(nested, list) and any(isinstance(i, dict) for i in nested)):
        base = [transformation(item) for item in (nested if isinstance(nested, list) else [nested])]
    elif nested not in (None, "", []):
        given = nested if isinstance(nested, list) else [nested]
        names = [name for name in given if isinstance(name, str)]
        if len(names) != len(given):
            raise Refused("a transformation's `transformation` must be mappings or transformation names")
        named = ".".join(names)
    params = {"t": named}
    for key, value in options.items():
        if key in ("transformation", "raw_transformation"):
            continue
        if key not in PARAMS:
            raise Refused(
                f"Mint does not write the transformation option {key!r} (it writes {', '.join(sorted(PARAMS))} "
                "and raw_transformation)"
            )
        params[PARAMS[key]] = _value(key, value)
    parts = sorted(f"{k}_{v}" for k, v in params.items() if v)
    raw = options.get("raw_transformation")
    if raw or raw == 0:
        parts.append(str(raw))
    return "/".join(part for part in [*base, ",".join(parts)] if part)


def _value(key: str, value: JsonValue) -> str | None:
    if value is None or value == "":
        return None
    if key in ("overlay", "underlay"):
        return _layer(key, value)
    if key in ("flags", "angle"):
        return ".".join(_scalar(key, v) for v in (value if isinstance(value, list) else [value]))
    if key == "effect" and isinstance(value, dict) and value:
        value = list(next(iter(value.items())))
    if key in ("effect", "radius"):
        return ":".join(_expression(_scalar(key, v)) for v in (value if isinstance(value, list) else [value]))
    if key == "border" and isinstance(value, dict):
        color = _scalar(key, value.get("color", "black")).replace("#", "rgb:")
        return f"{_scalar(key, value.get('width', 2))}px_solid_{color}"
    text = _scalar(key, value)
    if key in ("background", "color"):
        return text.replace("#", "rgb:")
    return _expression(text) if PARAMS[key] in EXPRESSIONS else text


def _scalar(key: str, value: JsonValue) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise Refused(f"the transformation option {key!r} must be text or a number, not {value!r:.100}")
    return str(value)


def _expression(value: JsonValue) -> str:
    return re.sub(r"[ _]+", "_", str(value))


def _layer(key: str, value: JsonValue) -> str:
    """An overlay or underlay: `{url: ...}` (or `fetch:URL`) fetches a remote image; `{public_id: ...}` (or a
    public id as text) is one of the account's."""
    if isinstance(value, str):
        if not value.startswith("fetch:"):
            return value
        value = {"url": value.removeprefix("fetch:")}
    if not isinstance(value, dict):
        raise Refused(
            f"the transformation's {key} must be a public id, or a mapping with `url` or `public_id`"
        )
    if value.get("url"):
        return "fetch:" + base64.urlsafe_b64encode(str(value["url"]).encode()).decode()
    public_id = value.get("public_id")
    if not isinstance(public_id, str) or not public_id:
        raise Refused(f"the transformation's {key} needs `url` or `public_id` (text layers are not written)")
    kind, storage = value.get("resource_type"), value.get("type")
    parts = [p for p in (kind if kind != "image" else None, storage if storage != "upload" else None) if p]
    name = public_id + (f".{value['format']}" if value.get("format") else "")
    return ":".join([*map(str, parts), name.replace("/", ":")])


def escaped(public_id: str) -> str:
    """A public id as it goes into a delivery URL (the SDK's smart_escape: `/` and `:` stay)."""
    source = re.sub(r"([^:])/+", r"\1/", unquote(public_id))
    return UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode()), source)
