//! The catalogue: search, read, create, replace, delete and summarise books.

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::http::header::LOCATION;
use axum::response::IntoResponse;
use halo_axum::{Principal, Progress, ToolResult, ValidJson, halo};
use serde_json::json;

use crate::error::{ApiError, ApiPath, ApiQuery, ApiResult, Problem};
use crate::model::{
    Book, BookInput, BookPage, BookSummary, ChapterSummary, LegacySearchQuery, SearchQuery,
    SummarizeRequest, SummaryStyle,
};
use crate::store::{AppState, Stock, Store};

const DEFAULT_LIMIT: u32 = 20;
const MAX_LIMIT: u32 = 100;
const DEFAULT_CHAPTERS: u32 = 5;
/// How long "reading" one chapter takes when summarising.
const CHAPTER_DELAY: Duration = Duration::from_millis(40);

/// Search the catalogue.
///
/// Finds books by words in the title, author or ISBN, by author and by maximum price.
/// Results are paged with `limit` and `offset`; `total` counts every match.
#[halo(
    why = "Use first to find a book and its id by title, author, ISBN or price; the other book, \
           inventory and order tools need the id or ISBN it returns",
    idempotent = true,
    example(
        input = { "q": "dune", "limit": 5 },
        output = { "items": [{ "id": 1, "title": "Dune", "author": "Frank Herbert", "isbn": "9780441172719",
                               "price": 10.99, "currency": "EUR", "published_year": 1965, "pages": 688 }],
                   "total": 1, "limit": 5, "offset": 0 }
    ),
    locale("zh", name = "搜索图书", description = "按书名、作者、ISBN 或价格搜索图书目录。",
           why = "先用它查找图书及其 id，其他图书、库存和订单工具都需要这个 id 或 ISBN"),
)]
#[utoipa::path(
    get,
    path = "/api/books",
    tags = ["books", "read"],
    params(SearchQuery),
    responses(
        (status = 200, description = "One page of matching books", body = BookPage),
        (status = 400, description = "The query string cannot be read", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "A parameter has the wrong type or is out of range", body = Problem, content_type = "application/problem+json"),
    )
)]
pub(crate) async fn search_books(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<SearchQuery>,
) -> ApiResult<Json<BookPage>> {
    let limit = query.limit.unwrap_or(DEFAULT_LIMIT);
    let offset = query.offset.unwrap_or(0);
    let words = query.q.as_deref().map(words).unwrap_or_default();
    let author = query.author.as_deref().map(str::to_lowercase);
    let store = state.read();
    let matches: Vec<&Book> = store
        .books
        .values()
        .filter(|book| {
            let haystack = format!("{} {} {}", book.title, book.author, book.isbn).to_lowercase();
            words.iter().all(|word| haystack.contains(word.as_str()))
        })
        .filter(|book| {
            author
                .as_deref()
                .is_none_or(|author| book.author.to_lowercase().contains(author))
        })
        .filter(|book| query.max_price.is_none_or(|max| book.price <= max))
        .collect();
    let items = matches
        .iter()
        .skip(offset as usize)
        .take(limit as usize)
        .map(|book| (*book).clone())
        .collect();
    Ok(Json(BookPage {
        items,
        total: matches.len(),
        limit,
        offset,
    }))
}

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

/// Search books by title (deprecated).
///
/// The first search operation of this API; it only matches titles. Use `GET /api/books` instead.
#[halo(
    why = "Do not use for new work: it only matches titles; search_books does everything this does",
    status = "deprecated",
    sunset = "2027-06-30",
    replace_with = "/api/books",
    example(input = { "title": "dune" })
)]
#[utoipa::path(
    get,
    path = "/api/books/search",
    tags = ["books", "read"],
    params(LegacySearchQuery),
    responses((status = 200, description = "Books whose title matches", body = BookPage))
)]
#[deprecated(note = "use `GET /api/books` (search_books)")]
pub(crate) async fn legacy_search_books(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<LegacySearchQuery>,
) -> ApiResult<Json<BookPage>> {
    let words = query.title.as_deref().map(words).unwrap_or_default();
    let store = state.read();
    let items: Vec<Book> = store
        .books
        .values()
        .filter(|book| {
            let title = book.title.to_lowercase();
            words.iter().all(|word| title.contains(word.as_str()))
        })
        .take(MAX_LIMIT as usize)
        .cloned()
        .collect();
    let total = items.len();
    Ok(Json(BookPage {
        items,
        total,
        limit: MAX_LIMIT,
        offset: 0,
    }))
}

/// Get one book.
///
/// Returns the book with this id: title, author, ISBN, price and page count.
#[halo(
    why = "Use when you already know the book's id (from search_books or an order) and need its details",
    idempotent = true,
    locale(
        "zh",
        name = "获取图书",
        description = "按 id 返回一本图书的详细信息。"
    )
)]
#[utoipa::path(
    get,
    path = "/api/books/{id}",
    tags = ["books", "read"],
    params(("id" = u64, Path, description = "The book's id", example = 1)),
    responses(
        (status = 200, description = "The book", body = Book),
        (status = 404, description = "No book has this id", body = Problem, content_type = "application/problem+json"),
    )
)]
pub(crate) async fn get_book(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<u64>,
) -> ApiResult<Json<Book>> {
    let store = state.read();
    store
        .books
        .get(&id)
        .cloned()
        .map(Json)
        .ok_or_else(|| no_book(id))
}

fn no_book(id: u64) -> ApiError {
    ApiError::not_found(format!("no book has the id {id}"))
}

/// Add a book to the catalogue.
///
/// Creates the book with no copies in stock and answers `201` with its id and a `Location` header.
#[halo(
    why = "Use to add a title that search_books does not find; never to change an existing book \
           (use update_book)",
    reversible = true,
    undo = "/api/books/{id}",
    example(
        input = { "title": "The Dispossessed", "author": "Ursula K. Le Guin", "isbn": "9780061054884",
                  "price": 9.99, "published_year": 1974, "pages": 387 },
        output = { "id": 9, "title": "The Dispossessed", "author": "Ursula K. Le Guin", "isbn": "9780061054884",
                   "price": 9.99, "currency": "EUR", "published_year": 1974, "pages": 387 }
    ),
)]
#[utoipa::path(
    post,
    path = "/api/books",
    tags = ["books", "write"],
    request_body = BookInput,
    responses(
        (status = 201, description = "The new book", body = Book, headers(("Location" = String, description = "The new book's URL"))),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks `books:write`", body = Problem, content_type = "application/problem+json"),
        (status = 409, description = "A book with this ISBN exists", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The book is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["books:write"]))
)]
pub(crate) async fn create_book(
    State(state): State<AppState>,
    ValidJson(input): ValidJson<BookInput>,
) -> ApiResult<impl IntoResponse> {
    let mut store = state.write();
    ensure_unique_isbn(&store, &input.isbn, None)?;
    let id = store.next_book_id();
    let book = book_from(id, input);
    store
        .stock
        .entry(book.isbn.clone())
        .or_insert(Stock::default());
    store.books.insert(id, book.clone());
    Ok((
        StatusCode::CREATED,
        [(LOCATION, format!("/api/books/{id}"))],
        Json(book),
    ))
}

/// Replace a book's details.
///
/// Overwrites every field of the book with the values sent; the id stays the same.
#[halo(
    why = "Use to correct or reprice an existing book; send every field, including the unchanged ones",
    reversible = true,
    undo = "/api/books/{id}",
    idempotent = true,
    example(
        input = { "id": 1, "title": "Dune", "author": "Frank Herbert", "isbn": "9780441172719",
                  "price": 12.5, "published_year": 1965, "pages": 688 },
        output = { "id": 1, "title": "Dune", "author": "Frank Herbert", "isbn": "9780441172719",
                   "price": 12.5, "currency": "EUR", "published_year": 1965, "pages": 688 }
    ),
)]
#[utoipa::path(
    put,
    path = "/api/books/{id}",
    tags = ["books", "write"],
    params(("id" = u64, Path, description = "The book's id", example = 1)),
    request_body = BookInput,
    responses(
        (status = 200, description = "The book as stored now", body = Book),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks `books:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No book has this id", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The book is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["books:write"]))
)]
pub(crate) async fn update_book(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<u64>,
    ValidJson(input): ValidJson<BookInput>,
) -> ApiResult<Json<Book>> {
    let mut store = state.write();
    let old_isbn = store
        .books
        .get(&id)
        .map(|book| book.isbn.clone())
        .ok_or_else(|| no_book(id))?;
    ensure_unique_isbn(&store, &input.isbn, Some(id))?;
    let book = book_from(id, input);
    if old_isbn != book.isbn {
        let stock = store.stock.remove(&old_isbn).unwrap_or_default();
        store.stock.insert(book.isbn.clone(), stock);
    }
    store.books.insert(id, book.clone());
    Ok(Json(book))
}

/// Remove a book from the catalogue.
///
/// Deletes the book; its stock record is kept. Answers `204` with no body.
#[halo(
    why = "Use only when asked to withdraw a title for good; this cannot be undone",
    reversible = false,
    idempotent = true,
    example(input = { "id": 8 }),
)]
#[utoipa::path(
    delete,
    path = "/api/books/{id}",
    tags = ["books", "write"],
    params(("id" = u64, Path, description = "The book's id", example = 8)),
    responses(
        (status = 204, description = "The book was deleted"),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The token lacks `books:write`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No book has this id", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["books:write"]))
)]
pub(crate) async fn delete_book(
    caller: Principal,
    State(state): State<AppState>,
    ApiPath(id): ApiPath<u64>,
) -> ApiResult<StatusCode> {
    let mut store = state.write();
    let book = store.books.remove(&id).ok_or_else(|| no_book(id))?;
    // Deleting cannot be undone: keep a trace of who did it.
    tracing::info!(book = id, isbn = %book.isbn, by = caller.id(), "book deleted");
    Ok(StatusCode::NO_CONTENT)
}

/// Summarise a book chapter by chapter.
///
/// Reads the first chapters of the book (a little time per chapter) and returns one summary per
/// chapter plus an overall summary. This is a long-running operation: called with
/// `Accept: text/event-stream`, it reports each chapter as a `tool_progress` event before the
/// `tool_end` that carries the summary.
#[halo(
    why = "Use when the user wants to know what a book is about before buying it; it is slow, so \
           ask for few chapters",
    stream = true,
    timeout_ms = 5000,
    retry = false,
    example(
        input = { "id": 1, "chapters": 2, "style": "brief" },
        output = { "book_id": 1, "title": "Dune", "style": "brief",
                   "chapters": [{ "chapter": 1, "summary": "Chapter 1 of Dune by Frank Herbert: the scene is set." },
                                { "chapter": 2, "summary": "Chapter 2 of Dune by Frank Herbert: the stakes are raised." }],
                   "summary": "Dune by Frank Herbert, in 2 chapters: the scene is set, then the stakes are raised." }
    ),
)]
#[utoipa::path(
    post,
    path = "/api/books/{id}/summarize",
    tags = ["books", "read", "expensive"],
    params(("id" = u64, Path, description = "The book's id", example = 1)),
    request_body = SummarizeRequest,
    responses(
        (status = 200, description = "The summary", body = BookSummary),
        (status = 401, description = "No valid bearer token", body = Problem, content_type = "application/problem+json"),
        (status = 403, description = "The credentials lack `books:read`", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "No book has this id", body = Problem, content_type = "application/problem+json"),
        (status = 422, description = "The request is invalid", body = Problem, content_type = "application/problem+json"),
    ),
    security(("bearer" = ["books:read"]))
)]
pub(crate) async fn summarize_book(
    State(state): State<AppState>,
    ApiPath(id): ApiPath<u64>,
    progress: Progress,
    ValidJson(request): ValidJson<SummarizeRequest>,
) -> ApiResult<ToolResult<BookSummary>> {
    let started = Instant::now();
    let chapters = request.chapters.unwrap_or(DEFAULT_CHAPTERS);
    let book = state
        .read()
        .books
        .get(&id)
        .cloned()
        .ok_or_else(|| no_book(id))?;
    let mut summaries = Vec::new();
    for chapter in 1..=chapters {
        progress.step(
            chapter.into(),
            Some(chapters.into()),
            format!("summarising chapter {chapter}"),
        );
        tokio::time::sleep(CHAPTER_DELAY).await;
        tracing::debug!(book = id, chapter, "read chapter");
        summaries.push(ChapterSummary {
            chapter,
            summary: chapter_summary(&book, chapter, request.style),
        });
    }
    let summary = format!(
        "{} by {}, in {chapters} chapter{}: {}.",
        book.title,
        book.author,
        if chapters == 1 { "" } else { "s" },
        ARC[..chapters.min(ARC.len() as u32) as usize].join(", then ")
    );
    let content = BookSummary {
        book_id: id,
        title: book.title,
        style: request.style,
        chapters: summaries,
        summary,
    };
    let elapsed_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(ToolResult::new(content)
        .with_meta(json!({"chapters_read": chapters, "elapsed_ms": elapsed_ms})))
}

/// What happens, chapter after chapter, in every book of this demo.
const ARC: &[&str] = &[
    "the scene is set",
    "the stakes are raised",
    "an ally is found",
    "a plan fails",
    "a secret comes out",
    "everything is risked",
    "the dust settles",
];

fn chapter_summary(book: &Book, chapter: u32, style: SummaryStyle) -> String {
    let beat = ARC[(chapter as usize - 1) % ARC.len()];
    match style {
        SummaryStyle::Brief => format!(
            "Chapter {chapter} of {} by {}: {beat}.",
            book.title, book.author
        ),
        SummaryStyle::Detailed => format!(
            "Chapter {chapter} of {} by {}: {beat}. The chapter spends about {} pages on it, \
             moving the main characters closer to the ending.",
            book.title,
            book.author,
            (book.pages / 20).max(1)
        ),
    }
}

fn ensure_unique_isbn(store: &Store, isbn: &str, except: Option<u64>) -> ApiResult<()> {
    match store
        .books
        .values()
        .find(|book| book.isbn == isbn && Some(book.id) != except)
    {
        Some(existing) => Err(ApiError::conflict(format!(
            "the book {} already has the ISBN {isbn}",
            existing.id
        ))),
        None => Ok(()),
    }
}

fn book_from(id: u64, input: BookInput) -> Book {
    Book {
        id,
        title: input.title.trim().to_owned(),
        author: input.author.trim().to_owned(),
        isbn: input.isbn,
        price: input.price,
        currency: "EUR".to_owned(),
        published_year: input.published_year,
        pages: input.pages,
    }
}
