//! The viewer's pictures: a run's waterfall (`/api/runs/:id/waterfall`),
//! two runs compared (`/api/compare`), and the usage charts
//! (`/api/usage`). Each is the core's data as it is: the waterfall and the
//! comparison are `agentrace-core`'s, the usage is what `agentrace usage`
//! counts (the binary hands it in, see [`UsageSource`]).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde::Deserialize;

use agentrace_core::waterfall::Waterfall;

use agentrace_store::zone::Zone;

use crate::error::ApiQuery;
use crate::{blocking, ApiError, AppState};

/// What `/api/usage` answers: `agentrace usage`'s figures over every
/// recorded run, as the binary counts them (the server does not own the
/// counting; `agentrace serve` hands its function in).
#[derive(Clone)]
pub struct UsageSource(pub Arc<UsageOfZone>);

/// `agentrace usage`'s figures with days of a zone, or why not.
pub type UsageOfZone = dyn Fn(&Zone) -> Result<serde_json::Value, String> + Send + Sync;

impl std::fmt::Debug for UsageSource {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("UsageSource")
    }
}

/// The most bars one waterfall answer holds: beyond it the page could not
/// draw them quickly, so the bars narrower than a pixel are merged.
const DEFAULT_WIDTH: f64 = 1200.0;

/// `?from=&to=&width=`: the stretch of the axis shown (ms from the run's
/// start) and how many pixels it is drawn on.
#[derive(Debug, Deserialize)]
pub(crate) struct WaterfallQuery {
    #[serde(default)]
    from: Option<i64>,
    #[serde(default)]
    to: Option<i64>,
    #[serde(default)]
    width: Option<f64>,
}

/// What a waterfall answer was for: the log's length read, `from`, `to`
/// and the width's bits.
type WaterfallKey = (u64, i64, Option<i64>, u64);

/// The last waterfall answered for each run, with what it answered
/// (`(log offset, from, to, width)`): a page loaded again, or another
/// client of the same run, is answered without reading the log again. It
/// holds merged bars only, at most a few per pixel of each lane.
#[derive(Debug, Default)]
pub(crate) struct WaterfallCache {
    last: std::sync::Mutex<std::collections::HashMap<String, (WaterfallKey, Arc<Waterfall>)>>,
}

pub(crate) async fn waterfall(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<WaterfallQuery>,
) -> Result<Response, ApiError> {
    // A stretch that ends before it starts, or no pixel to draw on, can
    // hold no bar: refused by name, never answered with an empty picture.
    if let Some(to) = query.to {
        let from = query.from.unwrap_or(0);
        if to < from {
            return Err(ApiError::BadRequest(format!(
                "to={to}: it is before from={from}, so no moment is in the range"
            )));
        }
    }
    if let Some(width) = query.width.filter(|width| !(width.is_finite() && *width >= 1.0)) {
        return Err(ApiError::BadRequest(format!(
            "width={width}: expected the pixels the waterfall is drawn on, at least 1"
        )));
    }
    let waterfall = blocking(move || {
        let home = state.home()?;
        let id = home.resolve(&id)?;
        let shared = state.inner.cache.get(&home, &id)?;
        // Taken under the run's lock, read without it.
        let (source, path) = shared
            .lock()?
            .waterfall_source(&state.inner.options.config.config(&home), state.now());
        let width = query.width.unwrap_or(DEFAULT_WIDTH);
        let from = query.from.unwrap_or(0).max(0);
        let key = (source.offset(), from, query.to, width.to_bits());
        let cache = &state.inner.waterfalls;
        if let Some((answered, waterfall)) = cache
            .last
            .lock()
            .map_err(|_| ApiError::Poisoned)?
            .get(id.as_str())
        {
            if *answered == key {
                return Ok(Arc::clone(waterfall));
            }
        }
        let mut waterfall = source
            .read(&path)
            .map_err(|error| crate::runs::read_error(&id, error))?;
        let to = query.to.unwrap_or(waterfall.span_ms).max(from);
        let span = (to - from).max(1) as f64;
        waterfall.bars = waterfall.window(from, to, span / width);
        let waterfall = Arc::new(waterfall);
        cache
            .last
            .lock()
            .map_err(|_| ApiError::Poisoned)?
            .insert(id.to_string(), (key, Arc::clone(&waterfall)));
        Ok(waterfall)
    })
    .await?;
    Ok(Json(&*waterfall).into_response())
}

/// `?a=RUN&b=RUN`.
#[derive(Debug, Deserialize)]
pub(crate) struct CompareQuery {
    #[serde(default)]
    a: Option<String>,
    #[serde(default)]
    b: Option<String>,
}

pub(crate) async fn compare(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<CompareQuery>,
) -> Result<Response, ApiError> {
    let (Some(a), Some(b)) = (query.a, query.b) else {
        return Err(ApiError::BadRequest(
            "compare needs ?a=RUN&b=RUN".to_owned(),
        ));
    };
    let comparison = blocking(move || {
        let home = state.home()?;
        let side = |name: &str| {
            let id = home.resolve(name)?;
            let run = state.inner.cache.get(&home, &id)?;
            let (view, (source, path)) = {
                let run = run.lock()?;
                let config = &state.inner.options.config.config(&home);
                (
                    run.view(config, state.now()).0,
                    run.waterfall_source(config, state.now()),
                )
            };
            let waterfall = source
                .read(&path)
                .map_err(|error| crate::runs::read_error(&id, error))?;
            Ok::<_, ApiError>((view, waterfall))
        };
        let a = side(&a)?;
        let b = side(&b)?;
        Ok(agentrace_core::compare::compare((&a.0, &a.1), (&b.0, &b.1)))
    })
    .await?;
    Ok(Json(comparison).into_response())
}

/// `?tz=`: the zone whose days the charts count by (UTC when not given).
#[derive(Debug, Deserialize)]
pub(crate) struct UsageQuery {
    #[serde(default)]
    tz: Option<String>,
}

pub(crate) async fn usage(State(state): State<AppState>, ApiQuery(query): ApiQuery<UsageQuery>) -> Result<Response, ApiError> {
    let Some(source) = state.inner.options.usage.clone() else {
        return Err(ApiError::NotFound(
            "usage is counted by `agentrace serve`".to_owned(),
        ));
    };
    let zone = crate::zone_of(query.tz.as_deref())?;
    // Why the count failed names the server's files: it goes to the
    // server's stderr, and the client is told where to look.
    let report = blocking(move || {
        (source.0)(&zone).map_err(|error| {
            eprintln!("warning: /api/usage: {error}");
            ApiError::Internal("cannot count the usage (the server's stderr says why)".to_owned())
        })
    })
    .await?;
    Ok(Json(report).into_response())
}

/// The sessions `/api/live` gives beside the running ones when no
/// `recent` is asked for, and the most it gives.
const RECENT: usize = 20;
const MAX_RECENT: usize = 200;

/// `?recent=`: how many ended sessions beside the running ones.
#[derive(Debug, Deserialize)]
pub(crate) struct LiveQuery {
    #[serde(default)]
    recent: Option<usize>,
}

/// `GET /api/live`: every running session and the `recent` newest others,
/// the live ones first, each part newest first, each with its agents and background commands as `top`
/// shows them (the core's [`agentrace_core::overview`], from the run's
/// one fold), and the server's time, which the page counts durations
/// from.
pub(crate) async fn live(State(state): State<AppState>, ApiQuery(query): ApiQuery<LiveQuery>) -> Result<Response, ApiError> {
    let recent = query.recent.unwrap_or(RECENT).min(MAX_RECENT);
    let now = state.now();
    let sessions = blocking(move || {
        let home = &state.home()?;
        let ids = crate::synced_catalog(home)?.live_and_recent(recent)?;
        let config = &state.inner.options.config.config(home);
        let mut sessions = Vec::with_capacity(ids.len());
        for id in ids {
            let shared = match state.inner.cache.get(home, &id) {
                Ok(shared) => shared,
                // Removed since it was listed: not a session now.
                Err(ApiError::NotFound(_)) => continue,
                Err(error) => return Err(error),
            };
            let run = shared.lock()?;
            let view = run.view(config, now).0;
            sessions.push(agentrace_core::overview::session_of_view(view, run.book()));
        }
        // The live ones first (what the page is for), each part newest
        // first.
        sessions.sort_by_key(|session| !session.live);
        Ok(sessions)
    })
    .await?;
    Ok(Json(serde_json::json!({ "sessions": sessions, "now": now })).into_response())
}
