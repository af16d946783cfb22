"""`weather`: the current weather at a place, from OpenWeatherMap's current weather API
(GET /data/2.5/weather?q=...&appid=...). Julep's answer is {result: text}, which tasks read as `_.result`."""

from __future__ import annotations

from typing import TypedDict

from activities.integrations.common import Service, answer_object, join, object_in, objects_in
from contracts.json import JsonObject

DEFAULT_BASE_URL = "https://api.openweathermap.org"
METHODS = ("get",)


class Answer(TypedDict):
    result: str


async def call(service: Service, method: str, setup: JsonObject, arguments: JsonObject) -> Answer:
    location = str(arguments["location"])
    response = await service.fetch(
        {
            "method": "GET",
            "url": join(service.base_url, "/data/2.5/weather"),
            "params": {"q": location, "appid": str(setup["openweathermap_api_key"]), "units": "metric"},
        }
    )
    return {"result": describe(location, answer_object("OpenWeatherMap", response))}


def describe(location: str, data: JsonObject) -> str:
    """The weather as lines of text (Julep's answer is text, for a model to read)."""
    conditions = ", ".join(
        str(w.get("description") or w.get("main")) for w in objects_in(data.get("weather"))
    )
    main, wind = object_in(data.get("main")), object_in(data.get("wind"))
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
        f"Cloud cover: {object_in(data.get('clouds')).get('all', '?')}%",
    ]
    return "\n".join(lines)
