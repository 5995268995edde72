//! The notes API that the MCP and hosted-agent tests serve, in the parts they share: its
//! types, the handler that writes a note, and its callers (a reader and a writer). Each test
//! keeps its own readers of notes, which answer differently.

use axum::Json;
use axum::http::StatusCode;
use halo_axum::{Principal, StaticAuthenticator, halo};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Note {
    pub id: u64,
    pub text: String,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct NewNote {
    /// What the note says.
    #[schema(min_length = 1, max_length = 100)]
    pub text: String,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Search {
    /// Words to look for.
    pub q: Option<String>,
}

/// Write a note.
#[halo(reversible = false)]
#[utoipa::path(post, path = "/notes", tags = ["notes", "write"], request_body = NewNote,
    responses((status = 201, body = Note)),
    security(("bearer" = ["notes:write"])))]
pub async fn create_note(Json(note): Json<NewNote>) -> (StatusCode, Json<Note>) {
    (
        StatusCode::CREATED,
        Json(Note {
            id: 2,
            text: note.text,
        }),
    )
}

/// The notes' callers by their bearer tokens: a reader (`notes:read`) with `reader_token`,
/// a writer (`notes:read` and `notes:write`) with `writer_token`.
pub fn readers_and_writers(reader_token: &str, writer_token: &str) -> StaticAuthenticator {
    StaticAuthenticator::new()
        .bearer(
            reader_token,
            Principal::new("reader").with_scopes(["notes:read"]),
        )
        .bearer(
            writer_token,
            Principal::new("writer").with_scopes(["notes:read", "notes:write"]),
        )
}
