//! `GET /api/runs/:id/stream?after=`: server-sent events for a live run.
//! Each connection follows the log from where the cache stood (catching up
//! from `after` first), and sends `envelope` (each new envelope, final actor
//! of the moment), `record` (each child-work change), `run` (the whole
//! `{run, agents, warnings}` when it changed) and `warnings` (when they
//! changed, including on a timer for time-based detectors). It must not
//! buffer the log: it reads only what was appended.

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use crate::runs::{LiveRun, PageQuery, MAX_PAGE};
use crate::{blocking, ApiError, AppState};

/// Catch-up from `after` sends at most this many envelopes; a client that
/// is further behind pages through `/events` instead.
const CATCH_UP_LIMIT: usize = 10 * MAX_PAGE;

/// Events queued per connection before the follower waits for the client.
const QUEUE: usize = 256;

/// `?after=`.
#[derive(Debug, Deserialize)]
pub(crate) struct StreamQuery {
    #[serde(default)]
    after: Option<u64>,
}

pub(crate) async fn stream(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Query(query): Query<StreamQuery>,
) -> Result<Response, ApiError> {
    let start = state.clone();
    let (run, catch_up) = blocking(move || {
        let id = start.inner.home.resolve(&id)?;
        let run = start.inner.cache.get(&start.inner.home, &id)?;
        let run = run.lock().map_err(|_| ApiError::Poisoned)?.clone();
        let mut catch_up = Vec::new();
        if let Some(after) = query.after {
            let mut page_query = PageQuery {
                after,
                limit: MAX_PAGE,
                ..PageQuery::default()
            };
            while catch_up.len() < CATCH_UP_LIMIT {
                let page = run.page(&page_query).map_err(|error| {
                    crate::runs::read_error(&start.inner.home.log_path(&id), error)
                })?;
                catch_up.extend(page.events);
                match page.next {
                    Some(next) => page_query.after = next,
                    None => break,
                }
            }
        }
        Ok((run, catch_up))
    })
    .await?;
    let (sender, receiver) = mpsc::channel::<Result<SseEvent, Infallible>>(QUEUE);
    tokio::spawn(follow(state, run, catch_up, sender));
    Ok(Sse::new(ReceiverStream::new(receiver))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

fn json_event(name: &str, value: &impl serde::Serialize) -> Option<SseEvent> {
    SseEvent::default().event(name).json_data(value).ok()
}

/// Sends until the client goes away.
async fn follow(
    state: AppState,
    run: LiveRun,
    catch_up: Vec<agentrace_core::Envelope>,
    sender: mpsc::Sender<Result<SseEvent, Infallible>>,
) {
    for envelope in &catch_up {
        if let Some(event) = json_event("envelope", envelope) {
            if sender.send(Ok(event)).await.is_err() {
                return;
            }
        }
    }
    let mut run = run;
    let mut last_view = String::new();
    let mut last_warnings = String::new();
    loop {
        let now = state.now();
        let config = state.inner.options.config.clone();
        let outcome = tokio::task::spawn_blocking(move || {
            let mut envelopes = Vec::new();
            let followed = run.follow(|envelope| envelopes.push(envelope.clone()));
            run.show_frames(&mut envelopes);
            let view = run.view(&config, now).0;
            (run, followed, envelopes, view)
        })
        .await;
        let Ok((returned, followed, envelopes, view)) = outcome else {
            return;
        };
        run = returned;
        let mut events = Vec::new();
        match followed {
            Ok(followed) => {
                events.extend(envelopes.iter().filter_map(|e| json_event("envelope", e)));
                events.extend(
                    followed
                        .changes
                        .iter()
                        .filter_map(|c| json_event("record", c)),
                );
            }
            Err(error) => {
                events.extend(json_event(
                    "error",
                    &serde_json::json!({ "error": error.to_string() }),
                ));
            }
        }
        let view_text = serde_json::to_string(&view).unwrap_or_default();
        if view_text != last_view {
            let warnings_text = serde_json::to_string(&view.warnings).unwrap_or_default();
            if warnings_text != last_warnings {
                events.extend(json_event("warnings", &view.warnings));
                last_warnings = warnings_text;
            }
            events.extend(json_event("run", &view));
            last_view = view_text;
        }
        for event in events {
            if sender.send(Ok(event)).await.is_err() {
                return;
            }
        }
        if sender.is_closed() {
            return;
        }
        tokio::time::sleep(state.inner.options.poll).await;
    }
}
