"""System tools' operations: each (resource, subresource, operation) a task may call, as a route of Mint's API.

Pure data (no I/O), so task validation refuses an unknown operation at creation and the activity
(activities/system.py) makes the call. Arguments use Julep v1's names: a route's `{agent_id}`, `{doc_id}`, ...
come from the arguments of the same name (`id` and the tool's `resource_id` stand for `{resource}_id`), and
what the route answers is reshaped as Julep's system tools answer (`shape`).
"""

from __future__ import annotations

from dataclasses import dataclass

from contracts.json import JsonObject

Key = tuple[str, str | None, str]


@dataclass(frozen=True)
class Operation:
    method: str
    path: str  # placeholders name the arguments that fill them
    # How Julep shapes the answer: "items" (a list operation returns a list), "docs"/"doc" (a list of docs, or
    # one, with `content` a list of chunks), "history" (entries' `content` a list of parts), "" as answered.
    shape: str = ""
    # A create given the resource's own id creates it with that id (Julep's `create_agent(agent_id=...)`).
    path_with_id: str | None = None


AGENT, USER, SESSION, TASK = (
    "/agents/{agent_id}",
    "/users/{user_id}",
    "/sessions/{session_id}",
    "/tasks/{task_id}",
)


def _people(resource: str, collection: str, one: str) -> dict[Key, Operation]:
    """Agents and users: the resource itself and its docs (Julep's `doc` subresource)."""
    return {
        (resource, None, "list"): Operation("GET", collection, "items"),
        (resource, None, "get"): Operation("GET", one),
        (resource, None, "create"): Operation("POST", collection, path_with_id=one),
        (resource, None, "update"): Operation("PUT", one),  # Julep's update replaces the whole resource
        (resource, None, "patch"): Operation("PATCH", one),
        (resource, None, "delete"): Operation("DELETE", one),
        (resource, None, "create_or_update"): Operation("POST", one),
        (resource, "doc", "list"): Operation("GET", one + "/docs", "docs"),
        (resource, "doc", "create"): Operation("POST", one + "/docs", "doc"),
        (resource, "doc", "delete"): Operation("DELETE", one + "/docs/{doc_id}"),
        (resource, "doc", "search"): Operation("POST", one + "/search"),
    }


OPERATIONS: dict[Key, Operation] = {
    **_people("agent", "/agents", AGENT),
    **_people("user", "/users", USER),
    ("agent", "tool", "list"): Operation("GET", AGENT + "/tools", "items"),
    ("agent", "tool", "create"): Operation("POST", AGENT + "/tools"),
    ("agent", "tool", "update"): Operation("PUT", AGENT + "/tools/{tool_id}"),
    ("agent", "tool", "patch"): Operation("PATCH", AGENT + "/tools/{tool_id}"),
    ("agent", "tool", "delete"): Operation("DELETE", AGENT + "/tools/{tool_id}"),
    ("agent", "task", "list"): Operation("GET", AGENT + "/tasks", "items"),
    ("agent", "task", "create"): Operation("POST", AGENT + "/tasks"),
    ("session", None, "list"): Operation("GET", "/sessions", "items"),
    ("session", None, "get"): Operation("GET", SESSION),
    ("session", None, "create"): Operation("POST", "/sessions", path_with_id=SESSION),
    # Julep's session update takes only the fields it changes (cookbook 09 updates `situation` alone).
    ("session", None, "update"): Operation("PATCH", SESSION),
    ("session", None, "patch"): Operation("PATCH", SESSION),
    ("session", None, "delete"): Operation("DELETE", SESSION),
    ("session", None, "create_or_update"): Operation("POST", SESSION),
    ("session", None, "chat"): Operation("POST", SESSION + "/chat"),
    ("session", None, "history"): Operation("GET", SESSION + "/history", "history"),
    ("session", None, "render"): Operation("POST", SESSION + "/render"),
    ("task", None, "list"): Operation("GET", AGENT + "/tasks", "items"),
    ("task", None, "get"): Operation("GET", TASK),
    ("task", None, "create"): Operation("POST", AGENT + "/tasks", path_with_id=AGENT + "/tasks/{task_id}"),
    ("task", None, "update"): Operation("PUT", TASK),
    ("task", None, "delete"): Operation("DELETE", TASK),
    ("task", None, "create_or_update"): Operation("POST", AGENT + "/tasks/{task_id}"),
    ("task", "execution", "create"): Operation("POST", TASK + "/executions"),
    ("task", "execution", "list"): Operation("GET", TASK + "/executions", "items"),
    ("execution", None, "get"): Operation("GET", "/executions/{execution_id}"),
    ("execution", None, "change_status"): Operation("PUT", "/executions/{execution_id}"),
    ("execution", "transition", "list"): Operation("GET", "/executions/{execution_id}/transitions", "items"),
    ("doc", None, "get"): Operation("GET", "/docs/{doc_id}", "doc"),
    ("doc", None, "embed"): Operation("POST", "/embed"),
}


def dotted(key: Key) -> str:
    return ".".join(part for part in key if part)


def operation_key(spec: JsonObject) -> Key:
    """A system tool's (resource, subresource, operation), from Julep's fields or the dotted `call`
    shorthand (`agent.doc.create`, `session.chat`); ValueError when it names none Mint has."""
    if spec.get("call"):
        parts = str(spec["call"]).split(".")
        if len(parts) not in (2, 3):
            raise ValueError(
                f"system call {spec['call']!r} must look like `resource.operation` or `resource.sub.op`"
            )
        key: Key = (parts[0], None, parts[1]) if len(parts) == 2 else (parts[0], parts[1], parts[2])
    else:
        sub = spec.get("subresource")
        key = (str(spec.get("resource")), None if sub is None else str(sub), str(spec.get("operation")))
    if key not in OPERATIONS:
        known = ", ".join(sorted(dotted(k) for k in OPERATIONS))
        raise ValueError(f"system operation {dotted(key)} is not one Mint has; it has: {known}")
    return key
