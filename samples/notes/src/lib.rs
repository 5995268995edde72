//! A sample HALO API whose OpenAPI document comes from [aide] (schemars) instead of utoipa.
//!
//! halo-axum reads any OpenAPI 3.x document: here aide derives the operations, their
//! parameters and their JSON schemas from the handlers' extractors, and
//! [`HaloBuilder::from_openapi_json`] adds what OpenAPI cannot say (why to use a tool,
//! whether it can be undone, its rate and idempotency) with [`Describe`], keyed by
//! `operationId`. The layer then answers discovery, validates calls against the schemas aide
//! wrote, and enforces the declared limits, as it does for the utoipa bookstore.
//!
//! | tool | call | HALO metadata |
//! |---|---|---|
//! | `list_notes` | `GET /notes?tag=..&limit=..` | `why` |
//! | `get_note` | `GET /notes/{id}` | `why` |
//! | `create_note` | `POST /notes` | reversible, `undo`, idempotent with `Idempotency-Key`, `30/minute`, an example |
//! | `delete_note` | `DELETE /notes/{id}` | irreversible |
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3001").await?;
//! axum::serve(listener, notes::app()).await
//! # }
//! ```

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::{Arc, RwLock};

use aide::axum::routing::{get, get_with};
use aide::axum::{ApiRouter, IntoApiResponse};
use aide::openapi::{Info, OpenApi};
use aide::transform::TransformOperation;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use halo_axum::protocol::{Period, Rate};
use halo_axum::{Describe, HaloBuilder, Validation};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

/// A note.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Note {
    /// The note's id.
    pub id: u64,
    /// What the note says.
    pub text: String,
    /// Labels to find the note by.
    pub tags: Vec<String>,
}

/// A note to write.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NewNote {
    /// What the note says.
    #[schemars(length(min = 1, max = 500))]
    pub text: String,
    /// Labels to find the note by (at most 10).
    #[serde(default)]
    #[schemars(length(max = 10))]
    pub tags: Vec<String>,
}

/// Which notes to list.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Listing {
    /// Only notes with this label.
    pub tag: Option<String>,
    /// At most this many notes (20 by default).
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// A note's id in its path.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
pub struct NoteId {
    /// The note's id.
    pub id: u64,
}

/// The notes, in memory.
#[derive(Debug, Clone, Default)]
pub struct Notes(Arc<RwLock<Book>>);

#[derive(Debug, Default)]
struct Book {
    notes: BTreeMap<u64, Note>,
    next: u64,
}

impl Notes {
    /// A few notes to start with.
    #[must_use]
    pub fn seeded() -> Self {
        let notes = Self::default();
        for (text, tags) in [
            ("Buy oat milk", &["shopping"][..]),
            (
                "Call the plumber about the kitchen tap",
                &["home", "calls"][..],
            ),
            ("Read chapter 3 of Dune", &["reading"][..]),
        ] {
            notes.add(NewNote {
                text: text.to_owned(),
                tags: tags.iter().map(|t| (*t).to_owned()).collect(),
            });
        }
        notes
    }

    fn add(&self, new: NewNote) -> Note {
        let mut book = self
            .0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        book.next += 1;
        let note = Note {
            id: book.next,
            text: new.text,
            tags: new.tags,
        };
        book.notes.insert(note.id, note.clone());
        note
    }

    fn read<T>(&self, f: impl FnOnce(&Book) -> T) -> T {
        f(&self
            .0
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    }

    fn remove(&self, id: u64) -> Option<Note> {
        self.0
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .notes
            .remove(&id)
    }
}

/// No note has the id asked for: `404` as problem details.
#[derive(Debug, Clone, Copy)]
pub struct NotFound(u64);

impl IntoResponse for NotFound {
    fn into_response(self) -> Response {
        let problem = json!({
            "type": "about:blank",
            "title": "Not Found",
            "status": 404,
            "detail": format!("no note has the id {}", self.0),
        });
        (
            StatusCode::NOT_FOUND,
            [("content-type", "application/problem+json")],
            problem.to_string(),
        )
            .into_response()
    }
}

impl aide::OperationOutput for NotFound {
    type Inner = ();
}

async fn list_notes(State(notes): State<Notes>, Query(listing): Query<Listing>) -> Json<Vec<Note>> {
    let limit = listing.limit.unwrap_or(20) as usize;
    Json(notes.read(|book| {
        book.notes
            .values()
            .filter(|note| {
                listing
                    .tag
                    .as_ref()
                    .is_none_or(|tag| note.tags.contains(tag))
            })
            .take(limit)
            .cloned()
            .collect()
    }))
}

async fn get_note(
    State(notes): State<Notes>,
    Path(NoteId { id }): Path<NoteId>,
) -> Result<Json<Note>, NotFound> {
    notes
        .read(|book| book.notes.get(&id).cloned())
        .map(Json)
        .ok_or(NotFound(id))
}

async fn create_note(State(notes): State<Notes>, Json(new): Json<NewNote>) -> impl IntoApiResponse {
    (StatusCode::CREATED, Json(notes.add(new)))
}

async fn delete_note(
    State(notes): State<Notes>,
    Path(NoteId { id }): Path<NoteId>,
) -> Result<StatusCode, NotFound> {
    notes
        .remove(id)
        .map(|_| StatusCode::NO_CONTENT)
        .ok_or(NotFound(id))
}

async fn health() -> &'static str {
    "ok"
}

/// An operation's id, summary and tags, as aide writes them into the document.
fn operation<'t>(
    op: TransformOperation<'t>,
    id: &str,
    summary: &str,
    tags: &[&str],
) -> TransformOperation<'t> {
    tags.iter()
        .fold(op.id(id).summary(summary), |op, tag| op.tag(tag))
}

/// The routes (documented by aide, but for `/health`) and the OpenAPI document aide derives
/// from them.
pub fn routes(notes: Notes) -> (Router, OpenApi) {
    let mut api = OpenApi {
        info: Info {
            title: "Notes".to_owned(),
            version: "1.0.0".to_owned(),
            description: Some("A small notebook: list, read, write and delete notes.".to_owned()),
            ..Info::default()
        },
        ..OpenApi::default()
    };
    let router = ApiRouter::new()
        .api_route(
            "/notes",
            get_with(list_notes, |op| {
                operation(
                    op,
                    "list_notes",
                    "List notes, newest last.",
                    &["notes", "read"],
                )
                .response::<200, Json<Vec<Note>>>()
            })
            .post_with(create_note, |op| {
                operation(op, "create_note", "Write a note.", &["notes", "write"])
                    .response::<201, Json<Note>>()
            }),
        )
        .api_route(
            "/notes/{id}",
            get_with(get_note, |op| {
                operation(op, "get_note", "Read one note.", &["notes", "read"])
                    .response::<200, Json<Note>>()
            })
            .delete_with(delete_note, |op| {
                operation(op, "delete_note", "Delete a note.", &["notes", "write"])
                    .response::<204, ()>()
            }),
        )
        .route("/health", get(health))
        .with_state(notes)
        .finish_api(&mut api);
    (router, api)
}

/// The HALO layer's builder over aide's document, with what OpenAPI cannot say about the
/// operations, keyed by `operationId`.
///
/// # Panics
/// Never: an OpenAPI document always serialises to JSON.
pub fn halo(api: &OpenApi) -> HaloBuilder {
    let document = serde_json::to_value(api).expect("an OpenAPI document serialises to JSON");
    HaloBuilder::from_openapi_json(document)
        // Calls are checked against aide's schemas before a handler runs (without an
        // authenticator, validation is off unless asked for).
        .validate(Validation::On)
        .describe(
            "list_notes",
            Describe::new().why("Use to find notes by label before reading or changing one"),
        )
        .describe(
            "get_note",
            Describe::new().why("Use when the note's id is known and its full text is needed"),
        )
        .describe(
            "create_note",
            Describe::new()
                .why("Use to remember something for the user; tag it so it can be found")
                .reversible(true)
                .undo("DELETE /notes/{id}")
                .idempotent(true)
                .rate(Rate::new(
                    NonZeroU32::new(30).expect("not zero"),
                    Period::Minute,
                ))
                .example(
                    json!({"text": "Renew the passport", "tags": ["errands"]}),
                    Some(json!({"id": 4, "text": "Renew the passport", "tags": ["errands"]})),
                ),
        )
        .describe(
            "delete_note",
            Describe::new()
                .why("Use only when the user asks to forget a note; it cannot be restored")
                .reversible(false)
                .example(json!({"id": 2}), None),
        )
}

/// The notes API with its HALO layer, over the seeded notes.
///
/// # Panics
/// Never: the document aide derives from [`routes`] is one halo-axum describes (the tests
/// build it).
pub fn app() -> Router {
    app_with(Notes::seeded())
}

/// The notes API with its HALO layer, over `notes`.
///
/// # Panics
/// Never, as [`app`].
pub fn app_with(notes: Notes) -> Router {
    let (router, api) = routes(notes);
    let layer = halo(&api)
        .build()
        .unwrap_or_else(|error| panic!("notes: invalid HALO metadata: {error}"));
    router.layer(layer)
}
