"""Drive an MCP server with the official MCP Python SDK (``mcp`` from PyPI).

Usage::

    python mcp_client.py stdio [--call NAME JSON]... [--fail NAME JSON]...
                               [--find QUERY NAME JSON]... [--confirm NAME JSON]...
                               -- COMMAND ARG...
    python mcp_client.py http URL [--bearer TOKEN] [--call NAME JSON]... [--fail NAME JSON]...
                                  [--find QUERY NAME JSON]...

``stdio`` starts COMMAND (``halo mcp ...``) and talks to it over its standard input and output;
``http`` talks to a streamable HTTP endpoint (an app's ``/mcp``), sending
``Authorization: Bearer TOKEN`` when given.

Checks, in order:

1. ``initialize`` succeeds and the server offers tools;
2. ``tools/list`` lists tools with unique names, each with an object ``inputSchema`` whose
   ``required`` names only its properties;
3. each ``--call NAME JSON`` calls that tool, which must be listed, and must not be an error;
   the SDK itself validates ``structuredContent`` against the tool's ``outputSchema``;
4. each ``--fail NAME JSON`` calls that tool and must come back as a result with ``isError``
   (not a protocol error), whose text is the problem details;
5. each ``--find QUERY NAME JSON`` asks ``search_tools`` (which must be listed) for QUERY,
   which must answer NAME among its tools, with an input schema; NAME must not be listed;
   then calls NAME by its name with JSON, which must not be an error (progressive
   disclosure: tools found by search are called though never listed);
6. each ``--confirm NAME JSON`` calls that tool, which must ask the user to confirm it
   (``elicitation/create``, form mode, with a ``reason`` field) and, once the client accepts,
   must not be an error. With any ``--confirm`` the client declares elicitation.

Prints a JSON summary on stdout (``ok``, the tools with their annotations, and each call's
``isError``, text and ``structuredContent``, and each confirmation's message) and exits 0, or
prints the failure and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import traceback
from typing import Any

import httpx
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client


class CheckFailed(Exception):
    """A check did not hold."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


class Confirmer:
    """An elicitation callback that accepts every confirmation, keeping what it was asked."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        check(isinstance(params, types.ElicitRequestFormParams),
              f"the confirmation is not a form: {params!r}")
        check("reason" in params.requestedSchema.get("properties", {}),
              f"the confirmation asks for no reason: {params.requestedSchema}")
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"reason": "confirmed in the Python SDK"})


async def exercise(session: ClientSession, calls: list[tuple[str, str]],
                   failures: list[tuple[str, str]],
                   finds: list[tuple[str, str, str]],
                   confirms: list[tuple[str, str]] = (),
                   confirmer: Confirmer | None = None) -> dict[str, Any]:
    initialized = await session.initialize()
    check(initialized.capabilities.tools is not None, "the server offers no tools")
    listed = await session.list_tools()
    names = [tool.name for tool in listed.tools]
    check(len(names) > 0, "no tools listed")
    check(len(set(names)) == len(names), f"tool names repeat: {names}")
    tools = []
    for tool in listed.tools:
        schema = tool.inputSchema
        check(schema.get("type") == "object", f"{tool.name}: inputSchema is not an object")
        properties = schema.get("properties", {})
        for name in schema.get("required", []):
            check(name in properties, f"{tool.name}: required {name!r} is not a property")
        annotations = tool.annotations.model_dump(exclude_none=True) if tool.annotations else {}
        tools.append({"name": tool.name, "annotations": annotations,
                      "output": tool.outputSchema is not None})

    results = []
    for name, arguments, expect_error in [(n, a, False) for n, a in calls] + \
            [(n, a, True) for n, a in failures]:
        check(name in names, f"{name} is not listed: {names}")
        result = await session.call_tool(name, json.loads(arguments))
        text = "".join(block.text for block in result.content if block.type == "text")
        check(bool(result.isError) == expect_error,
              f"{name} {arguments}: isError={result.isError}, expected {expect_error}: {text}")
        if expect_error:
            problem = json.loads(text)
            check(isinstance(problem.get("status"), int) and problem["status"] >= 400,
                  f"{name}: the error text is not problem details: {text}")
        results.append({"tool": name, "isError": bool(result.isError), "text": text,
                        "structured": result.structuredContent})
    found = []
    for query, name, arguments in finds:
        check("search_tools" in names, f"search_tools is not listed: {names}")
        check(name not in names, f"{name} is listed; nothing to find")
        result = await session.call_tool("search_tools", {"query": query})
        check(not result.isError, f"search_tools {query!r} failed")
        text = "".join(block.text for block in result.content if block.type == "text")
        answer = json.loads(text)
        answered = [tool["name"] for tool in answer["tools"]]
        check(name in answered, f"search_tools {query!r} answered {answered}, not {name}")
        schema = next(tool["inputSchema"] for tool in answer["tools"] if tool["name"] == name)
        check(schema.get("type") == "object", f"{name}: its inputSchema is not an object")
        called = await session.call_tool(name, json.loads(arguments))
        called_text = "".join(block.text for block in called.content if block.type == "text")
        check(not called.isError, f"{name} {arguments} (found, never listed): {called_text}")
        found.append({"query": query, "answered": answered, "tool": name,
                      "text": called_text, "structured": called.structuredContent})
    confirmed = []
    for name, arguments in confirms:
        before = len(confirmer.asked)
        result = await session.call_tool(name, json.loads(arguments))
        text = "".join(block.text for block in result.content if block.type == "text")
        check(len(confirmer.asked) == before + 1, f"{name} {arguments}: no confirmation asked")
        check(not result.isError, f"{name} {arguments} (confirmed): {text}")
        confirmed.append({"tool": name, "asked": confirmer.asked[-1], "text": text,
                          "structured": result.structuredContent})
    return {"ok": True, "tools": tools, "calls": results, "found": found,
            "confirmed": confirmed}


async def over_stdio(command: list[str], calls, failures, finds, confirms) -> dict[str, Any]:
    params = StdioServerParameters(command=command[0], args=command[1:])
    confirmer = Confirmer() if confirms else None
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=confirmer) as session:
            return await exercise(session, calls, failures, finds, confirms, confirmer)


async def over_http(url: str, bearer: str | None, calls, failures, finds) -> dict[str, Any]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    async with httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write, _):
            async with ClientSession(read, write) as session:
                return await exercise(session, calls, failures, finds)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     epilog="stdio: -- COMMAND ARG... after the options")
    parser.add_argument("transport", choices=["stdio", "http"])
    parser.add_argument("url", nargs="?", help="the /mcp endpoint (http)")
    parser.add_argument("--bearer", help="a bearer token for the http transport")
    parser.add_argument("--call", nargs=2, action="append", default=[],
                        metavar=("NAME", "JSON"), help="a call that must succeed")
    parser.add_argument("--fail", nargs=2, action="append", default=[],
                        metavar=("NAME", "JSON"), help="a call that must be an isError result")
    parser.add_argument("--find", nargs=3, action="append", default=[],
                        metavar=("QUERY", "NAME", "JSON"),
                        help="search_tools must find NAME for QUERY; NAME is then called")
    parser.add_argument("--confirm", nargs=2, action="append", default=[],
                        metavar=("NAME", "JSON"),
                        help="a call the user is asked to confirm (stdio), which then succeeds")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:split])
    command = argv[split + 1:]
    try:
        if args.transport == "stdio":
            check(len(command) > 0, "stdio needs -- COMMAND ARG...")
            summary = asyncio.run(over_stdio(command, args.call, args.fail, args.find,
                                             args.confirm))
        else:
            check(args.url is not None, "http needs a URL")
            summary = asyncio.run(over_http(args.url, args.bearer, args.call, args.fail,
                                              args.find))
    except Exception as error:  # report anything, including the SDK's own errors
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}))
        traceback.print_exc()
        return 1
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
