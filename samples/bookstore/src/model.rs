//! Request and response types of the API, each with its JSON Schema (`ToSchema`, `IntoParams`).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

// ---- books ----

/// A book in the catalogue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[schema(example = json!({
    "id": 1, "title": "Dune", "author": "Frank Herbert", "isbn": "9780441172719",
    "price": 10.99, "currency": "EUR", "published_year": 1965, "pages": 688
}))]
pub struct Book {
    /// The book's id in this store.
    pub id: u64,
    /// Title.
    pub title: String,
    /// Author, or authors separated by commas.
    pub author: String,
    /// ISBN-13 (also the inventory SKU).
    pub isbn: String,
    /// Price in `currency`.
    pub price: f64,
    /// ISO 4217 currency code.
    pub currency: String,
    /// Year of first publication.
    pub published_year: i32,
    /// Number of pages.
    pub pages: u32,
}

/// What a client sends to create or replace a book.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BookInput {
    /// Title, 1 to 200 characters, not blank.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "\\S",
        example = "The Dispossessed"
    )]
    pub title: String,
    /// Author, or authors separated by commas; 1 to 200 characters, not blank.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "\\S",
        example = "Ursula K. Le Guin"
    )]
    pub author: String,
    /// ISBN-13: 13 digits, no hyphens.
    #[schema(pattern = "^[0-9]{13}$", example = "9780061054884")]
    pub isbn: String,
    /// Price in euros, from 0 to 1000.
    #[schema(minimum = 0, maximum = 1000, example = 9.99)]
    pub price: f64,
    /// Year of first publication.
    #[schema(minimum = 1450, maximum = 2100, example = 1974)]
    pub published_year: i32,
    /// Number of pages.
    #[schema(minimum = 1, example = 387)]
    pub pages: u32,
}

/// Search parameters for the catalogue.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Words to find in the title, author or ISBN (case-insensitive).
    #[param(example = "dune")]
    pub q: Option<String>,
    /// Only books whose author contains this text (case-insensitive).
    #[param(example = "Le Guin")]
    pub author: Option<String>,
    /// Only books that cost at most this much (euros).
    #[param(minimum = 0, example = 15.0)]
    pub max_price: Option<f64>,
    /// How many books to return, 1 to 100 (default 20).
    #[param(minimum = 1, maximum = 100, example = 10)]
    pub limit: Option<u32>,
    /// How many matching books to skip, for paging (default 0).
    #[param(minimum = 0, example = 0)]
    pub offset: Option<u32>,
}

/// Parameters of the deprecated title search.
#[derive(Debug, Clone, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct LegacySearchQuery {
    /// Text to find in the title (case-insensitive).
    #[param(example = "dune")]
    pub title: Option<String>,
}

/// One page of search results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct BookPage {
    /// The books on this page.
    pub items: Vec<Book>,
    /// How many books match in total, across all pages.
    pub total: usize,
    /// The `limit` that was applied.
    pub limit: u32,
    /// The `offset` that was applied.
    pub offset: u32,
}

/// How detailed a summary should be.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SummaryStyle {
    /// One sentence per chapter.
    #[default]
    Brief,
    /// A paragraph per chapter.
    Detailed,
}

/// What to summarise.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SummarizeRequest {
    /// How many chapters to read, 1 to 20 (default 5).
    #[schema(minimum = 1, maximum = 20, example = 3)]
    pub chapters: Option<u32>,
    /// How detailed the summary should be (default `brief`).
    #[serde(default)]
    pub style: SummaryStyle,
}

/// The summary of one chapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ChapterSummary {
    /// Chapter number, from 1.
    pub chapter: u32,
    /// What happens in it.
    pub summary: String,
}

/// A book summary, chapter by chapter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BookSummary {
    /// The summarised book.
    pub book_id: u64,
    /// Its title.
    pub title: String,
    /// The style used.
    pub style: SummaryStyle,
    /// One entry per chapter read.
    pub chapters: Vec<ChapterSummary>,
    /// The whole summary in one paragraph.
    pub summary: String,
}

// ---- inventory ----

/// Stock of one SKU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StockLevel {
    /// The SKU (the book's ISBN-13).
    pub sku: String,
    /// Copies in the warehouse.
    pub on_hand: u32,
    /// Copies held by open reservations.
    pub reserved: u32,
    /// Copies that can still be reserved (`on_hand - reserved`).
    pub available: u32,
    /// The warehouse that holds them.
    pub warehouse: String,
}

/// A request to hold copies of a SKU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReserveRequest {
    /// How many copies to hold, 1 to 50.
    #[schema(minimum = 1, maximum = 50, example = 2)]
    pub quantity: u32,
}

/// A request to release a reservation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ReleaseRequest {
    /// The reservation to release, as returned by the reserve operation.
    #[schema(example = "rsv_1")]
    pub reservation_id: String,
}

/// The state of a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReservationStatus {
    /// The copies are held.
    Held,
    /// The hold was released.
    Released,
}

/// Copies of a SKU held for a customer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Reservation {
    /// The reservation's id.
    pub reservation_id: String,
    /// The reserved SKU.
    pub sku: String,
    /// How many copies are held.
    pub quantity: u32,
    /// Whether the copies are still held.
    pub status: ReservationStatus,
}

// ---- orders ----

/// One line of an order request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderLine {
    /// The book to buy.
    #[schema(example = 1)]
    pub book_id: u64,
    /// How many copies, 1 to 20.
    #[schema(minimum = 1, maximum = 20, example = 1)]
    pub quantity: u32,
}

/// A request to place an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewOrder {
    /// Where the confirmation goes.
    #[schema(example = "ada@example.com")]
    pub customer_email: String,
    /// What to buy: 1 to 50 lines.
    #[schema(min_items = 1, max_items = 50)]
    pub items: Vec<OrderLine>,
}

/// The state of an order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum OrderStatus {
    /// Placed; waiting for a charge.
    PendingPayment,
    /// Charged.
    Paid,
    /// The charge was refunded.
    Refunded,
}

/// One priced line of an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OrderItem {
    /// The book bought.
    pub book_id: u64,
    /// Its title when the order was placed.
    pub title: String,
    /// How many copies.
    pub quantity: u32,
    /// Price of one copy when the order was placed.
    pub unit_price: f64,
}

/// An order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Order {
    /// The order's id.
    pub id: u64,
    /// Where it stands.
    pub status: OrderStatus,
    /// Where the confirmation goes.
    pub customer_email: String,
    /// What was bought.
    pub items: Vec<OrderItem>,
    /// The amount to charge.
    pub total: f64,
    /// ISO 4217 currency code.
    pub currency: String,
}

// ---- payments ----

/// A request to charge an order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChargeRequest {
    /// The order to pay; it must be `pending_payment`.
    #[schema(example = 1001)]
    pub order_id: u64,
    /// The amount, equal to the order's `total`.
    #[schema(exclusive_minimum = 0, example = 21.98)]
    pub amount: f64,
    /// ISO 4217 currency code; only `EUR` is accepted.
    #[schema(pattern = "^EUR$", example = "EUR")]
    pub currency: String,
    /// A saved payment method, e.g. `pm_card_visa`.
    #[schema(pattern = "\\S", example = "pm_card_visa")]
    pub payment_method: String,
}

/// The state of a charge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ChargeStatus {
    /// The money was taken.
    Succeeded,
    /// The money was given back.
    Refunded,
}

/// A charge of a customer's payment method.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Charge {
    /// The charge's id, e.g. `ch_1`.
    pub id: String,
    /// The order it pays.
    pub order_id: u64,
    /// The amount taken.
    pub amount: f64,
    /// ISO 4217 currency code.
    pub currency: String,
    /// Where it stands.
    pub status: ChargeStatus,
}

/// A request to refund a charge.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RefundRequest {
    /// Why the money goes back (kept for the audit trail), 1 to 500 characters, not blank.
    #[schema(
        min_length = 1,
        max_length = 500,
        pattern = "\\S",
        example = "customer returned the book"
    )]
    pub reason: String,
}

/// A refund of a charge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Refund {
    /// The refund's id, e.g. `re_1`.
    pub id: String,
    /// The refunded charge.
    pub charge_id: String,
    /// The amount given back.
    pub amount: f64,
    /// Why.
    pub reason: String,
}

// ---- weather ----

/// Which city's weather to report.
#[derive(Debug, Clone, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct WeatherQuery {
    /// City name in English, e.g. `Lisbon` (case-insensitive).
    #[param(example = "Lisbon")]
    pub city: String,
}

/// Current weather in a city (the sample serves fixed demo values).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Weather {
    /// The city.
    pub city: String,
    /// ISO 3166-1 alpha-2 country code.
    pub country: String,
    /// Air temperature in degrees Celsius.
    pub temperature_c: f64,
    /// Relative humidity in percent.
    pub humidity_pct: u8,
    /// A short description, e.g. `light rain`.
    pub conditions: String,
}
