"""Integration tools (Julep's `type: integration`): each provider against a local fake of its service
(tests/integration_fakes.py, which the model stack's MINT_<PROVIDER>_BASE_URL and MINT_SMTP_HOST point at):
its answer in Julep's shape, the service's error answer, a timeout; secrets in `setup`; refusals at creation."""

from __future__ import annotations

import base64
import json
import logging
import os
import re
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from temporalio.exceptions import ApplicationError

from activities.egress import EgressPolicy
from activities.integrations import Service, email
from tests.helpers import create_agent, run_task
from tests.integration_fakes import BAD_KEY, SLOW_SECONDS
from tests.model_server import Reply
from tests.stack import free_port
from tests.test_secrets import _plain_history_text

CANARY = "canary-integration-9d2f61b7e4a3"


@dataclass(frozen=True)
class ProviderCase:
    integration: dict[str, Any]
    arguments: dict[str, Any]
    output: Callable[[Any], bool]  # True when the answer has Julep's shape and the fake's content
    error: str  # a regex the execution's error matches when the service refuses
    refusing_arguments: dict[str, Any] = field(default_factory=dict)
    refusing_setup: dict[str, Any] = field(default_factory=dict)
    slow_arguments: dict[str, Any] = field(default_factory=dict)


EMAIL = {"to": "ada@example.com", "from": "mint@example.com", "subject": "Hello", "body": "Hi Ada."}
CASES = {
    "weather": ProviderCase(
        {"provider": "weather", "setup": {"openweathermap_api_key": "owm-key"}},
        {"location": "London"},
        lambda out: out["result"].startswith("In London") and "broken clouds" in out["result"],
        r"OpenWeatherMap refused the call \(404\): city not found",
        refusing_arguments={"location": "Atlantis"},
        slow_arguments={"location": "slow"},
    ),
    "brave": ProviderCase(
        {"provider": "brave", "method": "search", "setup": {"brave_api_key": "brave-key"}},
        {"query": "mint"},
        lambda out: (
            out["result"][0]
            == {"title": "mint news", "link": "https://news.example/1", "snippet": "All about mint."}
        ),
        r"Brave Search refused the call \(401\): The provided token is invalid",
        refusing_setup={"brave_api_key": BAD_KEY},
        slow_arguments={"query": "slow"},
    ),
    "wikipedia": ProviderCase(
        {"provider": "wikipedia"},
        {"query": "Julep", "load_max_docs": 2},
        lambda out: (
            [d["metadata"]["title"] for d in out["documents"]] == ["Julep", "Julep 1"]
            and out["documents"][0]["page_content"] == "Julep is a subject of article 0."
        ),
        r'Wikipedia refused the search: The "gsrsearch" parameter must be set',
        refusing_arguments={"query": " "},
        slow_arguments={"query": "slow"},
    ),
    "spider": ProviderCase(
        {"provider": "spider", "setup": {"spider_api_key": "spider-key"}},
        {"url": "https://julep.ai", "params": {"limit": 2, "return_format": "markdown"}},
        lambda out: (
            [p["content"] for p in out["result"]]
            == ["# Page 0 of https://julep.ai", "# Page 1 of https://julep.ai"]
        ),
        r"Spider refused the call \(401\): Unauthorized: invalid API key",
        refusing_setup={"spider_api_key": BAD_KEY},
        slow_arguments={"url": "slow"},
    ),
    "arxiv": ProviderCase(
        {"provider": "arxiv"},
        {"query": "agents", "max_results": 2},
        lambda out: (
            len(out["result"]) == 2
            and out["result"][0]["title"] == "Paper 0 on agents"
            and out["result"][0]["authors"] == ["Ada Lovelace", "Alan Turing"]
            and out["result"][0]["pdf_url"] == "http://arxiv.org/pdf/2401.00000v1"
            and out["result"][0]["categories"] == ["cs.AI", "cs.LG"]
        ),
        r"arXiv refused the call \(400\): malformed query: not a query",
        refusing_arguments={"query": "not a query"},
        slow_arguments={"query": "slow"},
    ),
    "mailgun": ProviderCase(
        {"provider": "mailgun", "method": "send_email", "setup": {"api_key": "mailgun-key"}},
        EMAIL,
        lambda out: out == {"success": True, "error": None},
        r"Mailgun refused the call \(400\): 'to' parameter is not a valid address",
        refusing_arguments={"to": "not-an-address"},
        slow_arguments={"subject": "slow"},
    ),
    "algolia": ProviderCase(
        {"provider": "algolia", "setup": {"algolia_application_id": "APP1", "algolia_api_key": "alg-key"}},
        {"index_name": "docs", "query": "mint", "hits_per_page": 2},
        lambda out: (
            [h["name"] for h in out["hits"]] == ["mint 0", "mint 1"] and out["metadata"]["nbHits"] == 2
        ),
        r"Algolia refused the call \(404\): Index does not exist",
        refusing_arguments={"index_name": "missing"},
        slow_arguments={"query": "slow"},
    ),
    "unstructured": ProviderCase(
        {"provider": "unstructured", "setup": {"unstructured_api_key": "uns-key"}},
        {
            "file": base64.b64encode(b"Mint\nDurable agent workflows.").decode(),
            "filename": "readme.txt",
            "partition_params": {"strategy": "fast"},
        },
        lambda out: (
            [(e["type"], e["text"]) for e in out["content"]]
            == [("Title", "Mint"), ("NarrativeText", "Durable agent workflows.")]
            and out["content"][0]["metadata"] == {"filename": "readme.txt", "strategy": "fast"}
            and out["status_code"] == 200
        ),
        r"Unstructured refused the call \(401\): API key is invalid",
        refusing_setup={"unstructured_api_key": BAD_KEY},
        slow_arguments={"filename": "slow"},
    ),
    "email": ProviderCase(
        {"provider": "email", "setup": {"user": "mint", "password": "smtp-pass"}},
        EMAIL,
        lambda out: out == {"success": True},
        r"the SMTP server refused the recipients: nobody@refused\.example: 550",
        refusing_arguments={"to": "nobody@refused.example"},
        slow_arguments={"subject": "slow"},
    ),
}


def _task(integration: dict[str, Any], arguments: dict[str, Any], **step: Any) -> dict[str, Any]:
    tool = {"name": "the_tool", "type": "integration", "integration": integration}
    return {
        "name": "integration",
        "tools": [tool],
        "main": [{"tool": "the_tool", "arguments": arguments, **step}],
    }


@pytest.mark.parametrize("provider", CASES)
async def test_a_provider_answers_in_julep_shape(provider, mapi, integration_fakes):
    case = CASES[provider]
    execution, _ = await run_task(mapi, _task(case.integration, case.arguments))
    assert execution["status"] == "succeeded", execution["error"]
    assert case.output(execution["output"]), execution["output"]


@pytest.mark.parametrize("provider", CASES)
async def test_the_services_error_answer_fails_the_step_with_its_message(provider, mapi):
    case = CASES[provider]
    integration = {**case.integration, "setup": {**case.integration.get("setup", {}), **case.refusing_setup}}
    task = _task(integration, {**case.arguments, **case.refusing_arguments})
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert re.search(case.error, execution["error"]), execution["error"]


@pytest.mark.parametrize("provider", CASES)
async def test_a_service_slower_than_the_steps_timeout_fails_the_step(provider, mapi):
    case = CASES[provider]
    timeout = SLOW_SECONDS / 3
    task = _task(
        case.integration,
        {**case.arguments, **case.slow_arguments},
        timeout=timeout,
        retry={"max_attempts": 1},
    )
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert "did not finish within its timeout" in execution["error"], execution["error"]


async def test_an_email_reaches_the_smtp_server_as_written(mapi, integration_fakes):
    before = len(integration_fakes.mailbox.messages)
    execution, _ = await run_task(mapi, _task(CASES["email"].integration, EMAIL))
    assert execution["status"] == "succeeded", execution["error"]
    sender, recipients, text, user = integration_fakes.mailbox.messages[before]
    assert (sender, recipients, user) == ("mint@example.com", ["ada@example.com"], "mint")
    assert "Subject: Hello" in text and "Hi Ada." in text


async def test_a_refused_smtp_login_is_not_retried(mapi):
    integration = {"provider": "email", "setup": {"user": "mint", "password": BAD_KEY}}
    execution, rows = await run_task(mapi, _task(integration, EMAIL))
    assert execution["status"] == "failed"
    assert re.search(r"refused the message \(535\)", execution["error"]), execution["error"]
    assert BAD_KEY not in json.dumps([execution, rows])  # a password written in the task is masked too


# The email provider's server: `setup.host` (or MINT_SMTP_HOST) is a host name or an IP address and
# nothing else, `setup.port` a number from 1 to 65535, and the egress check sees exactly the host and port the
# socket then opens. Given `127.0.0.1:<allowed port>/` as a host, a looser check would read the allowed port
# while the socket opened `port`. The calls go straight to the provider, against the aiosmtpd fake.
ALLOWED = ("127.0.0.0/8", "::1", "localhost")  # every loopback address and port: only the spelling may refuse
BAD_SMTP_HOSTS = [
    "127.0.0.1:{allowed}/",
    "127.0.0.1:{allowed}#",
    "127.0.0.1:{allowed}?",
    "127.0.0.1:{port}",
    "127.0.0.1/",
    "127.0.0.1#x",
    "user@127.0.0.1",
    "user:pass@127.0.0.1",
    "evil.example@127.0.0.1",
    "[::1]:{port}",
    "[::1]",
    "[127.0.0.1]",
    "http://127.0.0.1",
    "smtp://127.0.0.1:{port}",
    "127.0.0.1\n",
    "127.0.0.1\r\nRCPT TO:<x@y>",
    " 127.0.0.1",
    "127.0.0.1 ",
    "127.0.0.1\t",
    "127.0.0.1\x00",
    "127.0.0.1\\",
    "127.0.0.1,127.0.0.2",
    "local host",
    "localhost.",  # (another spelling of an allow-listed name)
    ".localhost",
    "local..host",
    "-localhost",
    "localhost-",
    "ｌｏｃａｌｈｏｓｔ",  # fullwidth: IDNA maps it to `localhost`
    "127.1",  # IPv4 spellings the resolver reads but an address is not written in
    "2130706433",
    "0x7f000001",
    "0x7f.0.0.1",
    "0177.0.0.1",
    "127.0.0.1%lo",
    "::1%lo",
    "a" * 64 + ".example",  # a label over 63 characters
    "a." * 127 + "example",  # a name over 253
    2130706433,  # not text at all
    ["127.0.0.1"],
    {"host": "127.0.0.1"},
    b"127.0.0.1",
    True,
]
BAD_SMTP_PORTS = [0, -1, 65536, 10**6, "{port}", "{port}/", " {port}", "0x19", True, 25.0, [25], {"port": 25}]


async def _no_http(spec: dict[str, Any]) -> dict[str, Any]:
    raise AssertionError("the email provider makes no HTTP request")


async def _send_email(
    fakes: Any, setup: dict[str, Any], allow: tuple[str, ...] = ALLOWED, smtp: tuple[Any, Any] = (None, None)
) -> tuple[ApplicationError | None, bool]:
    """The provider's error (None when it sent the message) and whether the SMTP fake received it."""
    subject = f"egress-{os.urandom(6).hex()}"
    service = Service("", _no_http, EgressPolicy(allow), deadline=10, key=subject, smtp=smtp)
    error = None
    try:
        assert await email.call(service, "send", setup, {**EMAIL, "subject": subject}) == {"success": True}
    except ApplicationError as exc:
        error = exc
    delivered = any(f"Subject: {subject}" in text for _, _, text, _ in fakes.mailbox.messages)
    return error, delivered


def _spelled(value: Any, port: int, allowed: int) -> Any:
    return value.format(port=port, allowed=allowed) if isinstance(value, str) else value


@pytest.mark.parametrize("host", BAD_SMTP_HOSTS)
async def test_an_smtp_host_that_is_not_a_host_name_or_address_is_refused(host, integration_fakes):
    port = integration_fakes.smtp_port
    spelled = _spelled(host, port, free_port())
    error, delivered = await _send_email(integration_fakes, {"host": spelled, "port": port})
    assert error is not None and error.type == "BadToolCall", error
    assert "host name or an IP address" in error.message and not delivered


async def test_a_bad_smtp_host_from_the_operators_settings_is_refused_too(integration_fakes):
    port = integration_fakes.smtp_port
    error, delivered = await _send_email(integration_fakes, {}, smtp=(f"127.0.0.1:{port}", None))
    assert error is not None and error.type == "BadToolCall" and not delivered, error


@pytest.mark.parametrize("separator", ["/", "#", "?"])
async def test_the_egress_check_sees_the_port_the_smtp_socket_opens(separator, integration_fakes):
    """The report's case: only another port of 127.0.0.1 is allowed; the SMTP fake's port is not."""
    allowed, port = free_port(), integration_fakes.smtp_port
    setup = {"host": f"127.0.0.1:{allowed}{separator}", "port": port}
    error, delivered = await _send_email(integration_fakes, setup, allow=(f"127.0.0.1:{allowed}",))
    assert error is not None and error.type == "BadToolCall" and not delivered, error
    error, delivered = await _send_email(
        integration_fakes, {"host": "127.0.0.1", "port": port}, allow=(f"127.0.0.1:{allowed}",)
    )
    assert error is not None and error.type == "EgressRefused" and not delivered, error
    error, delivered = await _send_email(
        integration_fakes, {"host": "127.0.0.1", "port": port}, allow=(f"127.0.0.1:{port}",)
    )
    assert error is None and delivered


@pytest.mark.parametrize("port", BAD_SMTP_PORTS)
async def test_an_smtp_port_that_is_not_a_number_from_1_to_65535_is_refused(port, integration_fakes):
    spelled = _spelled(port, integration_fakes.smtp_port, 0)
    error, delivered = await _send_email(integration_fakes, {"host": "127.0.0.1", "port": spelled})
    assert error is not None and error.type == "BadToolCall", error
    assert "port must be a number from 1 to 65535" in error.message and not delivered


async def test_the_smtp_server_from_the_operators_settings_is_reached(integration_fakes):
    smtp = ("127.0.0.1", integration_fakes.smtp_port)
    error, delivered = await _send_email(integration_fakes, {}, allow=(f"127.0.0.1:{smtp[1]}",), smtp=smtp)
    assert error is None and delivered


async def test_an_smtp_host_name_is_looked_up_once_and_dialled_at_that_address(
    integration_fakes, monkeypatch
):
    """A rebinding name: the egress check's lookup answers the allowed loopback address, any later one
    127.0.0.2, where nothing listens. The message arrives only if the socket opens the address checked."""
    real, lookups = socket.getaddrinfo, []

    def rebinding(host, port, *args, **kwargs):
        if host != "smtp.rebind.test":
            return real(host, port, *args, **kwargs)
        lookups.append(host)
        return real("127.0.0.1" if len(lookups) == 1 else "127.0.0.2", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    port = integration_fakes.smtp_port
    error, delivered = await _send_email(
        integration_fakes, {"host": "SMTP.Rebind.Test", "port": port}, allow=(f"127.0.0.1:{port}",)
    )
    assert error is None and delivered and lookups == ["smtp.rebind.test"]


@pytest.mark.parametrize(
    "provider, setup, arguments",
    [
        # Mailgun's path is /v3/{the sender's domain}/messages: a domain that is no host name would change it.
        ("mailgun", {}, {"from": "a@example.com/../../v3/domains?"}),
        ("mailgun", {}, {"from": "a@example.com?to=eve"}),
        ("mailgun", {}, {"from": "a@example.com#"}),
        ("mailgun", {}, {"from": "Ada <a@example.com/x>"}),
        ("mailgun", {}, {"from": "a@exa mple.com"}),
        ("mailgun", {}, {"from": "no-at-sign.example"}),
        # Algolia's host is {application id}-dsn.algolia.net: `⒈` passes str.isalnum() and IDNA makes it `1.`.
        ("algolia", {"algolia_application_id": "\u2488evil"}, {}),
        ("algolia", {"algolia_application_id": "ａｐｐ"}, {}),
        ("algolia", {"algolia_application_id": "app.evil.example/"}, {}),
    ],
)
async def test_a_value_that_becomes_part_of_a_providers_url_is_checked_as_it_is_used(
    provider, setup, arguments
):
    from activities.integrations import algolia, mailgun

    fetched = []

    async def fetch(spec: dict[str, Any]) -> dict[str, Any]:
        fetched.append(spec)
        return {"status_code": 200, "json": {}, "content": "{}", "headers": {}}

    module = {"mailgun": mailgun, "algolia": algolia}[provider]
    service = Service(module.DEFAULT_BASE_URL, fetch, EgressPolicy(), deadline=5, key="key")
    setup = {"api_key": "k", "algolia_api_key": "k", "algolia_application_id": "APP1", **setup}
    arguments = {**EMAIL, "index_name": "i", "query": "q", **arguments}
    with pytest.raises(ApplicationError) as refused:
        await module.call(service, "send_email" if provider == "mailgun" else "search", setup, arguments)
    assert refused.value.type == "BadToolCall" and fetched == []
    # The same call, written plainly, is made.
    plain = {**setup, "algolia_application_id": "APP1"}
    await module.call(service, "", plain, {**arguments, "from": "Ada <ada@Example.com>"})
    assert urlsplit(fetched[0]["url"]).path in ("/v3/example.com/messages", "/1/indexes/i/query")


@pytest.mark.parametrize(
    "form", ["secrets.BRAVE_TOKEN", "{{ secrets.BRAVE_TOKEN }}", "$ secrets.BRAVE_TOKEN"]
)
async def test_a_secret_in_setup_reaches_the_service_and_nothing_else(
    form, mapi, integration_fakes, temporal_env, caplog
):
    caplog.set_level(logging.DEBUG)
    assert (await mapi.post("/secrets", json={"name": "BRAVE_TOKEN", "value": CANARY})).status_code == 201
    before = len(integration_fakes.requests)
    integration = {"provider": "brave", "setup": {"brave_api_key": form}}
    execution, rows = await run_task(mapi, _task(integration, {"query": "echo: the key"}, local=False))
    assert execution["status"] == "succeeded", execution["error"]
    sent = [r for r in integration_fakes.requests[before:] if "echo" in r.path]
    assert [r.headers["X-Subscription-Token"] for r in sent] == [CANARY]
    # The fake echoed the key in its answer: masked there.
    assert execution["output"]["result"][0]["snippet"] == "token [secret BRAVE_TOKEN]"
    everything = [
        json.dumps(rows),
        json.dumps(execution),
        await _plain_history_text(temporal_env, execution["id"], marker="brave_api_key"),
        "\n".join(f"{r.getMessage()} {r.args!r} {r.exc_text or ''}" for r in caplog.records),
    ]
    for text in everything:
        assert CANARY not in text


async def test_a_key_written_in_setup_is_masked_in_the_answer(mapi):
    key = "spider-literal-key-3b8e0c"
    integration = {"provider": "spider", "setup": {"spider_api_key": key}}
    execution, rows = await run_task(mapi, _task(integration, {"url": "https://echo:site"}))
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"]["result"][0]["content"].endswith("key [secret spider_api_key]")
    assert key not in json.dumps(rows)


async def test_without_a_key_in_setup_the_owners_secret_of_the_providers_name_is_used(
    mapi, integration_fakes
):
    task = _task({"provider": "weather"}, {"location": "Paris"})
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "failed"
    assert "no secret named OPENWEATHERMAP_API_KEY" in execution["error"], execution["error"]
    created = await mapi.post("/secrets", json={"name": "OPENWEATHERMAP_API_KEY", "value": "owm-own-key"})
    assert created.status_code == 201, created.text
    before = len(integration_fakes.requests)
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    (sent,) = integration_fakes.requests[before:]
    assert parse_qs(urlsplit(sent.path).query)["appid"] == ["owm-own-key"]


@pytest.mark.parametrize(
    ("integration", "arguments", "path", "message"),
    [
        (
            {"provider": "remote_browser", "setup": {"api_key": "k"}},
            {"action": "screenshot"},
            "tools[0].integration",
            r"provider 'remote_browser' has no setup field 'api_key' \(it takes connect_url, width, height\)",
        ),
        ({"provider": "duckduckgo"}, {}, "tools[0].integration", r"provider 'duckduckgo' is not available"),
        (
            {"provider": "weather", "setup": {"api_key": "k"}},
            {"location": "x"},
            "tools[0].integration",
            r"provider 'weather' has no setup field 'api_key' \(it takes openweathermap_api_key\)",
        ),
        (
            {"provider": "spider", "method": "crawler"},
            {"url": "x"},
            "tools[0].integration",
            r"provider 'spider' has no method 'crawler': did you mean `crawl`\?",
        ),
        (
            {"provider": "weather"},
            {"city": "x"},
            "main[0].arguments",
            r"tool 'the_tool': provider 'weather', method 'get' takes no argument 'city' \(it takes location\)",
        ),
    ],
)
async def test_a_tool_mint_cannot_run_is_refused_when_the_task_is_created(
    integration, arguments, path, message, mapi
):
    agent = await create_agent(mapi)
    response = await mapi.post(f"/agents/{agent['id']}/tasks", json=_task(integration, arguments))
    assert response.status_code == 422, response.text
    problems = {p["loc"]: p["msg"] for p in response.json()["error"]["details"]}
    assert re.search(message, problems.get(path, "")), problems


async def test_an_agent_tool_with_a_refused_provider_is_refused(mapi):
    agent = await create_agent(mapi)
    tool = {"name": "search", "type": "integration", "integration": {"provider": "duckduckgo"}}
    response = await mapi.post(f"/agents/{agent['id']}/tools", json=tool)
    assert 400 <= response.status_code < 500, response.text
    assert "duckduckgo" in response.text


async def test_a_missing_argument_fails_the_step_naming_it(mapi):
    execution, _ = await run_task(mapi, _task({"provider": "brave", "setup": {"brave_api_key": "k"}}, {}))
    assert execution["status"] == "failed"
    assert "provider 'brave', method 'search' needs the argument query" in execution["error"]


async def test_a_5xx_is_retried_with_the_same_idempotency_key(mapi, integration_fakes):
    place = f"flaky-{os.urandom(4).hex()}"
    integration = {"provider": "weather", "setup": {"openweathermap_api_key": "owm-key"}}
    task = _task(integration, {"location": place}, retry={"initial_interval": 0.1})
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    asked = [r for r in integration_fakes.requests if place in r.path]
    assert len(asked) == 2
    keys = {r.headers["Idempotency-Key"] for r in asked}
    assert len(keys) == 1 and keys != {""}


async def test_a_providers_address_passes_the_egress_check(mapi):
    # `server_url` may point unstructured elsewhere: a private address outside MINT_EGRESS_ALLOW is refused.
    setup = {"unstructured_api_key": "uns-key", "server_url": "http://10.1.2.3:8000"}
    arguments = {"file": base64.b64encode(b"x").decode()}
    execution, _ = await run_task(mapi, _task({"provider": "unstructured", "setup": setup}, arguments))
    assert execution["status"] == "failed"
    assert "not a public address; list it in MINT_EGRESS_ALLOW" in execution["error"], execution["error"]


async def test_a_model_is_offered_the_methods_arguments_and_its_call_runs(mapi, script, model_server):
    script.reply = lambda call: (
        Reply(content=f"found: {json.loads(call.messages[-1]['content'])['data']['result'][0]['title']}")
        if call.messages[-1]["role"] == "tool"
        else Reply(tool_calls=[("web_search", {"query": "mint"})])
    )
    tool = {
        "name": "web_search",
        "description": "Search the web.",
        "type": "integration",
        "integration": {"provider": "brave", "setup": {"brave_api_key": "brave-key"}},
    }
    task = {
        "name": "search",
        "tools": [tool],
        "main": [{"prompt": "find mint", "tools": "all", "auto_run_tools": True, "unwrap": True}],
    }
    execution, _ = await run_task(mapi, task)
    assert execution["status"] == "succeeded", execution["error"]
    assert execution["output"] == "found: mint news"
    offered = model_server.calls[0].tools[0]
    assert offered["parameters"]["properties"] == {"query": {"type": "string"}}
    assert offered["parameters"]["required"] == ["query"]
