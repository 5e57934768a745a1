//! The API's one error type: each variant maps to a status code and a JSON
//! body `{"error": "..."}`. Messages never echo more of a request than a
//! bounded, validated piece of it.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::de::{DeserializeOwned, Visitor};

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
    fn status(&self) -> StatusCode {
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

/// A query string typed as `T`, as axum's `Query` reads it; one that does
/// not fit (`limit=abc`) is refused as every other request is, a 400 with
/// `{"error": ...}` (axum's own refusal was plain text). So is a parameter
/// the route does not take (`/api/live?status=live`): ignored, it would
/// look like a filter that kept everything. `token` is taken everywhere
/// (the page and its event stream send it, see [`TOKEN_PARAMETER`]).
pub(crate) struct ApiQuery<T>(pub T);

/// The query parameter a token may come in, on any request.
pub(crate) const TOKEN_PARAMETER: &str = "token";

/// The most of a refused query's explanation the error repeats.
const QUERY_ERROR_CHARS: usize = 200;

/// The most of a parameter's name a refusal repeats.
const PARAMETER_NAME_CHARS: usize = 40;

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for ApiQuery<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let value = match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => value,
            Err(rejection) => return Err(ApiError::BadRequest(rejection.body_text().chars().take(QUERY_ERROR_CHARS).collect())),
        };
        if let Some(taken) = parameter_names::<T>() {
            // Read as the query was: a query that read as `T` reads as pairs.
            let pairs = Query::<Vec<(String, String)>>::try_from_uri(&parts.uri).map(|Query(pairs)| pairs).unwrap_or_default();
            if let Some((name, _)) = pairs.iter().find(|(name, _)| name != TOKEN_PARAMETER && !taken.contains(&name.as_str())) {
                let name: String = name.chars().take(PARAMETER_NAME_CHARS).collect();
                let takes = if taken.is_empty() { format!("no parameter but {TOKEN_PARAMETER}") } else { format!("{} (and {TOKEN_PARAMETER})", taken.join(", ")) };
                return Err(ApiError::BadRequest(format!("{name}: not a parameter here; this route takes {takes}")));
            }
        }
        Ok(ApiQuery(value))
    }
}

/// The parameters a query type takes: the names of its fields as serde
/// reads them (its derived `Deserialize` hands them to `deserialize_struct`),
/// found by asking it to read from a deserializer that only notes them.
/// `None` for a type that is not a struct (then no name is refused).
fn parameter_names<T: DeserializeOwned>() -> Option<&'static [&'static str]> {
    struct Names<'a>(&'a mut Option<&'static [&'static str]>);

    impl<'de> serde::Deserializer<'de> for Names<'_> {
        type Error = serde::de::value::Error;

        fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
            Err(serde::de::Error::custom("not a struct"))
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Self::Error> {
            *self.0 = Some(fields);
            Err(serde::de::Error::custom("names only"))
        }

        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
            bytes byte_buf option unit unit_struct newtype_struct seq tuple
            tuple_struct map enum identifier ignored_any
        }
    }

    let mut names = None;
    // Always an error: the names are all it was asked for.
    let _ = T::deserialize(Names(&mut names));
    names
}
