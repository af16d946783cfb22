import json
import uuid

import httpx
import pytest

from tests.helpers import create_agent, create_task, start, wait_for_status


async def req(api, m, url, **kw):
    try:
        async with httpx.AsyncClient(base_url=api.base_url, headers=api.headers) as fresh:
            r = await fresh.request(m, url, **kw)
    except Exception as e:
        return f"EXC {e!r}"
    return f"{r.status_code} {r.text[:300]}"


async def test_probe(api, stack, store):
    agent = await create_agent(api)
    a = agent["id"]
    yamls = ["- a\n- b", "name: t\nmain:\n  - evaluate: {x: 2024-01-01}\n",
             "name: t\nmain:\n  - evaluate: {x: '$ 1'}\n1: [{evaluate: {y: '$ 1'}}]\n",
             "name: t\nmain:\n  - evaluate: {x: .nan}\n", "name: t\nmetadata: {v: .inf}\nmain:\n  - evaluate: {x: '$ 1'}\n",
             "name: 123\nmain:\n  - evaluate: {x: '$ 1'}\n", "name: t\nmain:\n  - evaluate: {1: '$ 1'}\n",
             "name: t\nmetadata: {1: x}\nmain:\n  - evaluate: {x: '$ 1'}\n",
             "name: t\nmain:\n  - evaluate: {x: !!binary aGVsbG8=}\n",
             "name: t\nmain:\n  - evaluate: {x: '$ 1'}\n    label: !!set {a, b}\n",
             "name: t\nmain:\n  - evaluate: {x: \"$ '\\0'\"}\n",
             "name: \"t\\0\"\nmain:\n  - evaluate: {x: '$ 1'}\n",
             "name: t\nmain:\n  - log: \"a\\0b\"\n",
             ]
    for y in yamls:
        print("PROBE yaml", repr(y), await req(api, "POST", f"/agents/{a}/tasks", content=y.encode(), headers={"content-type": "application/yaml"}))
    for schema in [{"$ref": "#/definitions/nope"}, {"type": "string", "pattern": "("}, {"$ref": "http://example.com/s.json"}]:
        t = {"name": "t", "input_schema": schema, "main": [{"evaluate": {"x": "$ 1"}}]}
        async with httpx.AsyncClient(base_url=api.base_url, headers=api.headers) as fresh:
            r = await fresh.post(f"/agents/{a}/tasks", json=t)
        print("PROBE schema", schema, r.status_code, r.text[:300])
        if r.status_code == 201:
            print("PROBE schema exec", await req(api, "POST", f"/tasks/{r.json()['id']}/executions", json={"input": {"a": 1}}))
    task = await create_task(api, a, {"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]})
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {(await store.create_developer('o'))[1]}"}) as other:
        print("PROBE other get agent", await req(other, "GET", f"/agents/{a}"))
        print("PROBE other cou agent", await req(other, "POST", f"/agents/{a}", json={"name": "stolen"}))
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {(await store.create_developer('o'))[1]}"}) as other:
        oa = (await other.post("/agents", json={"name": "o"})).json()["id"]
        print("PROBE other cou task", await req(other, "POST", f"/agents/{oa}/tasks/{task['id']}", json={"name": "t", "main": [{"evaluate": {"x": "$ 2"}}]}))
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {(await store.create_developer('o'))[1]}"}) as other:
        u = (await api.post("/users", json={})).json()["id"]
        print("PROBE other cou user", await req(other, "POST", f"/users/{u}", json={"name": "x"}))
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {(await store.create_developer('o'))[1]}"}) as other:
        print("PROBE exec NUL", await req(other, "POST", f"/tasks/{task['id']}/executions", json={"input": {"v": "\u0000"}}))
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {api.headers['authorization'][7:]}"}) as c:
        print("PROBE exec NUL", await req(c, "POST", f"/tasks/{task['id']}/executions", json={"input": {"v": "\u0000"}}))
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {api.headers['authorization'][7:]}"}) as c:
        print("PROBE agent inf", await req(c, "POST", "/agents", content=b'{"name":"x","default_settings":{"t":Infinity}}', headers={"content-type": "application/json"}))
    async with httpx.AsyncClient(base_url=stack.url) as c:
        print("PROBE badkey", await req(c, "GET", "/agents", headers={"Authorization": "Bearer nope"}))
        print("PROBE xauth", await req(c, "GET", "/agents", headers={"X-Auth-Key": api.headers['authorization'][7:]}))
        print("PROBE basic", await req(c, "GET", "/agents", headers={"Authorization": "Basic abc"}))
        print("PROBE nul key", await req(c, "GET", "/agents", headers={"X-Auth-Key": "a\x7f"}))
    async with httpx.AsyncClient(base_url=stack.url, headers={"Authorization": f"Bearer {api.headers['authorization'][7:]}"}) as c:
        print("PROBE tools patch", await req(c, "POST", f"/agents/{a}/tools", json={"name": "f", "type": "function"}))
        tid = (await c.get(f"/agents/{a}/tools")).json()["items"][0]["id"]
        print("PROBE tools patch", await req(c, "PATCH", f"/agents/{a}/tools/{tid}", json={"type": "api_call"}))
        print("PROBE tools patch", await req(c, "PATCH", f"/agents/{a}/tools/{tid}", json={"name": "bad name"}))
        print("PROBE tools list", await req(c, "GET", f"/agents/{a}/tools"))
        print("PROBE tools dup", await req(c, "POST", f"/agents/{a}/tools", json={"name": "f", "type": "function"}))
        print("PROBE tools put", await req(c, "PUT", f"/agents/{a}/tools/{tid}", json={"name": "g", "type": "function"}))
        print("PROBE tools post list", await req(c, "POST", f"/agents/{a}/tools", json=[1]))
        print("PROBE tool other agent", await req(c, "DELETE", f"/agents/{uuid.uuid4()}/tools/{tid}"))
        print("PROBE status stream bad", await req(c, "GET", "/executions/zzz/status.stream"))
        print("PROBE metadata", await req(c, "POST", f"/tasks/{task['id']}/executions", json={"input": {}, "metadata": [1]}))
        print("PROBE agent long", await req(c, "POST", "/agents", json={"name": "x" * 256}))
        print("PROBE agent instr", await req(c, "POST", "/agents", json={"name": "x", "instructions": 5}))
        print("PROBE task unknown agent", await req(c, "POST", f"/agents/{uuid.uuid4()}/tasks", json={"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]}))
        print("PROBE task bad agent", await req(c, "POST", f"/agents/xyz/tasks", json={"name": "t", "main": [{"evaluate": {"x": "$ 1"}}]}))
        print("PROBE tasks list bad", await req(c, "GET", f"/agents/xyz/tasks"))
        print("PROBE exec list bad", await req(c, "GET", f"/tasks/xyz/executions"))
        print("PROBE trans bad", await req(c, "GET", f"/executions/xyz/transitions"))
        print("PROBE transitions stream bad", await req(c, "GET", f"/executions/{uuid.uuid4()}/transitions.stream"))
