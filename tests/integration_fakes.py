"""Local fakes of the services Mint's integration providers call, each speaking that service's documented
protocol: OpenWeatherMap's current weather, Brave Search's web search, the MediaWiki Action API, spider.cloud,
arXiv's export API (Atom), Mailgun, Algolia, Unstructured, LlamaParse, Cloudinary, Google's token endpoint and the Sheets API, Browserbase on one HTTP server (their paths differ),
and an SMTP server (aiosmtpd).

What a fake answers depends on what it is asked, so one server serves every test at once:
- `slow` as the place, query or URL: the answer comes after SLOW_SECONDS (a step's timeout runs out first);
- `BAD_KEY` as the credential: the service's own "invalid key" answer;
- a weather place starting with `flaky`: 503 the first time (a retry then gets the weather);
- `Atlantis` (weather), an empty query (wikipedia), `not a query` (arxiv): the service's own error answer;
- a query or URL holding `echo:` gets the credential the call carried back in its answer (as a careless
  service might), so tests can see it masked;
- a recipient at `refused.example` is refused by the SMTP server (550), a login with BAD_KEY as its password
  too (535), and a message whose subject is `slow` is answered after SLOW_SECONDS.
"""

from __future__ import annotations

import asyncio
import base64
import email
import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, Envelope, LoginPassword
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from tests.local_http import Answer, LocalServer, Request
from tests.stack import free_port

SLOW_SECONDS = 6.0
BAD_KEY = "BAD_KEY"


def _json(status: int, body: Any) -> Answer:
    return status, {"Content-Type": "application/json"}, json.dumps(body).encode()


def _query(request: Request) -> dict[str, str]:
    return {k: v[0] for k, v in parse_qs(urlsplit(request.path).query).items()}


def _slow(*values: Any) -> None:
    if "slow" in values:
        time.sleep(SLOW_SECONDS)


FLAKY_SEEN: set[str] = set()


def weather(request: Request) -> Answer:
    """GET /data/2.5/weather?q=&appid=&units=: 401 for a bad key, 404 for an unknown city; a place that
    starts with `flaky` answers 503 the first time it is asked."""
    q = _query(request)
    _slow(q.get("q"))
    place = q.get("q", "")
    if place.startswith("flaky") and place not in FLAKY_SEEN:
        FLAKY_SEEN.add(place)
        return _json(503, {"cod": 503, "message": "service unavailable"})
    if q.get("appid") == BAD_KEY:
        return _json(
            401, {"cod": 401, "message": "Invalid API key. Please see https://openweathermap.org/faq"}
        )
    if q.get("q") == "Atlantis":
        return _json(404, {"cod": "404", "message": "city not found"})
    return _json(
        200,
        {
            "name": q.get("q"),
            "weather": [{"main": "Clouds", "description": "broken clouds"}],
            "main": {"temp": 12.5, "feels_like": 11.0, "temp_min": 10.0, "temp_max": 14.0, "humidity": 70},
            "wind": {"speed": 4.1, "deg": 240},
            "clouds": {"all": 75},
        },
    )


def brave(request: Request) -> Answer:
    """GET /res/v1/web/search?q=, the key in X-Subscription-Token."""
    q, token = _query(request).get("q", ""), request.headers.get("X-Subscription-Token", "")
    _slow(q)
    if token == BAD_KEY or not token:
        error = {
            "status": 401,
            "code": "SUBSCRIPTION_TOKEN_INVALID",
            "detail": "The provided token is invalid.",
        }
        return _json(401, {"type": "ErrorResponse", "error": error})
    snippet = f"token {token}" if "echo:" in q else f"All about {q}."
    results = [
        {"title": f"{q} news", "url": "https://news.example/1", "description": snippet},
        {"title": f"More {q}", "url": "https://news.example/2", "description": "Another page."},
    ]
    return _json(200, {"type": "search", "web": {"type": "search", "results": results}})


def wikipedia(request: Request) -> Answer:
    """GET /w/api.php?action=query&generator=search&gsrsearch=&prop=extracts|info (formatversion 2).
    MediaWiki reports a bad request with 200 and an `error` object."""
    q = _query(request)
    search = q.get("gsrsearch", "")
    _slow(search)
    if not search.strip():
        return _json(
            200, {"error": {"code": "missingparam", "info": 'The "gsrsearch" parameter must be set.'}}
        )
    count = int(q.get("gsrlimit", "2"))
    pages = [
        {
            "pageid": 100 + i,
            "title": f"{search} {i}" if i else search,
            "index": i + 1,
            "extract": f"{search} is a subject of article {i}.",
            "fullurl": f"https://en.wikipedia.org/wiki/{search.replace(' ', '_')}_{i}",
        }
        for i in range(count)
    ]
    return _json(200, {"batchcomplete": True, "query": {"pages": list(reversed(pages))}})


def spider(request: Request) -> Answer:
    """POST /crawl (and /links, /screenshot, /search): JSON body, the key as a bearer token."""
    body = json.loads(request.body or b"{}")
    url = str(body.get("url") or body.get("search") or "")
    _slow(url)
    token = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if token == BAD_KEY:
        return 401, {"Content-Type": "text/plain"}, b"Unauthorized: invalid API key"
    limit = int(body.get("limit") or 1)
    pages = [
        {
            "content": f"# Page {i} of {url}" + (f" key {token}" if "echo:" in url else ""),
            "url": f"{url.rstrip('/')}/{i}",
            "status": 200,
            "error": None,
            "costs": {"total_cost": 0.0001},
        }
        for i in range(limit)
    ]
    return _json(200, pages)


ATOM_HEAD = (
    '<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
    'xmlns:arxiv="http://arxiv.org/schemas/atom" '
    'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
)


def _arxiv_entry(i: int, query: str) -> str:
    return f"""<entry>
<id>http://arxiv.org/abs/2401.0000{i}v1</id>
<updated>2024-01-0{i + 1}T00:00:00Z</updated><published>2024-01-0{i + 1}T00:00:00Z</published>
<title>Paper {i} on
  {query}</title>
<summary>  We study {query}.  </summary>
<author><name>Ada Lovelace</name></author><author><name>Alan Turing</name></author>
<arxiv:comment>10 pages</arxiv:comment>
<link href="http://arxiv.org/abs/2401.0000{i}v1" rel="alternate" type="text/html"/>
<link title="pdf" href="http://arxiv.org/pdf/2401.0000{i}v1" rel="related" type="application/pdf"/>
<arxiv:primary_category term="cs.AI" scheme="http://arxiv.org/schemas/atom"/>
<category term="cs.AI" scheme="http://arxiv.org/schemas/atom"/>
<category term="cs.LG" scheme="http://arxiv.org/schemas/atom"/>
</entry>"""


def arxiv(request: Request) -> Answer:
    """GET /api/query?search_query=&max_results=&sortBy=&sortOrder=: an Atom feed; a malformed query is a
    400 whose feed holds one entry with the error in its summary."""
    q = _query(request)
    query = q.get("search_query", "")
    _slow(query)
    headers = {"Content-Type": "application/atom+xml; charset=utf-8"}
    if query == "not a query":
        error = (
            f"{ATOM_HEAD}<entry><id>http://arxiv.org/api/errors#incorrect_query</id><title>Error</title>"
            "<summary>malformed query: not a query</summary></entry></feed>"
        )
        return 400, headers, error.encode()
    count = min(int(q.get("max_results", "5")), 3)
    entries = "".join(_arxiv_entry(i, query) for i in range(count))
    return 200, headers, f"{ATOM_HEAD}<title>arXiv Query</title>{entries}</feed>".encode()


def mailgun(request: Request) -> Answer:
    """POST /v3/{domain}/messages, a form, basic auth `api:{key}`."""
    form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
    _slow(form.get("subject"))
    credentials = base64.b64decode(request.headers.get("Authorization", "Basic ").split()[-1]).decode()
    if not credentials.startswith("api:") or credentials == f"api:{BAD_KEY}":
        return 401, {"Content-Type": "text/plain"}, b"Forbidden"
    if "@" not in form.get("to", ""):
        return _json(400, {"message": "'to' parameter is not a valid address. please check documentation"})
    domain = urlsplit(request.path).path.split("/")[2]
    return _json(200, {"id": f"<20260101.1@{domain}>", "message": "Queued. Thank you."})


def algolia(request: Request) -> Answer:
    """POST /1/indexes/{index}/query, the application id and key in X-Algolia-* headers."""
    body = json.loads(request.body or b"{}")
    _slow(body.get("query"))
    if request.headers.get("X-Algolia-API-Key") == BAD_KEY:
        return _json(403, {"message": "Invalid Application-ID or API key", "status": 403})
    index = unquote(urlsplit(request.path).path.split("/")[3])
    if index == "missing":
        return _json(404, {"message": "Index does not exist", "status": 404})
    count = int(body.get("hitsPerPage") or 10)
    hits = [{"objectID": str(i), "name": f"{body.get('query')} {i}"} for i in range(min(count, 3))]
    meta = {"nbHits": len(hits), "page": 0, "nbPages": 1, "hitsPerPage": count, "processingTimeMS": 1}
    return _json(200, {"hits": hits, **meta, "query": body.get("query"), "params": ""})


def _multipart(request: Request) -> dict[str, Any]:
    """A multipart form's parts by name (email.message.Message: get_filename, get_payload)."""
    head = f"Content-Type: {request.headers.get('Content-Type')}\r\n\r\n".encode()
    form = email.message_from_bytes(head + request.body)
    return {p.get_param("name", header="content-disposition"): p for p in form.get_payload()}


def unstructured(request: Request) -> Answer:
    """POST /general/v0/general, the document as multipart form data (`files`), the key in
    unstructured-api-key: one element per line of text."""
    if request.headers.get("unstructured-api-key") == BAD_KEY:
        return _json(401, {"detail": "API key is invalid"})
    parts = _multipart(request)
    document = parts["files"]
    filename = document.get_filename()
    _slow(filename)
    lines = document.get_payload(decode=True).decode().splitlines()
    strategy = parts["strategy"].get_payload() if "strategy" in parts else "auto"
    elements = [
        {
            "type": "Title" if i == 0 else "NarrativeText",
            "element_id": str(i),
            "text": line,
            "metadata": {"filename": filename, "strategy": strategy},
        }
        for i, line in enumerate(lines)
    ]
    return _json(200, elements)


LLAMA_JOBS: dict[str, dict[str, Any]] = {}


def llama_parse(request: Request) -> Answer:
    """LlamaParse: POST /api/parsing/upload (the file as multipart form data, or `input_url` in a form; the
    key as a bearer token) starts a job; GET /api/parsing/job/{id} is its status, PENDING on the first poll
    and SUCCESS after (never, for `slow` in the file name or URL; ERROR for `broken`); GET
    .../result/{text|markdown} its pages, joined by the default separator: a file's lines, or two pages
    naming the URL. A form field `echo` set to `key` puts the key in the text."""
    token = request.headers.get("Authorization", "").removeprefix("Bearer ")
    if token == BAD_KEY:
        return _json(401, {"detail": "Invalid API Key"})
    path = urlsplit(request.path).path
    if path == "/api/parsing/upload":
        return _llama_upload(request, token)
    parts = path.removeprefix("/api/parsing/job/").split("/")
    job = LLAMA_JOBS.get(parts[0])
    if job is None:
        return _json(404, {"detail": "Job not found"})
    if len(parts) == 1:
        job["polls"] += 1
        state = job["state"] if job["polls"] > 1 or job["state"] != "SUCCESS" else "PENDING"
        failure = {"error_code": "UNSUPPORTED_FILE", "error_message": "the file is broken"}
        return _json(200, {"id": parts[0], "status": state, **(failure if state == "ERROR" else {})})
    kind = parts[2]
    text = (
        job["text"]
        if kind == "text"
        else "\n---\n".join(f"# {page}" for page in job["text"].split("\n---\n"))
    )
    return _json(200, {kind: text, "job_metadata": {"credits_used": 1, "job_pages": text.count("---") + 1}})


def _llama_upload(request: Request, token: str) -> Answer:
    if request.headers.get("Content-Type", "").startswith("multipart/"):
        parts = _multipart(request)
        name = parts["file"].get_filename()
        fields = {k: p.get_payload() for k, p in parts.items() if k != "file"}
        text = "\n---\n".join(parts["file"].get_payload(decode=True).decode().splitlines())
    else:
        fields = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
        name = fields["input_url"]
        text = f"Page 1 of {name}\n---\nPage 2 of {name}"
    if fields.get("echo") == "key":
        text += f" key {token}"
    state = "PENDING" if "slow" in name else "ERROR" if "broken" in name else "SUCCESS"
    job = f"job-{len(LLAMA_JOBS)}-{os.urandom(4).hex()}"
    LLAMA_JOBS[job] = {"name": name, "text": text, "state": state, "polls": 0, "fields": fields}
    return _json(200, {"id": job, "status": "PENDING"})


CLOUDINARY_SECRETS = {"cl-key-1": "cl-secret-7e1f0a", "YOUR_CLOUDINARY_API_KEY": "YOUR_CLOUDINARY_API_SECRET"}
CLOUDINARY_UPLOADS: dict[str, dict[str, str]] = {}  # public_id -> the form fields the upload carried
PNG = b"\x89PNG\r\n\x1a\n\x00\xff\xfe"  # (bytes that are no UTF-8)


def cloudinary(request: Request) -> Answer:
    """Cloudinary: POST /v1_1/{cloud}/{resource_type}/upload, multipart form fields, checked as Cloudinary
    checks them: a known api_key (CLOUDINARY_SECRETS) and the signature of the other fields with its secret
    (401 `Invalid Signature ... String to sign - '...'` otherwise). A `file` ending in missing.mp4 is 400;
    public_id `slow` answers after SLOW_SECONDS. The answer's secure_url is served under /cloudinary-res/ (PNG bytes)."""
    path = urlsplit(request.path).path
    if path.startswith("/cloudinary-res/"):
        return 200, {"Content-Type": "image/png"}, PNG + path.encode()
    _, _, cloud, resource_type, _ = path.split("/")
    fields = {k: p.get_payload() for k, p in _multipart(request).items()}
    secret = CLOUDINARY_SECRETS.get(fields.get("api_key", ""))
    if secret is None:
        return _json(401, {"error": {"message": f"Unknown API key {fields.get('api_key')}"}})
    signed = {
        k: v for k, v in fields.items() if k not in ("file", "api_key", "signature", "resource_type") and v
    }
    to_sign = "&".join(sorted(f"{k}={v}".replace("&", "%26") for k, v in signed.items()))
    if fields.get("signature") != hashlib.sha1((to_sign + secret).encode()).hexdigest():
        message = f"Invalid Signature {fields.get('signature')}. String to sign - '{to_sign}'."
        return _json(401, {"error": {"message": message}})
    public_id = fields["public_id"]
    _slow(public_id)
    if fields["file"].endswith("missing.mp4"):
        return _json(400, {"error": {"message": f"Resource not found - {fields['file']}"}})
    CLOUDINARY_UPLOADS[public_id] = fields
    kind = "video" if resource_type == "video" else "image"
    extension = "mp4" if kind == "video" else "png"
    url = f"http://{request.headers['Host']}/cloudinary-res/{cloud}/{kind}/upload/v1700000000/{public_id}.{extension}"
    answer = {
        "asset_id": "3515c6000a548515f1134043f9785c2f",
        "public_id": public_id,
        "version": 1700000000,
        "format": extension,
        "resource_type": kind,
        "type": "upload",
        "tags": fields["tags"].split(",") if fields.get("tags") else [],
        "bytes": 120253,
        "url": url,
        "secure_url": url,
        "api_key": fields["api_key"],
    }
    return _json(200, answer)


# The service account the Google fakes know: its key pair (the key file tests give is sheets_key_file()).
SHEETS_KEY = rsa.generate_private_key(public_exponent=65537, key_size=2048)
SHEETS_ACCOUNT = "mint-test@mint-project.iam.gserviceaccount.com"
SHEETS: dict[str, dict[str, list[list[Any]]]] = {}  # spreadsheet id -> range -> rows
SHEETS_TOKEN = "ya29.fake-access-token-1f3c"


def sheets_key_file(base_url: str, key: rsa.RSAPrivateKey = SHEETS_KEY) -> str:
    """A service account key file (base64) whose token endpoint is the fake's."""
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    account = {
        "type": "service_account",
        "client_email": SHEETS_ACCOUNT,
        "private_key_id": "k1",
        "private_key": pem,
        "token_uri": f"{base_url.rstrip('/')}/token",
    }
    return base64.b64encode(json.dumps(account).encode()).decode()


def google_token(request: Request) -> Answer:
    """Google's OAuth 2.0 token endpoint: a JWT bearer assertion, RS256, checked against SHEETS_KEY."""
    form = {k: v[0] for k, v in parse_qs(request.body.decode()).items()}
    if form.get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer":
        return _json(400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type"})
    head, claims, signature = form.get("assertion", "..").split(".")
    try:
        SHEETS_KEY.public_key().verify(
            base64.urlsafe_b64decode(signature + "=="),
            f"{head}.{claims}".encode(),
            padding.PKCS1v15(),
            hashes.SHA256(),
        )
    except InvalidSignature:
        return _json(400, {"error": "invalid_grant", "error_description": "Invalid JWT Signature."})
    payload = json.loads(base64.urlsafe_b64decode(claims + "=="))
    if payload["iss"] != SHEETS_ACCOUNT or payload["scope"] != "https://www.googleapis.com/auth/spreadsheets":
        return _json(400, {"error": "invalid_scope", "error_description": "Invalid issuer or scope."})
    return _json(200, {"access_token": SHEETS_TOKEN, "expires_in": 3599, "token_type": "Bearer"})


def _sheets_error(status: int, message: str, kind: str) -> Answer:
    return _json(status, {"error": {"code": status, "message": message, "status": kind}})


def sheets(request: Request) -> Answer:
    """The Sheets API v4's values endpoints, on an in-memory store of ranges (a range reads what was written
    to it). A bearer token other than the token endpoint's is 401; spreadsheet `missing` is 404, `slow` is
    answered after SLOW_SECONDS."""
    if request.headers.get("Authorization") != f"Bearer {SHEETS_TOKEN}":
        return _sheets_error(401, "Request had invalid authentication credentials.", "UNAUTHENTICATED")
    parts = urlsplit(request.path)
    _, _, _, spreadsheet, rest = parts.path.split("/", 4)
    _slow(spreadsheet)
    if spreadsheet == "missing":
        return _sheets_error(404, "Requested entity was not found.", "NOT_FOUND")
    book = SHEETS.setdefault(spreadsheet, {})
    query = parse_qs(parts.query)
    body = json.loads(request.body or b"{}")
    include = query.get("includeValuesInResponse") == ["true"] or body.get("includeValuesInResponse") is True
    if rest == "values:batchGet":
        found = [{"range": r, "majorDimension": "ROWS", "values": book.get(r, [])} for r in query["ranges"]]
        return _json(200, {"spreadsheetId": spreadsheet, "valueRanges": found})
    if rest == "values:batchUpdate":
        book.update({item["range"]: item["values"] for item in body["data"]})
        responses = [_sheets_updated(spreadsheet, i["range"], i["values"], include) for i in body["data"]]
        totals = {
            f"totalUpdated{k}": sum(r[f"updated{k}"] for r in responses) for k in ("Rows", "Columns", "Cells")
        }
        return _json(
            200, {"spreadsheetId": spreadsheet, "totalUpdatedSheets": 1, **totals, "responses": responses}
        )
    encoded, _, action = rest.removeprefix("values/").partition(":")  # (the range's own `:` is %3A)
    cell_range = unquote(encoded)
    if action == "clear":
        book.pop(cell_range, None)
        return _json(200, {"spreadsheetId": spreadsheet, "clearedRange": cell_range})
    if request.method == "GET":
        rows = book.get(cell_range, [])
        return _json(200, {"range": cell_range, "majorDimension": query["majorDimension"][0], "values": rows})
    if query.get("valueInputOption", [""])[0] not in ("RAW", "USER_ENTERED"):
        return _sheets_error(400, "Invalid valueInputOption", "INVALID_ARGUMENT")
    updated = _sheets_updated(spreadsheet, cell_range, body["values"], include)
    if action == "append":
        book[cell_range] = book.get(cell_range, []) + body["values"]
        return _json(200, {"spreadsheetId": spreadsheet, "tableRange": cell_range, "updates": updated})
    book[cell_range] = body["values"]
    return _json(200, updated)


def _sheets_updated(
    spreadsheet: str, cell_range: str, rows: list[list[Any]], include: bool
) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "spreadsheetId": spreadsheet,
        "updatedRange": cell_range,
        "updatedRows": len(rows),
        "updatedColumns": max((len(r) for r in rows), default=0),
        "updatedCells": sum(len(r) for r in rows),
    }
    if include:
        answer["updatedData"] = {"range": cell_range, "values": [[str(v) for v in r] for r in rows]}
    return answer


BB_SESSIONS: dict[str, dict[str, Any]] = {}


def browserbase(request: Request) -> Answer:
    """Browserbase's API v1 (the key in X-BB-API-Key): sessions created, listed, read, released
    (REQUEST_RELEASE makes them COMPLETED) and their debug URLs; extensions uploaded (multipart `file`).
    Project `slow` is answered after SLOW_SECONDS, project `missing` is 404."""
    if request.headers.get("X-BB-API-Key") in (None, BAD_KEY):
        return _json(401, {"statusCode": 401, "error": "Unauthorized", "message": "Invalid API key"})
    parts = urlsplit(request.path)
    path = parts.path.removeprefix("/v1/").split("/")
    if path == ["extensions"]:
        archive = _multipart(request)["file"].get_payload(decode=True)
        return _json(200, {"id": f"ext-{hashlib.sha1(archive).hexdigest()[:12]}", "fileName": "x.zip"})
    body = json.loads(request.body or b"{}")
    if path == ["sessions"] and request.method == "GET":
        status = parse_qs(parts.query).get("status", [None])[0]
        return _json(200, [s for s in BB_SESSIONS.values() if status in (None, s["status"])])
    if path == ["sessions"]:
        _slow(body.get("projectId"))
        if body.get("projectId") == "missing":
            return _json(404, {"statusCode": 404, "error": "Not Found", "message": "Project not found"})
        session = f"bb-{len(BB_SESSIONS)}-{os.urandom(4).hex()}"
        BB_SESSIONS[session] = {
            "id": session,
            "createdAt": "2026-01-01T00:00:00.000Z",
            "projectId": body["projectId"],
            "startedAt": "2026-01-01T00:00:00.000Z",
            "expiresAt": "2026-01-01T01:00:00.000Z",
            "status": "RUNNING",
            "proxyBytes": 0,
            "keepAlive": bool(body.get("keepAlive")),
            "region": "us-west-2",
            "browserSettings": body.get("browserSettings"),
        }
        return _json(
            201, {**BB_SESSIONS[session], "connectUrl": f"wss://connect.browserbase.com?signingKey={session}"}
        )
    session = BB_SESSIONS.get(path[1])
    if session is None:
        return _json(404, {"statusCode": 404, "error": "Not Found", "message": "Session not found"})
    if path[2:] == ["debug"]:
        debugger = (
            f"https://www.browserbase.com/devtools/inspector.html?wss=connect.browserbase.com/debug/{path[1]}"
        )
        page = {"id": "p1", "url": "about:blank", "title": "", "debuggerUrl": debugger}
        return _json(
            200,
            {"debuggerUrl": debugger, "debuggerFullscreenUrl": debugger, "pages": [page], "wsUrl": "wss://x"},
        )
    if request.method == "POST" and body.get("status") == "REQUEST_RELEASE":
        session["status"] = "COMPLETED"
    return _json(200, session)


ROUTES = {
    "/data/2.5/weather": weather,
    "/res/v1/web/search": brave,
    "/w/api.php": wikipedia,
    "/crawl": spider,
    "/links": spider,
    "/screenshot": spider,
    "/search": spider,
    "/api/query": arxiv,
    "/general/v0/general": unstructured,
    "/token": google_token,
}


def respond(request: Request) -> Answer:
    path = urlsplit(request.path).path
    route = ROUTES.get(path)
    if path.startswith("/v3/") and path.endswith("/messages"):
        route = mailgun
    elif path.startswith("/1/indexes/") and path.endswith("/query"):
        route = algolia
    elif path.startswith("/api/parsing/"):
        route = llama_parse
    elif path.startswith(("/v1_1/", "/cloudinary-res/")):
        route = cloudinary
    elif path.startswith("/v4/spreadsheets/"):
        route = sheets
    elif path.startswith("/v1/"):
        route = browserbase
    return route(request) if route else (404, {}, b"no such path")


@dataclass
class Mailbox:
    """What the SMTP fake accepted: (sender, recipients, message text, logged-in user)."""

    messages: list[tuple[str, list[str], str, str | None]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle_RCPT(
        self, server: Any, session: Any, envelope: Envelope, address: str, options: Any
    ) -> str:  # noqa: N802 - aiosmtpd's hook names
        if address.endswith("@refused.example"):
            return "550 5.1.1 mailbox unavailable"
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server: Any, session: Any, envelope: Envelope) -> str:  # noqa: N802
        if b"Subject: slow" in (envelope.original_content or b""):
            await asyncio.sleep(SLOW_SECONDS)
        text = (
            (envelope.content or b"").decode()
            if isinstance(envelope.content, bytes)
            else str(envelope.content)
        )
        user = session.auth_data.decode() if isinstance(session.auth_data, bytes) else None
        with self.lock:
            self.messages.append((str(envelope.mail_from), list(envelope.rcpt_tos), text, user))
        return "250 Message accepted"


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> AuthResult:
    """Any login but one whose password is BAD_KEY (the cookbooks' placeholder credentials log in)."""
    ok = isinstance(data, LoginPassword) and data.password != BAD_KEY.encode()
    # handled=False: aiosmtpd answers the failure (535) itself.
    return AuthResult(success=ok, handled=False, auth_data=data.login if ok else None)


class IntegrationFakes:
    """The HTTP fakes on one local server and the SMTP fake; `base_urls` points every provider at them."""

    def __init__(self) -> None:
        self.http = LocalServer(respond)
        self.mailbox = Mailbox()
        # Login is offered without TLS (a local test server); the client logs in only when setup has a user.
        self.smtp_port = free_port()
        self.smtp = Controller(
            self.mailbox,
            hostname="127.0.0.1",
            port=self.smtp_port,
            authenticator=_authenticate,
            auth_require_tls=False,
            auth_required=False,
        )
        self.smtp.start()

    @property
    def base_urls(self) -> dict[str, str]:
        names = (
            "weather",
            "brave",
            "wikipedia",
            "spider",
            "arxiv",
            "mailgun",
            "algolia",
            "unstructured",
            "llama_parse",
            "cloudinary",
            "google_sheets",
            "browserbase",
        )
        return {name: self.http.url for name in names}

    @property
    def requests(self) -> list[Request]:
        return self.http.requests

    def close(self) -> None:
        self.smtp.stop()
        self.http.close()
