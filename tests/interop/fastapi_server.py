"""A small FastAPI app made HALO-compliant by the reference implementation (halo-fastapi 0.3.0).

halo-rs's client and CLI are tested against it: multi-method paths, a path parameter, a
bearer-protected route. Serves on 127.0.0.1 on a free port and prints `PORT <n>` first.
Token: `interop-token`.
"""

from __future__ import annotations

import socket
import sys

import uvicorn
from fastapi import Depends, FastAPI, HTTPException
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from halo_fastapi import HaloRegister
from pydantic import BaseModel, ConfigDict

TOKEN = "interop-token"

app = FastAPI(title="Notes", version="0.3.0", description="Notes, for halo-rs interop tests")
bearer = HTTPBearer(auto_error=False)
NOTES: dict[int, dict] = {1: {"id": 1, "title": "first", "body": "hello"}}


def authorised(credentials: HTTPAuthorizationCredentials | None = Depends(bearer)) -> None:
    if credentials is None or credentials.credentials != TOKEN:
        raise HTTPException(status_code=401, detail="a valid bearer token is required")


class NoteQuery(BaseModel):
    """Search parameters."""

    model_config = ConfigDict(json_schema_extra={"llm": {"tags": ["notes", "read"], "why": "Find notes"}})
    q: str | None = None


class NoteIn(BaseModel):
    """A new note."""

    model_config = ConfigDict(
        json_schema_extra={
            "llm": {
                "tags": ["notes", "write"],
                "why": "Store a note for later",
                "limits": {"idempotent": False},
                "examples": [{"input": {"title": "t", "body": "b"}, "output": {"id": 2}}],
            }
        }
    )
    title: str
    body: str = ""


class NoteId(BaseModel):
    """Which note."""

    model_config = ConfigDict(json_schema_extra={"llm": {"tags": ["notes", "read"]}})
    note_id: int


@app.get("/notes")
async def list_notes(params: NoteQuery = Depends()) -> dict:
    """List notes, optionally filtered by text."""
    items = [n for n in NOTES.values() if not params.q or params.q in n["title"]]
    return {"items": items, "total": len(items)}


@app.post("/notes")
async def create_note(body: NoteIn, _: None = Depends(authorised)) -> dict:
    """Create a note."""
    note_id = max(NOTES) + 1
    NOTES[note_id] = {"id": note_id, "title": body.title, "body": body.body}
    return NOTES[note_id]


@app.get("/notes/{note_id}")
async def get_note(note_id: int) -> dict:
    """Read one note."""
    if note_id not in NOTES:
        raise HTTPException(status_code=404, detail=f"no note {note_id}")
    return NOTES[note_id]


@app.delete("/notes/{note_id}")
async def delete_note(note_id: int, _: None = Depends(authorised)) -> dict:
    """Delete one note."""
    if NOTES.pop(note_id, None) is None:
        raise HTTPException(status_code=404, detail=f"no note {note_id}")
    return {"deleted": note_id}


HaloRegister(app)


def main() -> None:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    sys.exit(main())
