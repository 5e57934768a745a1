//! `GET /api/runs/:id/stream?after=`: server-sent events for a live run.
//! Every connection listens to its run's one fold ([`SharedRun`]): a poller
//! per watched run reads what was appended and broadcasts it, so a run is
//! folded once however many clients watch. A connection first catches up
//! from `after`, gets the records as they stand (`records`, `{"records":
//! [...]}`) and the view, then sends `envelope` (each new envelope, final
//! actor of the moment), `record` (each child-work change), `run` (the
//! whole `{run, agents, warnings}` when it changed) and `warnings` (when
//! they changed, including on a timer for time-based detectors). A client
//! too slow for the broadcast gets an `error` and the records again. It
//! must not buffer the log: it reads only what was appended.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use tokio::sync::{broadcast, mpsc};
use tokio_stream::wrappers::ReceiverStream;

use crate::runs::{view_texts, LiveRun, PageQuery, SharedRun, Update, MAX_PAGE};
use crate::error::ApiQuery;
use crate::{blocking, ApiError, AppState};

/// Catch-up from `after` sends at most this many envelopes; a client that
/// is further behind pages through `/events` instead.
const CATCH_UP_LIMIT: usize = 10 * MAX_PAGE;

/// Events queued per connection before its sender waits for the client.
const QUEUE: usize = 256;

/// `?after=`.
#[derive(Debug, Deserialize)]
pub(crate) struct StreamQuery {
    #[serde(default)]
    after: Option<u64>,
}

/// What a new connection sends before the updates.
struct Start {
    catch_up: Vec<agentrace_core::Envelope>,
    records: serde_json::Value,
    view: (String, String),
}

pub(crate) async fn stream(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<StreamQuery>,
) -> Result<Response, ApiError> {
    let start = state.clone();
    let (run, receiver, first) = blocking(move || {
        let home = start.home()?;
        let id = home.resolve(&id)?;
        let run = start.inner.cache.get(&home, &id)?;
        let config = start.inner.options.config.config(&home);
        let now = start.now();
        let (receiver, first) = run.subscribe(|live| {
            let catch_up = match query.after {
                Some(after) => catch_up(live, after),
                None => Ok(Vec::new()),
            };
            catch_up.map(|catch_up| Start {
                catch_up,
                records: serde_json::json!({ "records": live.records() }),
                view: view_texts(&live.view(&config, now).0),
            })
        })?;
        let first = first
            .map_err(|error| crate::runs::read_error(&id, error))?;
        Ok((run, receiver, first))
    })
    .await?;
    let (sender, events) = mpsc::channel::<Result<SseEvent, Infallible>>(QUEUE);
    if run.claim_poller() {
        tokio::spawn(poll(state.clone(), Arc::clone(&run)));
    }
    tokio::spawn(follow(run, first, receiver, sender));
    Ok(Sse::new(ReceiverStream::new(events))
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// The envelopes after `after` the fold has read, at most
/// [`CATCH_UP_LIMIT`].
fn catch_up(run: &LiveRun, after: u64) -> std::io::Result<Vec<agentrace_core::Envelope>> {
    let mut catch_up = Vec::new();
    let mut page_query = PageQuery {
        after,
        limit: MAX_PAGE,
        ..PageQuery::default()
    };
    while catch_up.len() < CATCH_UP_LIMIT {
        let page = run.page(&page_query)?;
        catch_up.extend(page.events);
        match page.next {
            Some(next) => page_query.after = next,
            None => break,
        }
    }
    Ok(catch_up)
}

fn json_event(name: &str, value: &impl serde::Serialize) -> Option<SseEvent> {
    SseEvent::default().event(name).json_data(value).ok()
}

/// Follows the run's log while anyone listens, broadcasting each read
/// (with the run judged at the time of the tick): when the log changes
/// (inotify, on its folder), and at every poll period besides, for the
/// time-based detectors and for a file system that tells nothing. Polling
/// alone left a new line up to a period (250 ms) behind its writer.
async fn poll(state: AppState, run: Arc<SharedRun>) {
    let changed = Arc::new(tokio::sync::Notify::new());
    // Without a watcher (none left to the user, say) the poll alone serves.
    let _watcher = watch_log(run.log_path(), Arc::clone(&changed));
    // A line written before the watcher was made is read at once.
    changed.notify_one();
    loop {
        tokio::select! {
            () = tokio::time::sleep(state.inner.options.poll) => {}
            () = changed.notified() => {}
        }
        if run.clients() == 0 {
            run.release_poller();
            // A client may have come between the count and the release.
            if run.clients() == 0 || !run.claim_poller() {
                return;
            }
        }
        // The home's warning config as it is now (as it was at the start
        // when its file cannot be read: the stream goes on); its prices are
        // the fold's own, so the price file is not read at every poll.
        let home = state.inner.home.clone().with_home_warnings().unwrap_or_else(|_| state.inner.home.clone());
        let config = state.inner.options.config.config(&home);
        let now = state.now();
        let shared = Arc::clone(&run);
        // A failed read is broadcast as an `error`; the poller goes on.
        let _ = tokio::task::spawn_blocking(move || shared.refresh(Some((&config, now)))).await;
    }
}

/// A watcher that wakes `changed` when the log at `path` may have changed;
/// `None` when none could be made.
fn watch_log(path: &std::path::Path, changed: Arc<tokio::sync::Notify>) -> Option<notify::RecommendedWatcher> {
    use notify::Watcher as _;
    let watched = path.to_path_buf();
    let mut watcher = agentrace_store::watching::changes_watcher(move |event: notify::Result<notify::Event>| {
        if agentrace_store::watching::may_change(&event, &watched) {
            // One stored wake however many writes came: the poller reads
            // all that was appended.
            changed.notify_one();
        }
    })
    .ok()?;
    // The folder, not the file: a log not made yet, or replaced, is seen.
    watcher.watch(path.parent()?, notify::RecursiveMode::NonRecursive).ok()?;
    Some(watcher)
}

/// Sends until the client goes away.
async fn follow(
    run: Arc<SharedRun>,
    first: Start,
    mut updates: broadcast::Receiver<Arc<Update>>,
    sender: mpsc::Sender<Result<SseEvent, Infallible>>,
) {
    let mut events: Vec<SseEvent> = first
        .catch_up
        .iter()
        .filter_map(|envelope| json_event("envelope", envelope))
        .collect();
    events.extend(json_event("records", &first.records));
    let mut last_view = String::new();
    let mut last_warnings = String::new();
    push_view(&mut events, first.view, &mut last_view, &mut last_warnings);
    if !send(&sender, events).await {
        return;
    }
    loop {
        let received = tokio::select! {
            received = updates.recv() => received,
            () = sender.closed() => return,
        };
        let mut events = Vec::new();
        match received {
            Ok(update) => {
                events.extend(update.envelopes.iter().filter_map(|e| json_event("envelope", e)));
                events.extend(update.changes.iter().filter_map(|c| json_event("record", c)));
                if let Some(error) = &update.error {
                    events.extend(json_event("error", &serde_json::json!({ "error": error })));
                }
                if let Some(view) = &update.view {
                    push_view(&mut events, view.clone(), &mut last_view, &mut last_warnings);
                }
            }
            Err(broadcast::error::RecvError::Lagged(skipped)) => {
                // Too slow for the broadcast: say so, and send the records
                // as they stand so the client's set is right again.
                events.extend(json_event(
                    "error",
                    &serde_json::json!({ "error": format!("the stream fell behind: {skipped} updates skipped; page /events for the envelopes") }),
                ));
                let shared = Arc::clone(&run);
                let records = tokio::task::spawn_blocking(move || {
                    shared.lock().map(|live| serde_json::json!({ "records": live.records() }))
                })
                .await;
                if let Ok(Ok(records)) = records {
                    events.extend(json_event("records", &records));
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
        if !send(&sender, events).await {
            return;
        }
    }
}

/// Adds `warnings` and `run` events when they changed since the last sent.
fn push_view(
    events: &mut Vec<SseEvent>,
    (view, warnings): (String, String),
    last_view: &mut String,
    last_warnings: &mut String,
) {
    if view == *last_view {
        return;
    }
    if warnings != *last_warnings {
        events.push(SseEvent::default().event("warnings").data(warnings.clone()));
        *last_warnings = warnings;
    }
    events.push(SseEvent::default().event("run").data(view.clone()));
    *last_view = view;
}

/// Sends `events` in order; false once the client is gone.
async fn send(sender: &mpsc::Sender<Result<SseEvent, Infallible>>, events: Vec<SseEvent>) -> bool {
    for event in events {
        if sender.send(Ok(event)).await.is_err() {
            return false;
        }
    }
    true
}
