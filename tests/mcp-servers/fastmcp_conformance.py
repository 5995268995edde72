"""An MCP server written with FastMCP whose tools are the ones the official MCP conformance
suite (`@modelcontextprotocol/conformance`) calls in its `tools-call-*` scenarios: the
gateway's tests put it behind the gateway and run the suite against the gateway's `/mcp`, so
that what the suite checks (content of every kind, errors, progress, schemas) is checked
through the gateway."""

import asyncio
import base64

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    TextContent,
    TextResourceContents,
)
from pydantic import BaseModel

server = FastMCP("conformance-fixture")

# A 1x1 PNG and a few bytes of a WAV header: what matters is that they arrive as they left.
PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
).decode()
WAV = base64.b64encode(b"RIFF$\x00\x00\x00WAVEfmt ").decode()


def resource() -> EmbeddedResource:
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mimeType="text/plain",
            text="This is an embedded resource content.",
        ),
    )


@server.tool()
def test_simple_text() -> str:
    """Answer with one text block."""
    return "This is a simple text response for testing."


@server.tool()
def test_image_content() -> list:
    """Answer with an image."""
    return [ImageContent(type="image", data=PNG, mimeType="image/png")]


@server.tool()
def test_audio_content() -> list:
    """Answer with audio."""
    return [AudioContent(type="audio", data=WAV, mimeType="audio/wav")]


@server.tool()
def test_embedded_resource() -> list:
    """Answer with an embedded resource."""
    return [resource()]


@server.tool()
def test_multiple_content_types() -> list:
    """Answer with text, an image and a resource."""
    return [
        TextContent(type="text", text="Multiple content types test:"),
        ImageContent(type="image", data=PNG, mimeType="image/png"),
        resource(),
    ]


@server.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Send log messages while running."""
    for message in ["Tool execution started", "Tool processing data", "Tool execution completed"]:
        await ctx.info(message)
        await asyncio.sleep(0.05)
    return "Tool with logging executed successfully"


@server.tool()
def test_error_handling() -> str:
    """Fail, as a tool result marked as an error."""
    raise ValueError("This tool intentionally returns an error for testing")


@server.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Report progress three times."""
    for step in (0, 50, 100):
        await ctx.report_progress(step, 100)
        await asyncio.sleep(0.05)
    return "Progress test completed"


class Address(BaseModel):
    street: str | None = None
    city: str | None = None


@server.tool()
def json_schema_2020_12_tool(name: str | None = None, address: Address | None = None) -> str:
    """Tool with JSON Schema 2020-12 features."""
    return f"name={name} address={address}"


if __name__ == "__main__":
    server.run("stdio")
