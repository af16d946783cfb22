"""`weather`: the current weather at a place, from OpenWeatherMap's current weather API
(GET /data/2.5/weather?q=...&appid=...). Julep's answer is {result: text}, which tasks read as `_.result`."""

from __future__ import annotations

from typing import Any

from activities.integrations.common import answer_json, join

DEFAULT_BASE_URL = "https://api.openweathermap.org"


async def call(service: Any, method: str, setup: dict[str, Any], arguments: dict[str, Any]) -> Any:
    location = str(arguments["location"])
    response = await service.fetch(
        {
            "method": "GET",
            "url": join(service.base_url, "/data/2.5/weather"),
            "params": {"q": location, "appid": setup["openweathermap_api_key"], "units": "metric"},
        }
    )
    return {"result": describe(location, answer_json("OpenWeatherMap", response))}


def describe(location: str, data: dict[str, Any]) -> str:
    """The weather as lines of text (Julep's answer is text, for a model to read)."""
    conditions = ", ".join(str(w.get("description") or w.get("main")) for w in data.get("weather") or [])
    main, wind = data.get("main") or {}, data.get("wind") or {}
    lines = [
        f"In {data.get('name') or location}, the current weather is as follows:",
        f"Detailed status: {conditions or 'unknown'}",
        f"Wind speed: {wind.get('speed', '?')} m/s, direction: {wind.get('deg', '?')}°",
        f"Humidity: {main.get('humidity', '?')}%",
        "Temperature:",
        f"  - Current: {main.get('temp', '?')}°C",
        f"  - High: {main.get('temp_max', '?')}°C",
        f"  - Low: {main.get('temp_min', '?')}°C",
        f"  - Feels like: {main.get('feels_like', '?')}°C",
        f"Cloud cover: {(data.get('clouds') or {}).get('all', '?')}%",
    ]
    return "\n".join(lines)
