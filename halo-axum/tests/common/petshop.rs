//! A small pet shop API that exercises every derivation rule: parameters in every location,
//! object, array and clashing bodies, recursive types, every security scheme, deprecation,
//! several methods on one path.

use axum::extract::{Json, Path};
use axum::http::StatusCode;
use halo_axum::halo;
use halo_tests::{ApiKeyScheme, BearerScheme};
use serde::{Deserialize, Serialize};
use utoipa::openapi::security::{ClientCredentials, Flow, OAuth2, Scopes, SecurityScheme};
use utoipa::{IntoParams, Modify, OpenApi, ToSchema};
use utoipa_axum::{router::OpenApiRouter, routes};

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Pet {
    /// Identifier.
    pub id: u64,
    /// Name.
    pub name: String,
    /// Where the pet belongs.
    pub category: Category,
    pub tags: Vec<String>,
}

/// A category tree: recursive.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Category {
    pub name: String,
    #[schema(no_recursion)]
    pub children: Vec<Category>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct NewPet {
    /// The pet's name.
    pub name: String,
    /// Price in cents.
    #[schema(minimum = 1)]
    pub price: u32,
    pub category: Option<Category>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Search {
    /// Free text.
    pub q: Option<String>,
    /// At most this many.
    #[param(maximum = 100)]
    pub limit: Option<u32>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
pub struct Page {
    pub items: Vec<Pet>,
    pub total: u64,
}

/// List pets.
///
/// Filters by free text; newest first.
#[halo(why = "Use to find pets before acting on one", example(input = {"q": "rex"}, output = {"items": [], "total": 0}))]
#[utoipa::path(get, path = "/pets", tags = ["pets", "read"], params(Search,
    ("X-Request-Id" = Option<String>, Header, description = "Correlation id")),
    responses((status = 200, body = Page)))]
pub async fn list_pets() -> Json<Page> {
    Json(Page {
        items: vec![],
        total: 0,
    })
}

/// Add a pet.
#[halo(
    reversible = true,
    undo = "/pets/{id}",
    rate = "10/min",
    next(when = "201", suggest = "GET /pets/{id}")
)]
#[utoipa::path(post, path = "/pets", tags = ["pets", "write"], request_body = NewPet,
    responses((status = 201, body = Pet), (status = 422, description = "invalid")),
    security(("bearer" = ["pets:write"])))]
pub async fn add_pet(Json(_pet): Json<NewPet>) -> StatusCode {
    StatusCode::CREATED
}

/// Get one pet.
#[utoipa::path(get, path = "/pets/{id}", tags = ["pets", "read"],
    params(("id" = u64, Path, description = "Pet id")),
    responses((status = 200, body = Pet), (status = 404)),
    security(("api_key" = [])))]
pub async fn get_pet(Path(_id): Path<u64>) -> StatusCode {
    StatusCode::OK
}

/// Replace a pet.
#[utoipa::path(put, path = "/pets/{id}", tags = ["pets", "write"],
    params(("id" = u64, Path)), request_body = Pet,
    responses((status = 200, body = Pet)),
    security(("oauth" = ["pets:write", "pets:read"])))]
pub async fn replace_pet(Path(_id): Path<u64>, Json(_pet): Json<Pet>) -> StatusCode {
    StatusCode::OK
}

/// Delete a pet.
#[utoipa::path(delete, path = "/pets/{id}", tags = ["pets", "write", "admin"],
    params(("id" = u64, Path)), responses((status = 204)),
    security((), ("bearer" = ["pets:admin"])))]
pub async fn delete_pet(Path(_id): Path<u64>) -> StatusCode {
    StatusCode::NO_CONTENT
}

/// Tag many pets at once.
#[utoipa::path(post, path = "/pets/bulk-tag", tags = ["pets", "write"],
    request_body = Vec<String>, responses((status = 200, body = Vec<Pet>)))]
pub async fn bulk_tag(Json(_tags): Json<Vec<String>>) -> StatusCode {
    StatusCode::OK
}

/// Old listing.
#[deprecated]
#[halo(sunset = "2027-06-30", replace_with = "/pets")]
#[utoipa::path(get, path = "/v1/pets", tags = ["pets", "read"], responses((status = 200, body = Page)))]
pub async fn list_pets_v1() -> Json<Page> {
    Json(Page {
        items: vec![],
        total: 0,
    })
}

/// A category tree.
#[utoipa::path(get, path = "/categories", tags = ["categories", "read"],
    responses((status = 200, body = Category)))]
pub async fn categories() -> StatusCode {
    StatusCode::OK
}

/// The security scheme `api_key`: a key in `X-API-Key`.
const API_KEY: ApiKeyScheme = ApiKeyScheme {
    name: "api_key",
    header: "X-API-Key",
};

/// The security scheme `oauth`: OAuth 2.0 client credentials, scopes `pets:write` and
/// `pets:read`.
struct OAuthScheme;

impl Modify for OAuthScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "oauth",
            SecurityScheme::OAuth2(OAuth2::new([Flow::ClientCredentials(
                ClientCredentials::new(
                    "https://auth.example/token",
                    Scopes::from_iter([("pets:write", "write"), ("pets:read", "read")]),
                ),
            )])),
        );
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "Pet Shop", version = "2.1.0", description = "Pets for sale"),
    modifiers(&BearerScheme, &API_KEY, &OAuthScheme)
)]
pub struct ApiDoc;

/// The router and its OpenAPI document.
#[allow(deprecated)]
pub fn petshop() -> (axum::Router, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(list_pets, add_pet))
        .routes(routes!(get_pet, replace_pet, delete_pet))
        .routes(routes!(bulk_tag))
        .routes(routes!(list_pets_v1))
        .routes(routes!(categories))
        .split_for_parts()
}
