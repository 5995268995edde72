"""Drive a HALO server with the Python reference client, ``halo_fastapi.HaloClient``.

Usage::

    python halo_client_discovers.py BASE_URL [--token TOKEN] [--tag TAG] [--strict]
                                    [--call METHOD URL JSON]...

Checks, in order:

1. discovery without tags lists tools, each with a url, method and name, names unique;
2. discovery with ``--tag`` (default ``payments``) lists exactly the tools carrying that tag,
   and an unknown tag lists none;
3. every tool's schema, fetched with ``get_tool(url, method=...)``, parses into the client's
   models and its ``call`` matches the manifest entry (method, url) and its tags match too;
4. every GET tool whose url has no ``{template}`` is invoked with its first example's input
   (or ``{}``) and answers a JSON object;
5. each ``--call METHOD URL JSON`` invokes that tool (it must be in the manifest) with those
   arguments, with the token, and answers a JSON object: a call that needs the credentials.

With ``--strict`` (for servers that promise it, such as the bookstore sample) it also checks that
every example's input names only declared inputs, and that each optional HALO field appears in
at least one schema.

Prints a JSON summary on stdout and exits 0, or prints the failure and exits 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import traceback
from typing import Any

from halo_fastapi import HaloClient

TEMPLATE = re.compile(r"\{[^}]*\}")

# Optional HALO fields that a --strict server uses at least once, read from the client's models.
STRICT_FIELDS = {
    "why": lambda s: bool(s.why),
    "auth": lambda s: s.auth.type != "none",
    "effects": lambda s: s.effects is not None,
    "effects.undo": lambda s: s.effects is not None and bool(s.effects.undo),
    "limits.rate": lambda s: s.limits is not None and bool(s.limits.rate),
    "limits.idempotent": lambda s: s.limits is not None and s.limits.idempotent,
    "next": lambda s: bool(s.next),
    "examples": lambda s: bool(s.examples),
    "resilience": lambda s: s.resilience is not None,
    "resilience.timeout_ms": lambda s: s.resilience is not None and s.resilience.timeout_ms is not None,
    "resilience.fallback": lambda s: s.resilience is not None and bool(s.resilience.fallback),
    "trust": lambda s: s.trust is not None,
    "observe": lambda s: s.observe is not None,
    "observe.trace_header": lambda s: s.observe is not None and bool(s.observe.trace_header),
    "status": lambda s: bool(s.status),
    "sunset": lambda s: bool(s.sunset),
    "replace_with": lambda s: bool(s.replace_with),
}


class CheckFailed(Exception):
    """A check did not hold."""


def check(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def client(base_url: str, token: str | None) -> HaloClient:
    # No retries: a failing request should fail the check at once, not after 15 s of backoff.
    return HaloClient(base_url, bearer_token=token, max_retries=0)


async def discover(base_url: str, token: str | None, tags: list[str] | None) -> list[Any]:
    async with client(base_url, token) as c:
        await c.discover(tags=tags)
        return c.tools


async def run(
    base_url: str, token: str | None, tag: str, strict: bool, calls: list[tuple[str, str, str]]
) -> dict[str, Any]:
    summary: dict[str, Any] = {"base_url": base_url}
    async with client(base_url, token) as c:
        # 1. Discovery without tags.
        await c.discover()
        manifest = c.manifest
        tools = c.tools
        check(manifest is not None, "discover() left no manifest")
        check(bool(manifest.api) and bool(manifest.version), f"manifest lacks api/version: {manifest!r}")
        check(len(tools) > 0, "the manifest lists no tools")
        names = [t.name for t in tools]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        check(not duplicates, f"tool names are not unique: {duplicates}")
        for t in tools:
            check(bool(t.name), f"a tool has no name: {t!r}")
            check(t.url.startswith("/"), f"{t.name}: url {t.url!r} is not a path")
            check(t.method.upper() == t.method and bool(t.method), f"{t.name}: method {t.method!r} is not upper case")
        pairs = [(t.method, t.url) for t in tools]
        check(len(set(pairs)) == len(pairs), "two tools share a method and url")
        summary.update(api=manifest.api, version=manifest.version, tools=len(tools))

        # 2. Discovery with tags (OR semantics, case-sensitive), and an unknown tag.
        expected = sorted(t.name for t in tools if tag in t.tags)
        tagged = await discover(base_url, token, [tag])
        got = sorted(t.name for t in tagged)
        check(got == expected, f"tags=[{tag!r}] listed {got}, expected {expected}")
        check(all(tag in t.tags for t in tagged), f"tags=[{tag!r}] listed a tool without the tag")
        none = await discover(base_url, token, ["nope-no-such-tag"])
        check(none == [], f"an unknown tag listed {[t.name for t in none]}")
        summary["tagged"] = {tag: got, "nope-no-such-tag": []}

        # 3. Every tool's schema.
        schemas = {}
        for t in tools:
            s = await c.get_tool(t.url, method=t.method)
            where = f"{t.method} {t.url} ({t.name})"
            check(s.call.method.upper() == t.method.upper(), f"{where}: schema call.method is {s.call.method!r}")
            check(s.call.url == t.url, f"{where}: schema call.url is {s.call.url!r}")
            check(sorted(s.tags) == sorted(t.tags), f"{where}: schema tags {s.tags} differ from manifest {t.tags}")
            if strict:
                for i, example in enumerate(s.examples):
                    unknown = sorted(set(example.input) - set(s.input))
                    check(not unknown, f"{where}: examples[{i}].input names undeclared inputs {unknown}")
            schemas[t.name] = s
        summary["schemas"] = len(schemas)
        if strict:
            missing = [f for f, used in STRICT_FIELDS.items() if not any(used(s) for s in schemas.values())]
            check(not missing, f"no schema uses {missing}")
            summary["fields_seen"] = sorted(STRICT_FIELDS)

        # 4. Invoke every GET tool without a path template.
        invoked = []
        for t in tools:
            if t.method != "GET" or TEMPLATE.search(t.url):
                continue
            s = schemas[t.name]
            arguments = dict(s.examples[0].input) if s.examples else {}
            result = await c.invoke(t.url, arguments, method="GET")
            check(isinstance(result, dict), f"GET {t.url} answered {type(result).__name__}, not an object")
            invoked.append({"tool": t.name, "input": arguments, "keys": sorted(result)})
        check(len(invoked) > 0, "no GET tool without a path template to invoke")

        # 5. The calls asked for.
        for method, url, arguments in calls:
            method = method.upper()
            check((method, url) in pairs, f"--call {method} {url}: not in the manifest")
            result = await c.invoke(url, json.loads(arguments), method=method)
            check(isinstance(result, dict), f"{method} {url} answered {type(result).__name__}, not an object")
            invoked.append({"tool": f"{method} {url}", "input": json.loads(arguments), "keys": sorted(result)})
        summary["invoked"] = invoked
    return summary


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("base_url", help="e.g. http://127.0.0.1:3000")
    parser.add_argument("--token", help="bearer token sent with every request")
    parser.add_argument("--tag", default="payments", help="tag to filter discovery by (default: payments)")
    parser.add_argument("--strict", action="store_true", help="also check examples and that every HALO field is used")
    parser.add_argument(
        "--call",
        nargs=3,
        action="append",
        default=[],
        metavar=("METHOD", "URL", "JSON"),
        help="also invoke this tool with these arguments (repeatable)",
    )
    args = parser.parse_args()
    try:
        summary = asyncio.run(run(args.base_url.rstrip("/"), args.token, args.tag, args.strict, args.call))
    except CheckFailed as failure:
        print(json.dumps({"ok": False, "failure": str(failure)}, indent=2))
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    except Exception as error:  # the client raises aiohttp, pydantic and type errors
        traceback.print_exc()
        print(json.dumps({"ok": False, "error": f"{type(error).__name__}: {error}"}, indent=2))
        print(f"FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    print(json.dumps({"ok": True, **summary}, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
