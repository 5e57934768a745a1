//! The API's one error type: each variant maps to a status code and a JSON
//! body `{"error": "..."}`. Messages never echo more of a request than a
//! bounded, validated piece of it.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// A malformed request (an invalid run id, a bad query).
    #[error("{0}")]
    BadRequest(String),
    /// No such run.
    #[error("{0}")]
    NotFound(String),
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
    fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Unauthorized => StatusCode::UNAUTHORIZED,
            ApiError::WrongHost => StatusCode::FORBIDDEN,
            ApiError::Poisoned | ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

impl From<agentrace_store::StoreError> for ApiError {
    fn from(error: agentrace_store::StoreError) -> Self {
        use agentrace_store::StoreError;
        match &error {
            StoreError::InvalidRunId { .. } => ApiError::BadRequest(error.to_string()),
            StoreError::NotFound { .. } | StoreError::Ambiguous { .. } => {
                ApiError::NotFound(error.to_string())
            }
            _ => ApiError::Internal(error.to_string()),
        }
    }
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
