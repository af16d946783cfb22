"""The integration providers Mint runs (Julep's `type: integration` tools), as tasks write them: for each, its
methods, the arguments each method takes and the `setup` fields the provider takes, as Julep documents them.

This is data only, so that a task is checked against it when it is created (a tool's provider, method and
setup here; a step's literal arguments in workflows/validate.py) and the workflow can plan the call
(workflows/calls.py). How each provider calls its service is in activities/integrations/, one module each.

A setup field that holds a credential may be omitted: the call then uses the owner's secret of the name given
here (`BRAVE_API_KEY`), as a model call uses `OPENAI_API_KEY`; Julep uses its own keys there instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from contracts.json import JsonObject, JsonValue
from workflows.problems import did_you_mean

MCP = "mcp"  # served by MCP servers: activities/mcp.py, its own activity


@dataclass(frozen=True)
class Method:
    required: tuple[str, ...] = ()  # arguments the call needs
    optional: tuple[str, ...] = ()

    def takes(self) -> tuple[str, ...]:
        return self.required + self.optional

    def schema(self, preset: Iterable[str] = ()) -> JsonObject:
        """The arguments as a JSON schema, for a model that is offered the tool, less the `preset` ones."""
        left = [name for name in self.takes() if name not in preset]
        properties: JsonObject = {name: ARGUMENT_TYPES.get(name, {"type": "string"}) for name in left}
        return {
            "type": "object",
            "properties": properties,
            "required": [n for n in self.required if n in left],
        }


# Julep's remote_browser actions (Anthropic's computer-use tool's, and navigate and refresh).
REMOTE_BROWSER_ACTIONS = (
    "key",
    "type",
    "mouse_move",
    "left_click",
    "left_click_drag",
    "right_click",
    "middle_click",
    "double_click",
    "screenshot",
    "cursor_position",
    "navigate",
    "refresh",
)
# The arguments that are not text (for the schema a model sees).
ARGUMENT_TYPES: dict[str, JsonValue] = {
    "load_max_docs": {"type": "integer"},
    "max_results": {"type": "integer"},
    "hits_per_page": {"type": "integer"},
    "download_pdf": {"type": "boolean"},
    "base64": {"type": "boolean"},
    "return_base64": {"type": "boolean"},
    "include_values_in_response": {"type": "boolean"},
    "values": {"type": "array", "items": {"type": "array", "items": {}}},
    "ranges": {"type": "array", "items": {"type": "string"}},
    "data": {"type": "array", "items": {"type": "object"}},
    "browser_settings": {"type": "object"},
    "timeout": {"type": "integer"},
    "keep_alive": {"type": "boolean"},
    "upload_params": {"type": "object"},
    "transformation": {"type": "array", "items": {"type": "object"}},
    "params": {"type": "object"},
    "partition_params": {"type": "object"},
    "id_list": {"type": "array", "items": {"type": "string"}},
    "attributes_to_retrieve": {"type": "array", "items": {"type": "string"}},
    "action": {"type": "string", "enum": list(REMOTE_BROWSER_ACTIONS)},
    "coordinate": {"type": "array", "items": {"type": "integer", "minimum": 0}, "minItems": 2, "maxItems": 2},
}


@dataclass(frozen=True)
class Provider:
    name: str
    methods: dict[str, Method]
    setup: tuple[str, ...] = ()  # the setup fields it takes
    # Credential fields: masked in everything the call returns or raises; when absent, the owner's secret of
    # the name given is used (None: the field is simply left out).
    credentials: dict[str, str | None] = field(default_factory=dict)
    base_url_variable: str | None = None  # the environment variable that points it elsewhere
    # Any method, setup field and argument is taken (`dummy`, which answers its arguments).
    open: bool = False

    @property
    def default_method(self) -> str:
        return next(iter(self.methods))


def _provider(
    name: str,
    methods: dict[str, Method],
    setup: tuple[str, ...] = (),
    credentials: dict[str, str | None] | None = None,
    base_url_variable: str | None = "",
    open: bool = False,
) -> Provider:
    """A provider; its base URL's variable is MINT_<NAME>_BASE_URL unless given (None: it has none)."""
    variable = f"MINT_{name.upper()}_BASE_URL" if base_url_variable == "" else base_url_variable
    return Provider(name, methods, setup, credentials or {}, variable, open)


READ_OPTIONS = ("major_dimension", "value_render_option", "date_time_render_option")
WRITE_OPTIONS = ("value_input_option", "insert_data_option", "include_values_in_response")
PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        _provider(
            "weather",
            {"get": Method(("location",))},
            ("openweathermap_api_key",),
            credentials={"openweathermap_api_key": "OPENWEATHERMAP_API_KEY"},
        ),
        _provider(
            "brave",
            {"search": Method(("query",))},
            ("brave_api_key",),
            credentials={"brave_api_key": "BRAVE_API_KEY"},
        ),
        _provider("wikipedia", {"search": Method(("query",), ("load_max_docs",))}),
        _provider(
            "spider",
            {
                method: Method(("url",), ("content_type", "params"))
                for method in ("crawl", "links", "screenshot", "search")
            },
            ("spider_api_key",),
            credentials={"spider_api_key": "SPIDER_API_KEY"},
        ),
        _provider(
            "email",
            {"send": Method(("to", "from", "subject", "body"))},
            ("host", "port", "user", "password"),
            credentials={"password": None},  # a server without login needs none
            base_url_variable=None,  # MINT_SMTP_HOST and MINT_SMTP_PORT
        ),
        _provider(
            "arxiv",
            {
                "search": Method(
                    ("query",), ("id_list", "max_results", "download_pdf", "sort_by", "sort_order")
                )
            },
        ),
        _provider(
            "mailgun",
            {"send_email": Method(("to", "from", "subject", "body"), ("cc", "bcc"))},
            ("api_key",),
            credentials={"api_key": "MAILGUN_API_KEY"},
        ),
        _provider(
            "algolia",
            {"search": Method(("index_name", "query"), ("attributes_to_retrieve", "hits_per_page"))},
            ("algolia_application_id", "algolia_api_key"),
            credentials={"algolia_api_key": "ALGOLIA_API_KEY"},
        ),
        _provider(
            "unstructured",
            {"partition": Method(("file",), ("filename", "partition_params"))},
            ("unstructured_api_key", "server_url"),
            credentials={"unstructured_api_key": "UNSTRUCTURED_API_KEY"},
        ),
        _provider("ffmpeg", {"bash_cmd": Method(("cmd",), ("file",))}, base_url_variable=None),
        _provider(
            "llama_parse",
            {"parse": Method(("file",), ("filename", "params", "base64"))},
            ("llamaparse_api_key", "params"),
            credentials={"llamaparse_api_key": "LLAMA_API_KEY"},
        ),
        _provider(
            "cloudinary",
            {
                "media_edit": Method(("public_id", "transformation"), ("return_base64",)),
                "media_upload": Method(("file",), ("public_id", "upload_params", "return_base64")),
            },
            ("cloudinary_api_key", "cloudinary_api_secret", "cloudinary_cloud_name", "params"),
            credentials={
                "cloudinary_api_key": "CLOUDINARY_API_KEY",
                "cloudinary_api_secret": "CLOUDINARY_API_SECRET",
            },
        ),
        _provider(
            "google_sheets",
            {
                "read_values": Method(("spreadsheet_id", "range"), READ_OPTIONS),
                "write_values": Method(("spreadsheet_id", "range", "values"), WRITE_OPTIONS),
                "append_values": Method(("spreadsheet_id", "range", "values"), WRITE_OPTIONS),
                "clear_values": Method(("spreadsheet_id", "range")),
                "batch_read": Method(("spreadsheet_id", "ranges"), READ_OPTIONS),
                "batch_write": Method(("spreadsheet_id", "data"), WRITE_OPTIONS[:1] + WRITE_OPTIONS[2:]),
            },
            ("use_julep_service", "service_account_json", "default_retry_count"),
            credentials={"service_account_json": "GOOGLE_SHEETS_SERVICE_ACCOUNT_JSON"},
        ),
        _provider(
            "browserbase",
            {
                "list_sessions": Method((), ("status",)),
                "create_session": Method(
                    (), ("project_id", "extension_id", "browser_settings", "timeout", "keep_alive", "proxies")
                ),
                "get_session": Method(("id",)),
                "complete_session": Method(("id",), ("status",)),
                "get_live_urls": Method(("id",)),
                "install_extension_from_github": Method(("repository_name",), ("ref",)),
            },
            ("api_key", "project_id", "api_url", "connect_url"),
            credentials={"api_key": "BROWSERBASE_API_KEY"},
        ),
        # Drives a browser over the Chrome DevTools Protocol: the call's or setup's connect_url (tenant input,
        # egress-checked), else the operator's MINT_REMOTE_BROWSER_BASE_URL.
        _provider(
            "remote_browser",
            {"perform_action": Method(("action",), ("connect_url", "text", "coordinate"))},
            ("connect_url", "width", "height"),
            credentials={"connect_url": None},  # a Browserbase connect_url carries its signing key
        ),
        # Julep's `dummy` answers the call's arguments as they are, whatever its method and setup.
        _provider("dummy", {"echo": Method()}, base_url_variable=None, open=True),
    )
}

# Providers Mint refuses when a task is created, with what would make the task work instead (none today:
# Julep's last one, remote_browser, runs now).
REFUSED: dict[str, str] = {}


def integration_problems(integration: JsonValue) -> list[str]:
    """What is wrong with a tool's `integration` (provider, method, setup, pre-set arguments), in plain
    words; [] when it can run."""
    if not isinstance(integration, dict):
        return ["an integration tool needs an `integration` mapping: {provider, method, setup}"]
    name = integration.get("provider")
    if not isinstance(name, str):
        return [f"an integration needs `provider` as a name, such as {', '.join(sorted([*PROVIDERS, MCP]))}"]
    if name == MCP:
        return []
    if name in REFUSED:
        return [f"provider {name!r} is not available: {REFUSED[name]}"]
    provider = PROVIDERS.get(name)
    if provider is None:
        known = ", ".join(sorted([*PROVIDERS, MCP]))
        return [
            f"provider {name!r} is not available{did_you_mean(str(name), [*PROVIDERS, MCP])} (Mint runs {known})"
        ]
    if provider.open:
        return _open_problems(name, integration)
    method = integration.get("method") or provider.default_method
    if not isinstance(method, str) or method not in provider.methods:
        methods = ", ".join(provider.methods)
        return [
            f"provider {name!r} has no method {method!r}{did_you_mean(str(method), provider.methods)} ({methods})"
        ]
    setup = integration.get("setup")
    problems = []
    if setup is not None and not isinstance(setup, dict):
        problems.append(
            f"provider {name!r}: `setup` must be a mapping of {', '.join(provider.setup) or 'nothing'}"
        )
    for key in setup if isinstance(setup, dict) else ():
        if key not in provider.setup:
            takes = f"it takes {', '.join(provider.setup)}" if provider.setup else "it takes none"
            problems.append(
                f"provider {name!r} has no setup field {key!r}{did_you_mean(str(key), provider.setup)} ({takes})"
            )
    preset = integration.get("arguments")
    if preset is not None and not isinstance(preset, dict):
        problems.append(f"provider {name!r}: `arguments` (pre-set arguments) must be a mapping")
    elif preset:
        problems += argument_problems(integration, preset.keys(), complete=False)
    return problems


def _open_problems(name: str, integration: JsonObject) -> list[str]:
    """A provider that takes anything still takes `setup` and `arguments` as mappings."""
    return [
        f"provider {name!r}: `{key}` must be a mapping"
        for key in ("setup", "arguments")
        if integration.get(key) is not None and not isinstance(integration.get(key), dict)
    ]


def argument_problems(integration: JsonObject, names: Iterable[str], complete: bool = True) -> list[str]:
    """What is wrong with the argument `names` a call of this integration gives: one it does not take, or
    (when `complete`, with the tool's pre-set `arguments` counted) one it needs and does not get."""
    provider = provider_of(integration)
    if provider is None or provider.open:
        return []
    method_name = integration.get("method") or provider.default_method
    method = provider.methods.get(method_name) if isinstance(method_name, str) else None
    if method is None:
        return []
    what = f"provider {provider.name!r}, method {method_name!r}"
    problems = [
        f"{what} takes no argument {n!r}{did_you_mean(str(n), method.takes())} (it takes {', '.join(method.takes())})"
        for n in names
        if n not in method.takes()
    ]
    if complete:
        preset = integration.get("arguments")
        given = set(names) | (set(preset) if isinstance(preset, dict) else set())
        missing = [n for n in method.required if n not in given]
        if missing:
            problems.append(
                f"{what} needs the argument{'s' if len(missing) > 1 else ''} {', '.join(missing)}"
            )
    return problems


def provider_of(integration: JsonObject) -> Provider | None:
    name = integration.get("provider")
    return PROVIDERS.get(name) if isinstance(name, str) else None


def arguments_schema(integration: JsonObject) -> JsonObject | None:
    """The JSON schema of the arguments the tool's method takes (less its pre-set ones), or None for a
    provider not declared here (mcp)."""
    provider = provider_of(integration)
    name = (integration.get("method") or provider.default_method) if provider else None
    method = provider.methods.get(name) if provider and isinstance(name, str) else None
    if method is None or provider is None or provider.open:
        return None
    preset = integration.get("arguments")
    return method.schema(set(preset) if isinstance(preset, dict) else ())
