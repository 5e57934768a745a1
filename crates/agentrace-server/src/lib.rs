//! `agentrace serve`: the HTTP API of §9 over the runs in an agentrace home
//! (the run list, `{run, agents, warnings}`, paged events, child-work
//! records, a server-sent event stream for live runs) and the web viewer,
//! whose static files are embedded in the binary. The server is a function,
//! [`app`], so tests drive it with `oneshot` and no socket.
//!
//! Security: every run id passes the store's validation before it names a
//! file; a token (when configured) is compared in constant time; every
//! response carries a strict Content-Security-Policy; on a loopback bind
//! without a token, requests for another host name are refused (DNS
//! rebinding). This crate must not attribute or decide anything: the core
//! does.

mod error;
pub mod runs;
mod stream;
mod views;

pub use views::UsageSource;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use agentrace_core::days;
use agentrace_core::model::Timestamp;
use agentrace_core::warnings::WarningConfig;
use agentrace_store::zone::Zone;
use agentrace_store::Home;
use axum::extract::{Path, RawQuery, Request, State};
use axum::http::{header, HeaderMap, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use subtle::ConstantTimeEq as _;

pub use error::ApiError;
use error::ApiQuery;
use runs::{ActorFilter, PageQuery, RunCache, DEFAULT_PAGE};

/// The Content-Security-Policy of every response: scripts, styles and
/// connections only from this origin, nothing inline, no frames, no forms.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// How the server checks requests and judges runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// Required on every request when set (`Authorization: Bearer`, or
    /// `?token=` for the page and the event stream).
    pub token: Option<String>,
    /// Host names accepted (any port); none = any. Set for loopback binds
    /// without a token, against DNS rebinding.
    pub allowed_hosts: Option<Vec<String>>,
    /// The warning configuration the detectors use.
    pub config: Judge,
    /// How often the stream looks for new lines of a live run.
    pub poll: Duration,
    /// The clock time-based detectors judge by (tests fix it).
    pub clock: fn() -> Timestamp,
    /// `agentrace usage`'s figures for `/api/usage` (none: the page says
    /// usage is counted by `agentrace serve`).
    pub usage: Option<UsageSource>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            token: None,
            allowed_hosts: None,
            config: Judge::default(),
            poll: Duration::from_millis(250),
            clock: system_now,
            usage: None,
        }
    }
}

/// Which warning configuration the server judges runs by.
#[derive(Debug, Clone)]
pub enum Judge {
    /// This one, whatever the home's says (`--config FILE`, tests).
    Fixed(WarningConfig),
    /// The home's (`warnings.json`) as it is at each request, as the run
    /// records are judged: the server runs for days. These codes are
    /// allowed and denied on top (the command line's `-A` and `-W`).
    Home {
        /// Codes allowed on top.
        allow: Vec<String>,
        /// Codes denied on top.
        deny: Vec<String>,
    },
}

impl Default for Judge {
    fn default() -> Self {
        Judge::Home { allow: Vec::new(), deny: Vec::new() }
    }
}

impl Judge {
    /// The configuration to judge `home`'s runs by now.
    pub fn config(&self, home: &Home) -> WarningConfig {
        match self {
            Judge::Fixed(config) => config.clone(),
            Judge::Home { allow, deny } => home.warnings().clone().with_flags(allow, deny),
        }
    }
}

/// What the server serves, shared by every request.
#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    home: Home,
    /// The home's known prices, read once when the server started, and
    /// the book its requests price with while the price files are as
    /// they were.
    prices: agentrace_store::prices::KeptPrices,
    options: Options,
    cache: RunCache,
    waterfalls: views::WaterfallCache,
}

impl AppState {
    /// Serves the runs of `home`.
    pub fn new(home: Home, options: Options) -> Self {
        Self {
            inner: Arc::new(Inner {
                prices: home.kept_prices(),
                home,
                options,
                cache: RunCache::default(),
                waterfalls: views::WaterfallCache::default(),
            }),
        }
    }

    fn now(&self) -> Timestamp {
        (self.inner.options.clock)()
    }

    /// The home as it is now, read once per request: the server runs for
    /// days, and what it shows after the home's price file, price
    /// database or warning config changed is priced and judged by the new
    /// one (its runs list, a run's fold, its pictures). The known prices
    /// are not read again: a cache, taught once to each book.
    pub(crate) fn home(&self) -> Result<Home, ApiError> {
        Ok(self.inner.home.clone().with_home_prices_kept(&self.inner.prices)?.with_home_warnings()?)
    }
}

fn system_now() -> Timestamp {
    let millis = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0);
    Timestamp::from_millis(millis)
}

/// The viewer's files, embedded: no build step, nothing read from disk.
const INDEX_HTML: &str = include_str!("../assets/index.html");
const APP_JS: &str = include_str!("../assets/app.js");
const APP_CSS: &str = include_str!("../assets/app.css");

/// The router: the API, the viewer's page (`/`, `/runs/<id>`) and its files.
pub fn app(state: AppState) -> Router {
    Router::new()
        .route("/", get(page))
        .route("/runs/{id}", get(run_page))
        .route("/usage", get(page))
        .route("/live", get(page))
        .route("/compare", get(page))
        .route(
            "/assets/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/assets/app.css",
            get(|| async { asset("text/css; charset=utf-8", APP_CSS) }),
        )
        .route("/api/runs", get(list_runs))
        .route("/api/search", get(search))
        .route("/api/runs/{id}", get(show_run))
        .route("/api/runs/{id}/events", get(events))
        .route("/api/runs/{id}/records", get(records))
        .route("/api/runs/{id}/stream", get(stream::stream))
        .route("/api/runs/{id}/waterfall", get(views::waterfall))
        .route("/api/compare", get(views::compare))
        .route("/api/usage", get(views::usage))
        .route("/api/live", get(views::live))
        // After every route: it is set on the routes there are.
        .method_not_allowed_fallback(|method: axum::http::Method| async move {
            ApiError::MethodNotAllowed(method.as_str().chars().take(METHOD_CHARS).collect())
        })
        .fallback(not_found)
        .layer(middleware::from_fn_with_state(state.clone(), guard))
        .layer(middleware::map_response(secure_headers))
        .with_state(state)
}

/// The most of a refused method's name the refusal repeats.
const METHOD_CHARS: usize = 16;

fn asset(content_type: &'static str, body: &'static str) -> Response {
    ([(header::CONTENT_TYPE, content_type)], body).into_response()
}

async fn page(State(state): State<AppState>, RawQuery(query): RawQuery) -> Response {
    viewer_page(page_token(&state, query.as_deref()))
}

/// The token a page's address gave, when the server has one: the guard let
/// the request in, so it is the server's.
fn page_token<'query>(state: &AppState, query: Option<&'query str>) -> Option<&'query str> {
    state.inner.options.token.as_ref().and_then(|_| query_token(query))
}

/// The viewer's page. Behind a token its script and stylesheet are asked
/// for with the token its address gave: the guard refuses every request
/// without one, so the page's own files were refused (401) and the viewer
/// never ran.
fn viewer_page(token: Option<&str>) -> Response {
    let Some(token) = token else {
        return asset("text/html; charset=utf-8", INDEX_HTML);
    };
    let with = format!("?token={}", agentrace_core::html::escape(token));
    let html = INDEX_HTML
        .replace("\"/assets/app.css\"", &format!("\"/assets/app.css{with}\""))
        .replace("\"/assets/app.js\"", &format!("\"/assets/app.js{with}\""));
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()
}

/// A run's page, once its id names one run; else a plain page saying why,
/// with the API's status for it (404 for no such run, 400 for an id that
/// is not one or a prefix of several), never the viewer's empty chrome.
async fn run_page(State(state): State<AppState>, Path(id): Path<String>, RawQuery(query): RawQuery) -> Response {
    // The guard let the request in, so a token it gave in its address is
    // the server's: the page's links carry it on, as the viewer's do, or
    // "Every run" would be refused.
    let token = page_token(&state, query.as_deref()).map(str::to_owned);
    let resolved = blocking(move || {
        agentrace_store::validate_run_id(&id)?;
        Ok(state.home()?.resolve(&id)?)
    })
    .await;
    match resolved {
        Ok(_) => viewer_page(token.as_deref()),
        Err(error) => refusal_page(&error, token.as_deref()),
    }
}

/// An address no route has: under `/api` a JSON refusal, as every API
/// answer is; any other a plain page saying so with a link to the run
/// list, since a browser showed the JSON as raw text with no way back.
async fn not_found(State(state): State<AppState>, uri: axum::http::Uri) -> Response {
    let error = ApiError::NotFound("no such page".to_owned());
    let path = uri.path();
    if path == "/api" || path.starts_with("/api/") {
        return error.into_response();
    }
    let token = page_token(&state, uri.query());
    refusal_page_titled("No such page", &error, token)
}

/// A page that says why it is not the one asked for, with the refusal's
/// status; the message is inserted as text. Its links to the run list
/// carry `token` (as given in the address) when there is one.
fn refusal_page(error: &ApiError, token: Option<&str>) -> Response {
    let title = if error.status() == axum::http::StatusCode::NOT_FOUND { "No such run" } else { "Not a run" };
    refusal_page_titled(title, error, token)
}

/// [`refusal_page`] under `title`.
fn refusal_page_titled(title: &str, error: &ApiError, token: Option<&str>) -> Response {
    let message = agentrace_core::html::escape(&error.to_string());
    let with = token.map(|token| format!("?token={}", agentrace_core::html::escape(token))).unwrap_or_default();
    let home = format!("/{with}");
    // Its stylesheet too, or the guard refuses it behind a token.
    let style = format!("/assets/app.css{with}");
    let body = format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{title} · agentrace</title>\n<link rel=\"stylesheet\" href=\"{style}\">\n</head>\n<body>\n<header><a id=\"home\" href=\"{home}\">agentrace</a></header>\n<main>\n<h1>{title}</h1>\n<p id=\"error\" class=\"error\">{message}</p>\n<p><a href=\"{home}\">Every run</a></p>\n</main>\n</body>\n</html>\n"
    );
    (error.status(), [(header::CONTENT_TYPE, "text/html; charset=utf-8")], body).into_response()
}


async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// Refuses requests without the token (when one is set) and, on loopback
/// binds, requests naming another host.
async fn guard(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if let Some(hosts) = &state.inner.options.allowed_hosts {
        let host = request
            .headers()
            .get(header::HOST)
            .and_then(|value| value.to_str().ok())
            .map(host_name);
        if !host.is_some_and(|host| hosts.iter().any(|allowed| allowed == host)) {
            return ApiError::WrongHost.into_response();
        }
    }
    if let Some(token) = &state.inner.options.token {
        if !presents_token(request.headers(), request.uri().query(), token) {
            return ApiError::Unauthorized.into_response();
        }
    }
    next.run(request).await
}

/// `localhost:8080` → `localhost`, `[::1]:80` → `[::1]`.
fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, _)| name)
}

/// The token from `Authorization: Bearer …`, else from `?token=` (what the
/// page and `EventSource`, which cannot set headers, use), compared in
/// constant time.
fn presents_token(headers: &HeaderMap, query: Option<&str>, token: &str) -> bool {
    let from_header = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    let Some(given) = from_header.or_else(|| query_token(query)) else {
        return false;
    };
    bool::from(given.as_bytes().ct_eq(token.as_bytes()))
}

/// The `token=` of a request's query, as given (not decoded).
fn query_token(query: Option<&str>) -> Option<&str> {
    query?.split('&').find_map(|pair| pair.strip_prefix("token="))
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|error| ApiError::Internal(format!("worker failed: {error}")))?
}

/// `?provider=&project=&status=&since=&until=&tz=&limit=&offset=`, as
/// `agentrace runs` takes them.
#[derive(Debug, Deserialize)]
struct RunsQuery {
    /// The zone of `since`/`until`'s days (UTC when not given).
    #[serde(default)]
    tz: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    status: Option<String>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    /// `any`, or a warning code.
    #[serde(default)]
    warning: Option<String>,
    /// `started` (the default), `cost`, `tokens`, `duration`, `warnings`.
    #[serde(default)]
    sort: Option<String>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    offset: Option<u64>,
}

/// The order a `sort=` names (newest first when blank or not given).
fn sort_of(sort: Option<&str>) -> Result<agentrace_store::catalog::RunSort, ApiError> {
    use agentrace_store::catalog::RunSort;
    match sort.map(str::trim).filter(|sort| !sort.is_empty()) {
        None => Ok(RunSort::default()),
        Some(text) => RunSort::parse(text).ok_or_else(|| {
            let names: Vec<&str> = RunSort::ALL.iter().map(|sort| sort.as_str()).collect();
            ApiError::BadRequest(format!("sort={text}: expected one of {}", names.join(", ")))
        }),
    }
}

/// The status a `status=` keeps to (none when blank): one a record has,
/// or `live`. Another would list nothing and look like an empty history.
fn status_of(status: Option<&str>) -> Result<Option<String>, ApiError> {
    use agentrace_store::catalog::RUN_STATUSES;
    match status.map(str::trim).filter(|text| !text.is_empty()) {
        None => Ok(None),
        Some(text) if RUN_STATUSES.contains(&text) => Ok(Some(text.to_owned())),
        Some(text) => Err(ApiError::BadRequest(format!("status={text}: expected one of {}", RUN_STATUSES.join(", ")))),
    }
}

/// The provider a `provider=` keeps to (none when blank).
fn provider_of(provider: Option<&str>) -> Result<Option<String>, ApiError> {
    match provider.map(str::trim).filter(|text| !text.is_empty()) {
        None => Ok(None),
        Some(text) => {
            use agentrace_core::model::Provider;
            [Provider::Codex, Provider::Claude, Provider::Unknown]
                .into_iter()
                .find(|provider| provider.as_str() == text)
                .map(|provider| Some(provider.as_str().to_owned()))
                .ok_or_else(|| ApiError::BadRequest(format!("provider={text}: expected codex, claude or unknown")))
        }
    }
}

/// The warnings a `warning=` keeps to: `any`, or a code a run's record may
/// carry (a code judged only when a run is read, `silent_agent`, would
/// list nothing, as `runs --warning` refuses it).
fn warning_of(warning: Option<&str>) -> Result<Option<agentrace_store::catalog::WarningFilter>, ApiError> {
    use agentrace_store::catalog::{UnlistedCode, WarningFilter};
    let Some(text) = warning.map(str::trim).filter(|text| !text.is_empty()) else {
        return Ok(None);
    };
    WarningFilter::parse(text).map(Some).map_err(|why| match why {
        UnlistedCode::Unknown => ApiError::BadRequest(format!("warning={text}: not a warning code; expected `any` or a code as `check` names it")),
        UnlistedCode::ReadTime => ApiError::BadRequest(format!(
            "warning={text}: a list of runs cannot keep to this code: it is judged against the clock when a run is read, and no run's record carries it; GET /api/runs/RUN (or `agentrace check`) judges it"
        )),
    })
}

/// The runs listed when no `limit` is asked for, and the most one page
/// lists.
const RUNS_PAGE: u64 = 100;
const MAX_RUNS_PAGE: u64 = 1000;

/// The times `since=` and `until=` leave in, in `zone`, by the rule the
/// command line's `--since`/`--until` follow (`agentrace_core::days::range`):
/// a day that is none or out of range, or an `until` before the `since`,
/// is a 400 naming it, never an empty list.
fn day_range(since: Option<&str>, until: Option<&str>, now: Timestamp, zone: &Zone) -> Result<days::Range, ApiError> {
    let day = |name: &str, text: Option<&str>| {
        text.map(|text| days::Day::parse(text).ok_or_else(|| ApiError::BadRequest(format!("{name}={text}: expected {}", days::DAY_FORMS)))).transpose()
    };
    let (since_day, until_day) = (day("since", since)?, day("until", until)?);
    let (since, until) = (since.unwrap_or_default(), until.unwrap_or_default());
    days::range(since_day, until_day, now, &zone.tz).map_err(|error| {
        ApiError::BadRequest(match error {
            days::RangeError::SinceOutOfRange => format!("since={since}: the day is out of range"),
            days::RangeError::UntilOutOfRange => format!("until={until}: the day is out of range"),
            days::RangeError::Backwards => format!("until={until}: it is before since={since}, so no day is in the range"),
        })
    })
}

/// The zone a `tz=` names; UTC when none is given.
pub(crate) fn zone_of(tz: Option<&str>) -> Result<Zone, ApiError> {
    // A blank `tz=` is UTC, as the parser reads any blank zone.
    tz.map_or_else(|| Ok(Zone::utc()), |tz| agentrace_store::zone::parse_zone(tz).map_err(|error| ApiError::BadRequest(format!("tz={tz}: {error}"))))
}

/// Opens the home's catalog, brought up to the runs folder (a catalog made
/// anew is said on stderr).
fn synced_catalog(home: &Home) -> Result<agentrace_store::Catalog, ApiError> {
    let catalog = agentrace_store::Catalog::open(home)?;
    if let Some(note) = catalog.rebuilt().and_then(|reason| reason.note(catalog.path())) {
        eprintln!("{note}");
    }
    catalog.sync(home)?;
    Ok(catalog)
}

async fn list_runs(State(state): State<AppState>, ApiQuery(query): ApiQuery<RunsQuery>) -> Result<Response, ApiError> {
    let now = state.now();
    let zone = zone_of(query.tz.as_deref())?;
    let days = day_range(query.since.as_deref(), query.until.as_deref(), now, &zone)?;
    let filter = agentrace_store::catalog::RunFilter {
        provider: provider_of(query.provider.as_deref())?,
        project: query.project,
        status: status_of(query.status.as_deref())?,
        since: days.since.map(|at| at.0),
        until: days.until.map(|at| at.0),
        warning: warning_of(query.warning.as_deref())?,
        sort: sort_of(query.sort.as_deref())?,
        limit: Some(query.limit.unwrap_or(RUNS_PAGE).min(MAX_RUNS_PAGE)),
        offset: query.offset.unwrap_or(0),
    };
    let (runs, total) = blocking(move || {
        let home = state.home()?;
        let catalog = synced_catalog(&home)?;
        let (runs, total) = catalog.list_runs(&filter)?;
        // Counted as `/api/runs/:id` counts them, the allowed codes left out.
        let config = &state.inner.options.config.config(&home);
        let runs = runs
            .into_iter()
            .map(|listed| agentrace_store::catalog::ListedRun { run: config.listed(listed.run), ..listed })
            .collect::<Vec<_>>();
        Ok((runs, total))
    })
    .await?;
    Ok(Json(serde_json::json!({ "runs": runs, "total": total })).into_response())
}

/// `?q=&limit=&run=&actor=`.
#[derive(Debug, Deserialize)]
struct SearchParams {
    #[serde(default)]
    q: String,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    provider: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    since: Option<String>,
    #[serde(default)]
    until: Option<String>,
    #[serde(default)]
    tz: Option<String>,
}

/// The most of an `actor=` value a refusal repeats.
const ACTOR_NAME_CHARS: usize = 80;

async fn search(State(state): State<AppState>, ApiQuery(params): ApiQuery<SearchParams>) -> Result<Response, ApiError> {
    use agentrace_store::catalog::ActorQuery;
    let actor = params.actor.as_deref().and_then(ActorQuery::parse);
    let (now, zone) = (state.now(), zone_of(params.tz.as_deref())?);
    let days = day_range(params.since.as_deref(), params.until.as_deref(), now, &zone)?;
    let hits = blocking(move || {
        let home = state.home()?;
        let catalog = synced_catalog(&home)?;
        let run = params.run.as_deref().map(|run| home.resolve(run)).transpose()?;
        let query = agentrace_store::catalog::SearchQuery {
            text: params.q,
            run: run.map(|id| id.to_string()),
            actor,
            provider: provider_of(params.provider.as_deref())?,
            project: params.project,
            since: days.since.map(|at| at.0),
            until: days.until.map(|at| at.0),
            limit: params.limit.unwrap_or(20).min(MAX_RUNS_PAGE),
        };
        let hits = catalog.search(&home, &query)?;
        if let (true, Some(ActorQuery::Agent(agent))) = (hits.is_empty(), &query.actor) {
            // A name no agent has (a typo, a label as another tool prints
            // it) must not read as an agent that never wrote the words, as
            // `search --actor` refuses it; a value shaped as a thread id
            // stays a quiet no-match.
            if !agentrace_store::catalog::looks_like_a_thread_id(agent) && !catalog.names_agent(query.run.as_deref(), agent)? {
                let agent: String = agent.chars().take(ACTOR_NAME_CHARS).collect();
                let runs = query.run.as_ref().map_or_else(|| "any run".to_owned(), |run| format!("run {run}"));
                return Err(ApiError::BadRequest(format!(
                    "actor={agent}: no agent of {runs} has this thread id or label; actor takes main, helpers, unknown, an agent's label as `show` prints it, or its thread id (GET /api/runs/RUN lists a run's agents)"
                )));
            }
        }
        Ok(hits)
    })
    .await?;
    Ok(Json(serde_json::json!({ "hits": hits })).into_response())
}

async fn show_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let view = blocking(move || {
        let home = state.home()?;
        let id = home.resolve(&id)?;
        let run = state.inner.cache.get(&home, &id)?;
        let run = run.lock()?;
        Ok(run.view(&state.inner.options.config.config(&home), state.now()).0)
    })
    .await?;
    Ok(Json(view).into_response())
}

/// `?after=&limit=&actor=&q=`.
#[derive(Debug, Deserialize)]
struct EventsQuery {
    #[serde(default)]
    after: Option<u64>,
    #[serde(default)]
    limit: Option<usize>,
    #[serde(default)]
    actor: Option<String>,
    #[serde(default)]
    q: Option<String>,
}

async fn events(
    State(state): State<AppState>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> Result<Response, ApiError> {
    let page = blocking(move || {
        let home = state.home()?;
        let id = home.resolve(&id)?;
        let run = state.inner.cache.get(&home, &id)?;
        let run = run.lock()?;
        let page_query = PageQuery {
            after: query.after.unwrap_or(0),
            limit: query.limit.unwrap_or(DEFAULT_PAGE),
            actor: ActorFilter::parse(query.actor.as_deref()),
            q: query.q.filter(|q| !q.is_empty()),
        };
        let read = |error| runs::read_error(&id, error);
        let view = run.view(&state.inner.options.config.config(&home), state.now()).0;
        if let Some(why) = run.names_nothing(&page_query.actor, &view).map_err(read)? {
            return Err(ApiError::BadRequest(why));
        }
        run.page(&page_query).map_err(read)
    })
    .await?;
    Ok(Json(page).into_response())
}

async fn records(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Response, ApiError> {
    let records = blocking(move || {
        let home = state.home()?;
        let id = home.resolve(&id)?;
        let run = state.inner.cache.get(&home, &id)?;
        let run = run.lock()?;
        Ok(run.records())
    })
    .await?;
    Ok(Json(serde_json::json!({ "records": records })).into_response())
}

/// True for addresses only this machine can reach.
pub fn is_loopback(address: &SocketAddr) -> bool {
    address.ip().is_loopback()
}

/// Binds `address` and returns the bound address and the server future.
/// Prints nothing: the caller prints `listening on http://ADDR:PORT` before
/// awaiting it. A loopback bind without a token accepts only loopback host
/// names.
pub async fn bind(
    address: SocketAddr,
    home: Home,
    mut options: Options,
) -> std::io::Result<(
    SocketAddr,
    impl std::future::Future<Output = std::io::Result<()>>,
)> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    let local = listener.local_addr()?;
    if options.token.is_none() && is_loopback(&local) && options.allowed_hosts.is_none() {
        options.allowed_hosts = Some(vec![
            "127.0.0.1".to_owned(),
            "localhost".to_owned(),
            "[::1]".to_owned(),
        ]);
    }
    let router = app(AppState::new(home, options));
    Ok((local, async move { axum::serve(listener, router).await }))
}
