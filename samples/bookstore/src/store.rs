//! The in-memory data behind the API, seeded with a few well-known books.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::model::{Book, Charge, Order, Reservation};
use crate::routes::weather::WeatherUpstream;

/// Shared application state: the store behind a lock, cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct AppState {
    store: Arc<RwLock<Store>>,
    /// Where the weather comes from when not from the built-in table.
    weather: Option<WeatherUpstream>,
}

impl AppState {
    /// State holding an empty store.
    #[must_use]
    pub fn empty() -> Self {
        Self::default()
    }

    /// State holding the seeded catalogue and stock.
    #[must_use]
    pub fn seeded() -> Self {
        Self {
            store: Arc::new(RwLock::new(Store::seeded())),
            weather: None,
        }
    }

    /// The same state, with the weather fetched from `upstream`.
    pub(crate) fn with_weather(mut self, upstream: Option<WeatherUpstream>) -> Self {
        self.weather = upstream;
        self
    }

    /// The weather service, when the weather does not come from the built-in table.
    pub(crate) fn weather(&self) -> Option<&WeatherUpstream> {
        self.weather.as_ref()
    }

    /// Reads the store. A lock poisoned by a panicking writer is still read: the data stays
    /// consistent because every write is a single map operation.
    pub(crate) fn read(&self) -> RwLockReadGuard<'_, Store> {
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes the store.
    pub(crate) fn write(&self) -> RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Stock of one SKU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Stock {
    pub(crate) on_hand: u32,
    pub(crate) reserved: u32,
}

/// Everything the bookstore knows.
#[derive(Debug, Default)]
pub(crate) struct Store {
    pub(crate) books: BTreeMap<u64, Book>,
    pub(crate) stock: BTreeMap<String, Stock>,
    pub(crate) reservations: BTreeMap<String, Reservation>,
    pub(crate) orders: BTreeMap<u64, Order>,
    pub(crate) charges: BTreeMap<String, Charge>,
    next_book: u64,
    next_reservation: u64,
    next_order: u64,
    next_charge: u64,
    next_refund: u64,
}

/// `(title, author, isbn, price, year, pages, copies on hand)`
const SEED: &[(&str, &str, &str, f64, i32, u32, u32)] = &[
    (
        "Dune",
        "Frank Herbert",
        "9780441172719",
        10.99,
        1965,
        688,
        12,
    ),
    (
        "The Left Hand of Darkness",
        "Ursula K. Le Guin",
        "9780441478125",
        9.99,
        1969,
        304,
        5,
    ),
    (
        "Neuromancer",
        "William Gibson",
        "9780441569595",
        9.49,
        1984,
        271,
        3,
    ),
    (
        "The Name of the Rose",
        "Umberto Eco",
        "9780156001311",
        14.50,
        1980,
        536,
        4,
    ),
    (
        "Pride and Prejudice",
        "Jane Austen",
        "9780141439518",
        7.99,
        1813,
        480,
        20,
    ),
    (
        "The Pragmatic Programmer",
        "David Thomas, Andrew Hunt",
        "9780135957059",
        44.99,
        1999,
        352,
        7,
    ),
    (
        "Programming Rust",
        "Jim Blandy, Jason Orendorff, Leonora F. S. Tindall",
        "9781492052593",
        49.99,
        2017,
        738,
        2,
    ),
    (
        "A Wizard of Earthsea",
        "Ursula K. Le Guin",
        "9780547773742",
        8.99,
        1968,
        264,
        0,
    ),
];

impl Store {
    fn seeded() -> Self {
        let mut store = Self {
            next_order: 1000,
            ..Self::default()
        };
        for &(title, author, isbn, price, published_year, pages, on_hand) in SEED {
            let id = store.next_book_id();
            let book = Book {
                id,
                title: title.to_owned(),
                author: author.to_owned(),
                isbn: isbn.to_owned(),
                price,
                currency: "EUR".to_owned(),
                published_year,
                pages,
            };
            store.books.insert(id, book);
            store.stock.insert(
                isbn.to_owned(),
                Stock {
                    on_hand,
                    reserved: 0,
                },
            );
        }
        store
    }

    pub(crate) fn next_book_id(&mut self) -> u64 {
        self.next_book += 1;
        self.next_book
    }

    pub(crate) fn next_reservation_id(&mut self) -> String {
        self.next_reservation += 1;
        format!("rsv_{}", self.next_reservation)
    }

    pub(crate) fn next_order_id(&mut self) -> u64 {
        self.next_order = self.next_order.max(1000) + 1;
        self.next_order
    }

    pub(crate) fn next_charge_id(&mut self) -> String {
        self.next_charge += 1;
        format!("ch_{}", self.next_charge)
    }

    pub(crate) fn next_refund_id(&mut self) -> String {
        self.next_refund += 1;
        format!("re_{}", self.next_refund)
    }
}
