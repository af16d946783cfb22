"""Request and response bodies of the HTTP API (Julep v1 shapes, so the `julep` SDK works unchanged), one
module per resource; routes use them as `schemas.Name`."""

from __future__ import annotations

from api.schemas.agents import Agent, AgentCreate, AgentPatch, Task, Tool
from api.schemas.common import (
    ErrorOut,
    ItemList,
    Name,
    ProblemOut,
    RequestBody,
    ResourceDeleted,
    event_stream,
)
from api.schemas.docs import Doc, DocCreate, DocsDelete, DocSearch, DocsImport, Embed
from api.schemas.executions import (
    Execution,
    ExecutionChange,
    ExecutionCreate,
    ExecutionListed,
    ExecutionRestart,
    Position,
    Timer,
    Trace,
    TraceItem,
    Transition,
    Usage,
)
from api.schemas.files import File, FileCreate
from api.schemas.jobs import JobStatus
from api.schemas.projects import CanonicalName, Project, ProjectCreate, ProjectName
from api.schemas.secrets import Secret, SecretCreate, SecretName
from api.schemas.sessions import Session, SessionCreate, SessionPatch
from api.schemas.users import User, UserCreate
from services.chat.request import (
    Chat,
    ChatMessage,
    ContentPart,
    FunctionCall,
    ImagePart,
    ImageUrl,
    TextPart,
    ToolCall,
)

__all__ = [
    "Agent",
    "AgentCreate",
    "AgentPatch",
    "CanonicalName",
    "Chat",
    "ChatMessage",
    "ContentPart",
    "Doc",
    "DocCreate",
    "DocSearch",
    "DocsDelete",
    "DocsImport",
    "Embed",
    "ErrorOut",
    "Execution",
    "ExecutionChange",
    "ExecutionCreate",
    "ExecutionListed",
    "ExecutionRestart",
    "File",
    "FileCreate",
    "FunctionCall",
    "ImagePart",
    "ImageUrl",
    "ItemList",
    "JobStatus",
    "Name",
    "Position",
    "ProblemOut",
    "Project",
    "ProjectCreate",
    "ProjectName",
    "RequestBody",
    "ResourceDeleted",
    "Secret",
    "SecretCreate",
    "SecretName",
    "Session",
    "SessionCreate",
    "SessionPatch",
    "Task",
    "TextPart",
    "Timer",
    "Tool",
    "ToolCall",
    "Trace",
    "TraceItem",
    "Transition",
    "Usage",
    "User",
    "UserCreate",
    "event_stream",
]
