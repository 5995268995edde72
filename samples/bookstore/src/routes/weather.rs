//! Weather at the bookstore's pick-up points: fixed demo values, or (with
//! `--weather-upstream URL`) a weather service's, behind the tool's circuit breaker.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use halo_axum::halo;
use reqwest::Url;

use crate::AppState;
use crate::error::{ApiError, ApiQuery, ApiResult, Problem};
use crate::model::{Weather, WeatherQuery};

/// `(city, country, temperature °C, humidity %, conditions)`
const CITIES: &[(&str, &str, f64, u8, &str)] = &[
    ("Lisbon", "PT", 21.5, 64, "sunny"),
    ("London", "GB", 13.0, 81, "light rain"),
    ("Paris", "FR", 16.5, 70, "cloudy"),
    ("Berlin", "DE", 12.0, 75, "overcast"),
    ("Madrid", "ES", 24.0, 38, "clear"),
    ("Tokyo", "JP", 19.0, 68, "partly cloudy"),
    ("New York", "US", 17.5, 59, "windy"),
    ("Shanghai", "CN", 22.0, 77, "humid haze"),
];

/// Get the current weather in a city.
///
/// Reports temperature, humidity and conditions at one of the bookstore's pick-up cities:
/// Lisbon, London, Paris, Berlin, Madrid, Tokyo, New York or Shanghai.
#[halo(
    why = "Use when the customer asks whether the weather suits collecting an order in person; it \
           knows only the pick-up cities",
    idempotent = true,
    retry = true,
    backoff = "exponential",
    timeout_ms = 2000,
    // With a weather service upstream: 5 failures in a row (`502`, or no answer within the
    // deadline) and the tool answers `503` for 10 s without calling it.
    circuit = "5/10s/1",
    fallback = "https://api.open-meteo.com/v1/forecast",
    trace_header = "traceparent",
    explain = false,
    example(
        input = { "city": "Lisbon" },
        output = { "city": "Lisbon", "country": "PT", "temperature_c": 21.5, "humidity_pct": 64, "conditions": "sunny" }
    ),
    locale("zh", name = "查询天气", description = "查询取书城市的当前天气。"),
)]
#[utoipa::path(
    get,
    path = "/api/weather",
    tags = ["weather", "read"],
    params(WeatherQuery),
    responses(
        (status = 200, description = "The current weather", body = Weather),
        (status = 422, description = "`city` is missing", body = Problem, content_type = "application/problem+json"),
        (status = 404, description = "Not a pick-up city", body = Problem, content_type = "application/problem+json"),
        (status = 502, description = "The weather service failed", body = Problem, content_type = "application/problem+json"),
        (status = 503, description = "The weather service kept failing: not called for a while (see `Retry-After`)", body = Problem, content_type = "application/problem+json"),
    )
)]
pub(crate) async fn get_weather(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<WeatherQuery>,
) -> ApiResult<Json<Weather>> {
    let wanted = query.city.trim();
    if let Some(upstream) = state.weather() {
        return upstream.fetch(wanted).await.map(Json);
    }
    CITIES
        .iter()
        .find(|(city, ..)| city.eq_ignore_ascii_case(wanted))
        .map(
            |&(city, country, temperature_c, humidity_pct, conditions)| {
                Json(Weather {
                    city: city.to_owned(),
                    country: country.to_owned(),
                    temperature_c,
                    humidity_pct,
                    conditions: conditions.to_owned(),
                })
            },
        )
        .ok_or_else(|| {
            let known: Vec<&str> = CITIES.iter().map(|(city, ..)| *city).collect();
            ApiError::not_found(format!(
                "{wanted:?} is not a pick-up city; known cities: {}",
                known.join(", ")
            ))
        })
}

/// A weather service: `GET <url>?city=NAME` answers a [`Weather`] as JSON (`404` for a city
/// it does not know).
#[derive(Debug, Clone)]
pub(crate) struct WeatherUpstream {
    url: Url,
    client: reqwest::Client,
}

impl WeatherUpstream {
    pub(crate) fn new(url: Url) -> Self {
        Self {
            url,
            client: reqwest::Client::new(),
        }
    }

    /// The weather in `city`: `404` when the service does not know it, `502` when it fails
    /// (no answer, another status, or not a [`Weather`]).
    async fn fetch(&self, city: &str) -> ApiResult<Weather> {
        let failed = |why: String| {
            ApiError::new(
                StatusCode::BAD_GATEWAY,
                format!("the weather service failed: {why}"),
            )
        };
        let mut url = self.url.clone();
        url.query_pairs_mut().append_pair("city", city);
        let response = (self.client.get(url).send().await)
            .map_err(|error| failed(error.without_url().to_string()))?;
        match response.status() {
            status if status.is_success() => (response.json::<Weather>().await)
                .map_err(|error| failed(error.without_url().to_string())),
            StatusCode::NOT_FOUND => Err(ApiError::not_found(format!(
                "the weather service does not know {city:?}"
            ))),
            status => Err(failed(format!("it answered {status}"))),
        }
    }
}
