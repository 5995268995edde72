"""A small MCP server written with FastMCP (the official Python SDK's `mcp.server.fastmcp`),
run over stdio by the gateway's tests: its tools' schemas come from the functions' type
hints, as any FastMCP server's do."""

from mcp.server.fastmcp import FastMCP

server = FastMCP("notes")
notes: dict[str, str] = {}


@server.tool()
def add_note(title: str, text: str) -> str:
    """Keep a note under a title, replacing any note of that title."""
    notes[title] = text
    return f"kept {title!r}"


@server.tool()
def read_note(title: str) -> str:
    """Read the note kept under a title."""
    if title not in notes:
        raise ValueError(f"no note is titled {title!r}")
    return notes[title]


if __name__ == "__main__":
    server.run("stdio")
