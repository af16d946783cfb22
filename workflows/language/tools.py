"""Tools as a task or an agent declares them (Julep v1's shapes, and the seed's `function:` form)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from contracts.anthropic_tools import ANTHROPIC_TOOLS
from contracts.json import JsonObject
from workflows.integrations import integration_problems
from workflows.language.common import NAME_PATTERN, JsonField, Lenient
from workflows.system_ops import operation_key

TOOL_TYPES = ("function", "api_call", "system", "integration", *ANTHROPIC_TOOLS)
# The tools the client runs (a call of one is handed back to it, or waited for in a task).
CLIENT_TOOL_TYPES = frozenset({"function", *ANTHROPIC_TOOLS})


class FunctionDef(BaseModel):
    model_config = ConfigDict(extra="allow")
    name: str | None = None
    description: str | None = None
    parameters: JsonField | None = None


class ApiCallDef(Lenient):
    model_config = ConfigDict(extra="allow")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = "GET"
    url: str
    headers: dict[str, str] | None = None
    params: JsonField | None = None
    json_: Any = Field(default=None, alias="json")
    content: str | None = None
    data: JsonField | None = None
    follow_redirects: bool = False
    # The whole call's deadline; its upper bound is configured (MINT_MAX_TOOL_TIMEOUT_SECONDS, workflows/validate.py).
    timeout: Annotated[float, Field(gt=0, allow_inf_nan=False)] | None = None
    schema_: JsonField | None = Field(default=None, alias="schema")
    params_schema: JsonField | None = None


class ComputerDef(BaseModel):
    """Anthropic's computer tool: the screen the model is told it sees (Julep's Computer20241022Def)."""

    model_config = ConfigDict(extra="ignore")
    display_width_px: Annotated[int, Field(ge=1, le=10_000)]
    display_height_px: Annotated[int, Field(ge=1, le=10_000)]
    display_number: Annotated[int, Field(ge=0, le=1000)] | None = None


class ToolDef(BaseModel):
    """A tool as written in a task or attached to an agent (Julep v1 shape, or the seed's `function:` form)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    name: Annotated[str, Field(pattern=NAME_PATTERN, max_length=64)]
    type: Literal[
        "function",
        "api_call",
        "system",
        "integration",
        "computer_20241022",
        "text_editor_20241022",
        "bash_20241022",
    ]
    description: str | None = None
    function: FunctionDef | None = None
    computer_20241022: ComputerDef | None = Field(default=None, validate_default=True)
    text_editor_20241022: JsonField | None = None
    bash_20241022: JsonField | None = None
    api_call: ApiCallDef | None = Field(default=None, validate_default=True)
    system: JsonField | None = Field(default=None, validate_default=True)
    integration: JsonField | None = Field(default=None, validate_default=True)
    # In a prompt's tool loop, a failed call goes back to the model as an error result ("report"), or
    # fails the step ("fail").
    on_error: Literal["report", "fail"] | None = None

    @model_validator(mode="before")
    @classmethod
    def _infer_type(cls, raw: Any) -> Any:
        # The seed writes `- function:\n  name: send_email`, which YAML reads as {function: None, name: ...}.
        if isinstance(raw, dict) and "type" not in raw:
            present = [t for t in TOOL_TYPES if t in raw]
            if len(present) == 1:
                raw = {**raw, "type": present[0]}
        if isinstance(raw, dict) and isinstance(raw.get("function"), dict) and "name" not in raw:
            raw = {**raw, "name": raw["function"].get("name")}
        return raw

    @field_validator("system")
    @classmethod
    def _known_system_operation(cls, value: JsonObject | None, info: ValidationInfo) -> JsonObject | None:
        # Refused when the task is created, not when the step first runs.
        if value is None and info.data.get("type") == "system":
            raise ValueError("a system tool needs a `system` spec: {resource, subresource, operation}")
        if value is not None:
            operation_key(value)
        return value

    @field_validator("api_call")
    @classmethod
    def _api_call_present(cls, value: ApiCallDef | None, info: ValidationInfo) -> ApiCallDef | None:
        if value is None and info.data.get("type") == "api_call":
            raise ValueError("an api_call tool needs an `api_call` spec with at least `url`")
        return value

    @field_validator("integration")
    @classmethod
    def _known_integration(cls, value: JsonObject | None, info: ValidationInfo) -> JsonObject | None:
        # Its provider, method and setup fields are refused when the task is created (workflows/integrations.py).
        if info.data.get("type") != "integration":
            return value
        problems = integration_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @field_validator("computer_20241022")
    @classmethod
    def _computer_present(cls, value: ComputerDef | None, info: ValidationInfo) -> ComputerDef | None:
        if value is None and info.data.get("type") == "computer_20241022":
            raise ValueError(
                "a computer_20241022 tool needs `computer_20241022: {display_width_px, display_height_px}`"
            )
        return value
