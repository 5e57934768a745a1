//! The API's one error type: each variant maps to a status code and a JSON
//! body `{"error": "..."}`. Messages never echo more of a request than a
//! bounded, validated piece of it.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::DeserializeOwned;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A malformed request (an invalid run id, a bad query).
    #[error("{0}")]
    BadRequest(String),
    /// No such run.
    #[error("{0}")]
    NotFound(String),
    /// A method other than GET (the API only reads).
    #[error("method {0} is not allowed: agentrace serve answers GET only")]
    MethodNotAllowed(String),
    /// The token is missing or wrong.
    #[error("a valid token is required (Authorization: Bearer <token>)")]
    Unauthorized,
    /// A request for another host name (DNS rebinding).
    #[error("this server answers only for its own address")]
    WrongHost,
    /// A lock was poisoned by a panic elsewhere.
    #[error("internal state is unavailable")]
    Poisoned,
    /// Reading a log failed.
    #[error("{0}")]
    Internal(String),
}

impl ApiError {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::WrongHost => StatusCode::FORBIDDEN,
            ApiError::Poisoned | ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The most candidates an ambiguous prefix's refusal lists.
const CANDIDATES_SHOWN: usize = 10;

/// A store's error as the API tells it: the run or value asked for, never
/// the server's folders or files (the store's own messages, which the
/// command line prints, name them; a client of a served home, maybe on
/// another host, is not told where it lives). No such run is a 404; a
/// prefix that names several runs is a request that does not fit, a 400
/// listing them, as the command line refuses it.
impl From<agentrace_store::StoreError> for ApiError {
    fn from(error: agentrace_store::StoreError) -> Self {
        use agentrace_store::StoreError;
        match error {
            StoreError::InvalidRunId { .. } => ApiError::BadRequest(error.to_string()),
            StoreError::NotFound { query, .. } => ApiError::NotFound(format!("no run matches {query:?}")),
            StoreError::Ambiguous { query, candidates, .. } => {
                let mut shown = candidates.iter().take(CANDIDATES_SHOWN).map(|id| id.as_str()).collect::<Vec<_>>().join(", ");
                if candidates.len() > CANDIDATES_SHOWN {
                    shown.push_str(&format!(" and {} more", candidates.len() - CANDIDATES_SHOWN));
                }
                ApiError::BadRequest(format!("{query:?} matches {} runs: {shown}; give more of the id", candidates.len()))
            }
            StoreError::NoHome => ApiError::Internal("the server has no agentrace home".to_owned()),
            StoreError::AlreadyExists { id, .. } => ApiError::Internal(format!("run {id} already exists")),
            StoreError::PriceFile { path, cause } => {
                ApiError::Internal(format!("the price file {}: {cause}", file_name(&path)))
            }
            StoreError::WarningFile { path, cause } => {
                ApiError::Internal(format!("the warning config {}: {cause}", file_name(&path)))
            }
            StoreError::Io { action, source, .. } => ApiError::Internal(format!("cannot {action}: {}", source.kind())),
            StoreError::Read { line, source, .. } => {
                ApiError::Internal(format!("cannot read a run log at line {line}: {}", source.kind()))
            }
            StoreError::SequenceGap { expected, found, .. } => {
                ApiError::Internal(format!("a run log's sequence has a gap: {found} where {expected} was due"))
            }
            StoreError::WrongRun { expected, found, .. } => {
                ApiError::Internal(format!("run {found} refused by the log of run {expected}"))
            }
            StoreError::Encode { what, .. } => ApiError::Internal(format!("cannot encode {what}")),
            StoreError::Catalog { source, .. } => ApiError::Internal(format!("the catalog failed: {source}")),
            StoreError::Damaged { .. } => ApiError::Internal(error.to_string()),
            StoreError::CatalogBroken { .. } => ApiError::Internal("the catalog cannot be made anew".to_owned()),
        }
    }
}

/// A file's own name, without the folders it is in.
fn file_name(path: &std::path::Path) -> String {
    path.file_name().map_or_else(String::new, |name| name.to_string_lossy().into_owned())
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let mut response = (
            status,
            Json(serde_json::json!({ "error": self.to_string() })),
        )
            .into_response();
        if status == StatusCode::UNAUTHORIZED {
            response.headers_mut().insert(
                axum::http::header::WWW_AUTHENTICATE,
                axum::http::HeaderValue::from_static("Bearer"),
            );
        }
        response
    }
}

/// A query string typed as `T`, as axum's `Query` reads it; one that does
/// not fit (`limit=abc`) is refused as every other request is, a 400 with
/// `{"error": ...}` (axum's own refusal was plain text). A parameter the
/// route does not take is ignored, as input is read tolerantly (a cache
/// buster, a link's tracking tag); a value no run can have of one it takes
/// is the handler's 400.
pub(crate) struct ApiQuery<T>(pub T);

/// The most of a refused query's explanation the error repeats.
const QUERY_ERROR_CHARS: usize = 200;

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::BadRequest(rejection.body_text().chars().take(QUERY_ERROR_CHARS).collect())),
        }
    }
}
