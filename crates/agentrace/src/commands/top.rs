//! `agentrace top`: a terminal view of every live and recent session, each
//! with its agent tree: who is working, waiting or ended, the tool running
//! now and for how long, tokens, cost, and how long each has been silent.
//! It follows the provider folders as `watch` does (the same follower, the
//! same import), and reads what it shows from the runs those passes write,
//! so it shows what `status` and `show` would. The screen is a pure function
//! of [`Top`] (tested on ratatui's test backend); this module's shell owns
//! the terminal, the keys and the follower thread.

use std::io::IsTerminal as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use agentrace_core::model::{Provider, RunId, RunStatus, Timestamp};
use agentrace_core::overview::{session_of_view, AgentRow, Session, ToolNow};
use agentrace_core::state::CostStatus;
use agentrace_store::Home;
use anyhow::Context as _;
use clap::Args;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::commands::import::ImportArgs;
use crate::clock::now;
use crate::output::Out;
use crate::render::{event_text, one_line, short_tokens};
use crate::commands::status::{change_line, duration, state_text, warning_line};
use crate::commands::watch::Follower;

/// `agentrace top` arguments.
#[derive(Debug, Args)]
pub struct TopArgs {
    /// Codex home to follow (`sessions/`; default: `$CODEX_HOME`, else
    /// `~/.codex`).
    #[arg(long, value_name = "DIR")]
    codex_home: Option<PathBuf>,
    /// Claude Code config dir to follow (`projects/`; default:
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    #[arg(long, value_name = "DIR")]
    claude_dir: Option<PathBuf>,
    /// How many ended sessions to show beside the live ones (newest first).
    #[arg(long, value_name = "N", default_value_t = 20)]
    recent: usize,
    /// Print the sessions once as JSON (`{"sessions": [...], "now"}`, as
    /// the viewer's `GET /api/live` gives them) and exit.
    #[arg(long)]
    json: bool,
    /// Watch by polling, as where inotify cannot be used (for tests).
    #[arg(long, hide = true)]
    poll: bool,
    /// Benchmark (scripts/bench-watch): draw a 50-agent screen this many
    /// times into a terminal backend that writes nowhere, print the times.
    #[arg(long, hide = true, value_name = "DRAWS")]
    measure_redraw: Option<usize>,
}

/// Which sessions the list shows, by provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderFilter {
    /// Every provider.
    All,
    /// One provider.
    Only(Provider),
}

/// Which sessions the list shows, by state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    /// Live and ended.
    All,
    /// Running only.
    Live,
    /// Ended only.
    Ended,
}

/// What the screen shows.
#[derive(Debug, Clone, PartialEq)]
pub enum Mode {
    /// The sessions and their trees.
    List,
    /// One session's events, as `attach` prints them.
    Events {
        /// The session.
        run: RunId,
        /// Its event lines.
        lines: Vec<String>,
        /// The first line shown; `None` follows the end.
        top: Option<usize>,
    },
}

/// What a key asks of the shell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Asked {
    /// Nothing beyond a redraw.
    Nothing,
    /// Open this session's events.
    Events(RunId),
    /// Leave.
    Quit,
}

/// A key, as the screen understands it (the shell maps the terminal's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// ↑ or `k`.
    Up,
    /// ↓ or `j`.
    Down,
    /// Page up.
    PageUp,
    /// Page down.
    PageDown,
    /// Home or `g`.
    First,
    /// End or `G`.
    Last,
    /// Enter.
    Open,
    /// Esc or Backspace.
    Back,
    /// `p`: the next provider filter.
    Provider,
    /// `s`: the next state filter.
    State,
    /// `q` or Ctrl-C.
    Quit,
}

/// The whole screen's state: a pure value the shell updates and draws.
#[derive(Debug, Clone, PartialEq)]
pub struct Top {
    /// Every session known, newest first.
    pub sessions: Vec<Session>,
    /// The selected session's id.
    pub selected: Option<RunId>,
    /// The user moved the selection: it stays on its session. Until then
    /// it follows the top of the list (sessions come in any order, and the
    /// first one loaded is not always the newest).
    pub chosen: bool,
    /// By provider.
    pub provider: ProviderFilter,
    /// By state.
    pub state: StateFilter,
    /// List or events.
    pub mode: Mode,
    /// How the folders are followed (`inotify`, `polling every 1 s`).
    pub watching: String,
    /// Colours allowed (`NO_COLOR` unset).
    pub color: bool,
    /// How many ended sessions the filters let through, the newest
    /// (`--recent`): filtered first, then cut.
    pub recent: usize,
}

impl Top {
    /// An empty screen.
    pub fn new(watching: String, color: bool) -> Self {
        Self {
            sessions: Vec::new(),
            selected: None,
            chosen: false,
            provider: ProviderFilter::All,
            state: StateFilter::All,
            mode: Mode::List,
            watching,
            color,
            recent: usize::MAX,
        }
    }

    /// The same screen showing at most `recent` ended sessions of those the
    /// filters let through.
    pub fn with_recent(mut self, recent: usize) -> Self {
        self.recent = recent;
        self
    }

    /// Puts `session` in (replacing its older self), newest first.
    pub fn upsert(&mut self, session: Session) {
        self.sessions.retain(|known| known.run.id != session.run.id);
        self.sessions.push(session);
        self.sessions.sort_by(|a, b| {
            b.live
                .cmp(&a.live)
                .then(b.run.started_at.cmp(&a.run.started_at))
                .then(a.run.id.as_str().cmp(b.run.id.as_str()))
        });
        if self.selected.is_none() || !self.chosen {
            self.selected = self.visible().first().map(|s| s.run.id.clone());
        }
    }

    /// The sessions the filters let through, in order: every live one and
    /// the [`Top::recent`] newest ended ones (a filter by provider shows
    /// that many of its provider's, not what is left of the newest of all).
    pub fn visible(&self) -> Vec<&Session> {
        let mut ended = 0;
        self.sessions
            .iter()
            .filter(|session| match self.provider {
                ProviderFilter::All => true,
                ProviderFilter::Only(provider) => session.run.provider == provider,
            })
            .filter(|session| {
                match self.state {
                    StateFilter::All => true,
                    StateFilter::Live => session.live,
                    StateFilter::Ended => !session.live,
                }
            })
            .filter(|session| {
                if session.live {
                    return true;
                }
                ended += 1;
                ended <= self.recent
            })
            .collect()
    }

    fn selected_index(&self) -> Option<usize> {
        let visible = self.visible();
        let id = self.selected.as_ref()?;
        visible.iter().position(|session| &session.run.id == id)
    }

    fn select(&mut self, index: usize) {
        let visible = self.visible();
        self.selected = visible
            .get(index.min(visible.len().saturating_sub(1)))
            .map(|session| session.run.id.clone());
    }

    /// Handles one key; `page` is how many lines a page moves.
    pub fn key(&mut self, key: Key, page: usize) -> Asked {
        if let Mode::Events { lines, top, .. } = &mut self.mode {
            let last = lines.len().saturating_sub(page.max(1));
            let at = top.unwrap_or(last);
            let moved = match key {
                Key::Back => {
                    self.mode = Mode::List;
                    return Asked::Nothing;
                }
                Key::Quit => return Asked::Quit,
                Key::Up => at.saturating_sub(1),
                Key::Down => at + 1,
                Key::PageUp => at.saturating_sub(page),
                Key::PageDown => at + page,
                Key::First => 0,
                Key::Last | Key::Open | Key::Provider | Key::State => last,
            };
            *top = (moved < last).then_some(moved);
            return Asked::Nothing;
        }
        let index = self.selected_index();
        if matches!(key, Key::Up | Key::Down | Key::PageUp | Key::PageDown | Key::First | Key::Last) {
            self.chosen = true;
        }
        match key {
            Key::Quit => return Asked::Quit,
            Key::Back => {}
            Key::Up => self.select(index.map_or(0, |i| i.saturating_sub(1))),
            Key::Down => self.select(index.map_or(0, |i| i + 1)),
            Key::PageUp => self.select(index.map_or(0, |i| i.saturating_sub(page / 4 + 1))),
            Key::PageDown => self.select(index.map_or(0, |i| i + page / 4 + 1)),
            Key::First => self.select(0),
            Key::Last => self.select(usize::MAX),
            Key::Open => {
                if let Some(id) = index.and(self.selected.clone()) {
                    return Asked::Events(id);
                }
            }
            Key::Provider => {
                self.provider = match self.provider {
                    ProviderFilter::All => ProviderFilter::Only(Provider::Codex),
                    ProviderFilter::Only(Provider::Codex) => ProviderFilter::Only(Provider::Claude),
                    ProviderFilter::Only(Provider::Claude | Provider::Unknown) => ProviderFilter::All,
                };
                self.keep_a_selection();
            }
            Key::State => {
                self.state = match self.state {
                    StateFilter::All => StateFilter::Live,
                    StateFilter::Live => StateFilter::Ended,
                    StateFilter::Ended => StateFilter::All,
                };
                self.keep_a_selection();
            }
        }
        Asked::Nothing
    }

    fn keep_a_selection(&mut self) {
        if self.selected_index().is_none() {
            self.select(0);
        }
    }

    /// Draws the screen as of `now`.
    pub fn draw(&self, frame: &mut Frame<'_>, now: Timestamp) {
        let [head, body, foot] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Min(0),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let width = usize::from(frame.area().width);
        match &self.mode {
            Mode::List => {
                let visible = self.visible();
                let live = visible.iter().filter(|s| s.live).count();
                frame.render_widget(
                    Paragraph::new(fit(
                        &format!(
                            "agentrace top — {} session{}, {live} live · provider {} · state {} · {}",
                            visible.len(),
                            if visible.len() == 1 { "" } else { "s" },
                            provider_word(self.provider),
                            state_word(self.state),
                            self.watching
                        ),
                        width,
                    ))
                    .style(Style::new().add_modifier(Modifier::BOLD)),
                    head,
                );
                self.draw_list(frame, body, now);
                frame.render_widget(
                    Paragraph::new(fit(
                        "↑↓/jk move  enter events  p provider  s state  q quit",
                        width,
                    )),
                    foot,
                );
            }
            Mode::Events { run, lines, top } => {
                frame.render_widget(
                    Paragraph::new(fit(&format!("agentrace top — events of {run}"), width))
                        .style(Style::new().add_modifier(Modifier::BOLD)),
                    head,
                );
                let height = usize::from(body.height);
                let first = top.unwrap_or(lines.len().saturating_sub(height));
                let shown: Vec<Line<'_>> = lines
                    .iter()
                    .skip(first)
                    .take(height)
                    .map(|line| Line::from(fit(line, width)))
                    .collect();
                frame.render_widget(Paragraph::new(shown), body);
                frame.render_widget(
                    Paragraph::new(fit("↑↓/jk scroll  g/G first/last  esc back  q quit", width)),
                    foot,
                );
            }
        }
    }

    fn draw_list(&self, frame: &mut Frame<'_>, area: Rect, now: Timestamp) {
        let width = usize::from(area.width);
        let mut lines: Vec<Line<'_>> = Vec::new();
        let mut selected_at = 0;
        // Where each session's lines begin.
        let mut starts = Vec::new();
        let visible = self.visible();
        if visible.is_empty() {
            lines.push(Line::from("no sessions yet: start codex or claude, or change the filters"));
        }
        for session in visible {
            let chosen = self.selected.as_ref() == Some(&session.run.id);
            if chosen {
                selected_at = lines.len();
            }
            starts.push(lines.len());
            let style = if chosen {
                Style::new().add_modifier(Modifier::REVERSED)
            } else {
                Style::new().add_modifier(Modifier::BOLD)
            };
            lines.push(Line::from(Span::styled(fit(&session_line(session, now, width), width), style)));
            if !session.agents.is_empty() {
                lines.push(Line::from(Span::styled(fit(&agent_header(), width), Style::new().add_modifier(Modifier::DIM))));
            }
            for agent in &session.agents {
                let text = fit(&agent_line(agent, width, now), width);
                let style = if self.color { agent_style(agent) } else { Style::new() };
                lines.push(Line::from(Span::styled(text, style)));
            }
        }
        // Keep the selected session's line in sight.
        let height = usize::from(area.height);
        let scroll = selected_at.saturating_sub(height.saturating_sub(1) / 2);
        let scroll = scroll.min(lines.len().saturating_sub(height));
        // From the start of a session's lines, not its middle (its agents
        // under no header), when the selected line stays in sight.
        let block = starts.iter().rev().find(|start| **start <= scroll).copied().unwrap_or(scroll);
        let scroll = if selected_at < block + height { block } else { scroll };
        frame.render_widget(
            Paragraph::new(lines).scroll((u16::try_from(scroll).unwrap_or(u16::MAX), 0)),
            area,
        );
    }
}

fn provider_word(filter: ProviderFilter) -> &'static str {
    match filter {
        ProviderFilter::All => "all",
        ProviderFilter::Only(provider) => provider.as_str(),
    }
}

fn state_word(filter: StateFilter) -> &'static str {
    match filter {
        StateFilter::All => "all",
        StateFilter::Live => "live",
        StateFilter::Ended => "ended",
    }
}

fn agent_style(agent: &AgentRow) -> Style {
    // Quiet past the limit: maybe stuck, which is what a glance must catch.
    if agent.silent {
        Style::new().fg(Color::Magenta).add_modifier(Modifier::BOLD)
    } else if agent.state.starts_with("waiting") {
        Style::new().fg(Color::Yellow)
    } else if agent.live {
        Style::new().fg(Color::Green)
    } else if agent.state.contains("failed") || agent.state.contains("unknown") {
        Style::new().fg(Color::Red)
    } else {
        Style::new()
    }
}

/// `<provider> <id> <status> · started 12m ago · 3 agents · 41k tokens · $0.42`;
/// the status is `helpers working` while helpers work on after the root's
/// turn ended, `ended mid-turn` once a session ended with its root's turn
/// open. Within `width` it keeps the figures (agents, tokens, cost,
/// warnings) whole: the age goes first, then the id is cut.
fn session_line(session: &Session, now: Timestamp, width: usize) -> String {
    let run = &session.run;
    // Its status is the root's (SPEC §4), which a session that ended
    // mid-turn (a crash, a kill, idle past the limit) leaves `running`:
    // nothing of it is at work, as `runs` and `watch` say, by the book's
    // `sessionEnded`.
    let status = if session.live && run.status != RunStatus::Running {
        "helpers working"
    } else if run.session_ended {
        "ended mid-turn"
    } else {
        run.status.as_str()
    };
    let started = run.started_at.map(|started| format!("started {} ago", duration(now.millis() - started.millis())));
    let agents = session.agents.iter().filter(|agent| !agent.command).count();
    let mut figures = vec![crate::render::count(agents as u64, "agent", "agents")];
    // Before its first request a run has no tokens, and no cost either (a
    // `$0` then would read as free), as an agent's row leaves both blank.
    if let Some(tokens) = &run.tokens {
        figures.push(match tokens.total_tokens {
            1 => "1 token".to_owned(),
            total => format!("{} tokens", short_tokens(total)),
        });
        figures.push(short_cost(run.cost, run.cost_status));
    }
    // Notes (info level) are no problem: left out, as the run list's WARN.
    match run.problem_count() {
        0 => {}
        count => figures.push(crate::render::count(count as u64, "warning", "warnings")),
    }
    let line = |id: &str, started: Option<&String>| {
        let head = format!("{} {id} {status}", run.provider.as_str());
        std::iter::once(head).chain(started.cloned()).chain(figures.iter().cloned()).collect::<Vec<_>>().join(" · ")
    };
    let whole = line(run.id.as_str(), started.as_ref());
    if whole.chars().count() <= width {
        return whole;
    }
    let ageless = line(run.id.as_str(), None);
    let over = ageless.chars().count().saturating_sub(width);
    if over == 0 {
        return ageless;
    }
    // The id cut by what is too much (to a few characters at least: what
    // still does not fit is cut at the end).
    let id_width = run.id.as_str().chars().count().saturating_sub(over).max(8);
    line(&fit(run.id.as_str(), id_width), None)
}

/// The columns of [`agent_line`], as a header.
fn agent_header() -> String {
    format!("{:<18} {:<19} {:<19} {:>6} {:>7} {:>6}", "agent", "state", "tool now", "tokens", "cost", "silent")
}

/// One agent under its session, in columns that fit 80: label (indented by
/// depth), state, the tool running now and for how long, tokens, cost, and
/// how long it has been silent while live.
fn agent_line(agent: &AgentRow, width: usize, now: Timestamp) -> String {
    // one_line trims, so the tree's indent goes on after it.
    let indent = match agent.depth {
        0 => String::new(),
        depth => format!("{}└ ", "  ".repeat(depth - 1)),
    };
    // A path (a Codex V2 agent, `/root/child_a/child_g`) keeps its end,
    // which names it, as `usage` keeps a folder's: cut at its end, every
    // grandchild of one child read alike.
    let room = 18usize.saturating_sub(indent.chars().count());
    let name = one_line(&agent.label, usize::MAX);
    let count = name.chars().count();
    let name = if name.starts_with('/') && count > room && room > 1 {
        let tail: String = name.chars().skip(count - (room - 1)).collect();
        format!("…{tail}")
    } else {
        fit(&name, room)
    };
    let label = fit(&format!("{indent}{name}"), 18);
    let tool = agent
        .tool
        .as_ref()
        .map(|tool| format!("{} {}", one_line(&tool.name, 12), duration(now.millis() - tool.since.millis())))
        .unwrap_or_default();
    let tokens = agent.tokens.map(short_tokens).unwrap_or_default();
    let silent = match (agent.live, agent.heard_at) {
        (true, Some(heard)) => duration(now.millis() - heard.millis()),
        _ => String::new(),
    };
    let cost = agent.cost_status.map(|status| short_cost(agent.cost, status)).unwrap_or_default();
    // Quiet past the limit (`silent_agent`) is said in words too: without
    // colour (NO_COLOR, a pipe) a stuck helper read as one at work.
    let state = if agent.silent {
        const SILENT: &str = ", silent";
        format!("{}{SILENT}", fit(&one_line(state_text(&agent.state), 19), 19 - SILENT.len()))
    } else {
        one_line(state_text(&agent.state), 19)
    };
    let line = format!("{label:<18} {state:<19} {tool:<19} {tokens:>6} {cost:>7} {silent:>6}");
    fit(line.trim_end(), width)
}

/// A cost in a narrow column: `$1.23`, `<$0.01`, `≥$0.40` (a floor), `$?`
/// (nothing priced), as `usage` marks them.
fn short_cost(cost: Option<f64>, status: CostStatus) -> String {
    let Some(cost) = cost else {
        return "$?".to_owned();
    };
    let floor = if status == CostStatus::Exact { "" } else { "≥" };
    if cost == 0.0 {
        format!("{floor}$0")
    } else if cost < 0.01 {
        format!("{floor}<$0.01")
    } else {
        format!("{floor}${cost:.2}")
    }
}

/// `text` cut to `width` characters.
fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        text.to_owned()
    } else {
        let mut cut: String = text.chars().take(width.saturating_sub(1)).collect();
        cut.push('…');
        cut
    }
}

/// Reads one run as the screen shows it, its warnings as `show` counts
/// them now (the detectors' too, with the home's configuration), and how
/// long until time alone may change them (a helper's silence passing the
/// limit).
fn load(home: &Home, id: &RunId) -> anyhow::Result<(Session, Option<Duration>)> {
    // From the log's snapshot (only what came after it folded): a whole
    // fold of a long session's log at every pass cost more than the pass.
    let fold = home.fold_run(id)?;
    let (view, recheck) = fold.checked_view(home.warnings(), Some(now()));
    let over = fold.book().session_over();
    let recheck = recheck.filter(|_| !over).map(Duration::from_millis);
    Ok((session_of_view(view, fold.book()), recheck))
}

/// When each session shown asks to be judged again though no line came:
/// a stuck helper writes nothing, so no pass would ever mark it silent.
#[derive(Debug, Default)]
struct Rechecks(std::collections::HashMap<RunId, std::time::Instant>);

impl Rechecks {
    /// Loads `id` and puts it on the screen, keeping when to judge it again.
    fn show(&mut self, home: &Home, top: &mut Top, id: &RunId) {
        match load(home, id) {
            Ok((session, recheck)) => {
                top.upsert(session);
                match recheck {
                    Some(after) => {
                        self.0.insert(id.clone(), std::time::Instant::now() + after);
                    }
                    None => {
                        self.0.remove(id);
                    }
                }
            }
            Err(_) => {
                self.0.remove(id);
            }
        }
    }

    /// The sessions whose time to be judged again has come, forgotten here.
    fn due(&mut self) -> Vec<RunId> {
        let now = std::time::Instant::now();
        let due: Vec<RunId> = self.0.iter().filter(|(_, at)| **at <= now).map(|(id, _)| id.clone()).collect();
        for id in &due {
            self.0.remove(id);
        }
        due
    }
}

/// A run's events as `attach` prints them: each envelope (its actor as
/// known then), the record changes and warnings it made, then the
/// detectors' warnings as `show` lists them now, each once. The record
/// changes (a helper admitted, its tool, its end) were left out.
fn event_lines(home: &Home, id: &RunId) -> anyhow::Result<Vec<String>> {
    let config = home.warnings();
    let mut fold = agentrace_store::RunFold::priced(id.clone(), home.prices());
    let mut lines = Vec::new();
    let mut told: Vec<(String, Option<agentrace_core::model::ThreadId>)> = Vec::new();
    let mut tell = |lines: &mut Vec<String>, warning: &agentrace_core::model::Warning| {
        let key = (warning.code.clone(), warning.thread_id.clone());
        if !told.contains(&key) {
            told.push(key);
            lines.push(warning_line(warning));
        }
    };
    fold.follow_each(&home.log_path(id), |envelope, changes, _| {
        lines.push(event_text(envelope));
        lines.extend(changes.records.iter().map(change_line));
        for warning in config.filter(changes.warnings) {
            tell(&mut lines, &warning);
        }
    })?;
    let (view, _) = fold.checked_view(config, Some(now()));
    for warning in &view.warnings {
        tell(&mut lines, warning);
    }
    Ok(lines)
}

/// The runs to show at start: every live one, and the `recent` newest of
/// the others, of all providers and of each (what the `p` filter shows:
/// filtered first, then cut); the catalog's, brought up to the runs folder.
fn shown_at_start(home: &Home, recent: usize) -> anyhow::Result<Vec<RunId>> {
    let catalog = crate::catalog::open(home)?;
    catalog.sync(home)?;
    let mut ids = catalog.live_and_recent(recent)?;
    let at_most = u64::try_from(ids.len().saturating_add(recent)).unwrap_or(u64::MAX);
    for provider in [Provider::Codex, Provider::Claude] {
        let filter = agentrace_store::catalog::RunFilter {
            provider: Some(provider.as_str().to_owned()),
            limit: Some(at_most),
            ..agentrace_store::catalog::RunFilter::default()
        };
        let mut ended = 0;
        for listed in catalog.list_runs(&filter)?.0 {
            if listed.run.at_work() || ended >= recent {
                continue;
            }
            ended += 1;
            if !ids.contains(&listed.run.id) {
                ids.push(listed.run.id);
            }
        }
    }
    Ok(ids)
}

/// Runs `agentrace top`.
pub fn run(home: &Home, args: &TopArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    if let Some(draws) = args.measure_redraw {
        return measure_redraw(draws, out);
    }
    let import = ImportArgs::quiet_of(args.codex_home.clone(), args.claude_dir.clone());
    if args.json || !std::io::stdout().is_terminal() {
        return plain(home, &import, args, out);
    }
    let follower = Follower::start(home, &import, args.poll)?;
    let watching = follower.mode().to_owned();
    let stopper = follower.stopper();
    let (sender, passes) = mpsc::channel::<anyhow::Result<Vec<RunId>>>();
    let follow_home = home.clone();
    let thread = std::thread::spawn(move || {
        follower.follow(&follow_home, &import, |changed| sender.send(changed).is_ok());
    });
    let color = std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
    let mut top = Top::new(watching, color).with_recent(args.recent);
    let mut rechecks = Rechecks::default();
    for id in shown_at_start(home, args.recent)? {
        rechecks.show(home, &mut top, &id);
    }
    let result = screen(home, &mut top, &mut rechecks, &passes);
    stopper.stop();
    let _ = thread.join();
    result?;
    Ok(ExitCode::SUCCESS)
}

/// `top` when stdout is not a terminal (or with `--json`): one pass, then
/// each live and recent session with its records as `status` prints them
/// (or as JSON).
fn plain(home: &Home, import: &ImportArgs, args: &TopArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    crate::commands::import::import(home, import, crate::sources::session_feed::TornLines::Wait)?;
    let now = now();
    let mut top = Top::new(String::new(), false).with_recent(args.recent);
    for id in shown_at_start(home, args.recent)? {
        top.upsert(load(home, &id)?.0);
    }
    if args.json {
        // The live ones first, each part newest first, as the viewer's
        // live page has them.
        let mut sessions: Vec<&Session> = top.visible();
        sessions.sort_by_key(|session| !session.live);
        out.json_pretty(&serde_json::json!({ "sessions": sessions, "now": now }))?;
        out.flush()?;
        return Ok(ExitCode::SUCCESS);
    }
    // Nothing to show is said, as `status` says it of a home with no runs:
    // piped, `top` printed nothing at all.
    if top.visible().is_empty() {
        let none = if args.recent == 0 {
            "no live sessions (`--recent 0` shows no ended one)".to_owned()
        } else {
            format!("no sessions yet in {}", home.runs_dir().display())
        };
        eprintln!("{none}\nhint: start codex or claude (`agentrace top` on a terminal follows them live); `agentrace run codex|claude` records one");
    }
    for session in top.visible() {
        out.line(session_line(session, now, usize::MAX))?;
        if !session.agents.is_empty() {
            out.line(agent_header().trim_end())?;
        }
        for agent in &session.agents {
            out.line(agent_line(agent, usize::MAX, now))?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `--measure-redraw`: a session of 50 live agents (each with a tool
/// running), drawn `draws` times on an 80×60 crossterm backend that writes
/// nowhere, the clock moving each time so every row's durations change.
fn measure_redraw(draws: usize, out: &mut Out) -> anyhow::Result<ExitCode> {
    let at = now();
    let agents = (0..50)
        .map(|index| AgentRow {
            thread_id: format!("thread-{index}"),
            depth: usize::from(index > 0) + usize::from(index % 7 == 3),
            label: format!("helper {index}"),
            state: if index % 5 == 0 { "waiting on approval".to_owned() } else { "working".to_owned() },
            live: true,
            tool: Some(ToolNow { name: "exec_command".to_owned(), input: "cargo test".to_owned(), since: at }),
            tokens: Some(1_000 * index),
            cost: Some(0.12),
            cost_status: Some(CostStatus::Exact),
            heard_at: Some(at),
            silent: index % 11 == 5,
            command: false,
        })
        .collect();
    let run: agentrace_core::state::RunSummary = serde_json::from_value(serde_json::json!({
        "id": "run-bench", "provider": "codex", "source": "codex-rollout", "status": "running",
        "rootThreadId": null, "result": null, "resultSource": null, "error": null,
        "startedAt": at, "updatedAt": at, "endedAt": null,
        "counts": {"events": 0, "unknownActor": 0, "undecodedLines": 0, "unknownFrames": 0, "skippedLogLines": 0, "droppedBytes": 0},
        "tokens": null, "warningCount": 0
    }))?;
    let mut top = Top::new("inotify".to_owned(), true);
    top.upsert(Session { run, live: true, agents });
    let backend = ratatui::backend::CrosstermBackend::new(std::io::sink());
    let mut terminal = ratatui::Terminal::with_options(
        backend,
        ratatui::TerminalOptions { viewport: ratatui::Viewport::Fixed(Rect::new(0, 0, 80, 60)) },
    )?;
    let mut times = Vec::with_capacity(draws);
    for draw in 0..draws {
        let moved = Timestamp::from_millis(at.millis() + 1_000 * i64::try_from(draw).unwrap_or(0));
        let started = std::time::Instant::now();
        terminal.draw(|frame| top.draw(frame, moved))?;
        times.push(started.elapsed());
    }
    times.sort();
    let at_rank = |rank: f64| times.get(((times.len() as f64 - 1.0) * rank).round() as usize).copied().unwrap_or_default();
    out.line(format!(
        "redraw of a 50-agent screen (80x60), {draws} draws: median {:.3} ms, p99 {:.3} ms (target 16 ms)",
        at_rank(0.5).as_secs_f64() * 1e3,
        at_rank(0.99).as_secs_f64() * 1e3
    ))?;
    Ok(ExitCode::SUCCESS)
}

/// Restores the terminal however the screen ends.
struct TerminalGuard {
    stderr: Option<std::os::fd::OwnedFd>,
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
        let _ = crossterm::execute!(
            std::io::stdout(),
            crossterm::terminal::LeaveAlternateScreen,
            crossterm::cursor::Show
        );
        if let Some(saved) = self.stderr.take() {
            let _ = nix::unistd::dup2_stderr(saved);
        }
    }
}

/// The terminal loop: keys, passes of the follower, a redraw each second
/// (times move) and after each change.
fn screen(home: &Home, top: &mut Top, rechecks: &mut Rechecks, passes: &mpsc::Receiver<anyhow::Result<Vec<RunId>>>) -> anyhow::Result<()> {
    use crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};

    // What the import writes on stderr (a skipped line, a shrunk file)
    // would tear the screen: it goes to a file while the screen is up.
    let saved = match home.create_top_log() {
        Ok(file) => {
            let saved = nix::unistd::dup(std::io::stderr()).ok();
            if saved.is_some() {
                let _ = nix::unistd::dup2_stderr(&file);
            }
            saved
        }
        Err(_) => None,
    };
    let _guard = TerminalGuard { stderr: saved };
    crossterm::terminal::enable_raw_mode().context("cannot put the terminal in raw mode")?;
    crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen, crossterm::cursor::Hide)?;
    let mut terminal = ratatui::Terminal::new(ratatui::backend::CrosstermBackend::new(std::io::stdout()))?;
    loop {
        let now = now();
        terminal.draw(|frame| top.draw(frame, now))?;
        // Everything the follower finished since, at once, judged by the
        // home's warning config as the pass judged its records.
        while let Ok(pass) = passes.try_recv() {
            let home = &crate::home_files::read_or_keep(home);
            for id in pass? {
                rechecks.show(home, top, &id);
                if let Mode::Events { run, lines, .. } = &mut top.mode {
                    if run == &id {
                        *lines = event_lines(home, &id)?;
                    }
                }
            }
        }
        // A session no pass brought, judged again as it asked: a helper's
        // silence passed the limit with no line written.
        let due = rechecks.due();
        if !due.is_empty() {
            let home = &crate::home_files::read_or_keep(home);
            for id in due {
                rechecks.show(home, top, &id);
            }
        }
        if !event::poll(Duration::from_millis(250))? {
            continue;
        }
        let page = usize::from(terminal.size()?.height.saturating_sub(2));
        let key = match event::read()? {
            Event::Key(key) if key.kind != KeyEventKind::Release => match key.code {
                KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Key::Quit,
                KeyCode::Char('q') => Key::Quit,
                KeyCode::Up | KeyCode::Char('k') => Key::Up,
                KeyCode::Down | KeyCode::Char('j') => Key::Down,
                KeyCode::PageUp => Key::PageUp,
                KeyCode::PageDown | KeyCode::Char(' ') => Key::PageDown,
                KeyCode::Home | KeyCode::Char('g') => Key::First,
                KeyCode::End | KeyCode::Char('G') => Key::Last,
                KeyCode::Enter => Key::Open,
                KeyCode::Esc | KeyCode::Backspace => Key::Back,
                KeyCode::Char('p') => Key::Provider,
                KeyCode::Char('s') => Key::State,
                _ => continue,
            },
            _ => continue,
        };
        match top.key(key, page) {
            Asked::Nothing => {}
            Asked::Quit => return Ok(()),
            Asked::Events(id) => {
                top.mode = Mode::Events {
                    lines: event_lines(home, &id)?,
                    run: id,
                    top: None,
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use agentrace_core::book::RunBook;
    use agentrace_core::recorder::Format;
    use agentrace_core::{InputLine, Recorder};
    use ratatui::backend::TestBackend;

    use super::*;

    /// The Codex V1 capture fed up to `lines` of its server's stdout: the
    /// session as `top` shows it then.
    /// The whole `v1_basic` session as run `id`, started at `started`.
    fn v1_basic_as(id: &str, started: &str) -> Session {
        let mut session = v1_basic(usize::MAX);
        session.run.id = RunId::from(id);
        session.run.started_at = Timestamp::parse(started);
        session
    }

    fn v1_basic(lines: usize) -> Session {
        v1_basic_ended(lines, false)
    }

    /// [`v1_basic`], its session ended there (`session_ended`, idle) when
    /// `ended`.
    fn v1_basic_ended(lines: usize, ended: bool) -> Session {
        capture_cut("v1_basic", lines, ended)
    }

    /// The Codex capture `name` fed up to `lines` of its server's stdout,
    /// its session ended there when `ended`.
    fn capture_cut(name: &str, lines: usize, ended: bool) -> Session {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex").join(name).join("server.jsonl");
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let at = Timestamp::parse("2026-11-29T23:03:28.000Z").unwrap_or_else(|| panic!("time"));
        let mut recorder = Recorder::new(RunId::from("run-top"), Format::CodexAppServer);
        let mut book = RunBook::new(RunId::from("run-top"));
        let mut envelopes = recorder.start(at);
        for (number, line) in bytes.split(|byte| *byte == b'\n').take(lines).enumerate() {
            envelopes.extend(recorder.push(&InputLine {
                bytes: line,
                line_number: number as u64 + 1,
                observed_at: at,
                direction: None,
                truncated_from: None,
            }));
        }
        if ended {
            envelopes.extend(recorder.end_session(at, agentrace_core::model::SessionEndReason::Idle));
        }
        for envelope in &envelopes {
            book.apply(envelope);
        }
        let view = book.state().view();
        agentrace_core::overview::session_of(view.run, &view.agents, &book.records(), book.session_over())
    }

    /// The line of the child's tool call: the capture cut there has the
    /// helper working, its command open.
    fn while_the_helper_runs_its_command() -> usize {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/codex/v1_basic/server.jsonl");
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{e}"));
        let started = text
            .lines()
            .position(|line| line.contains("\"item/started\"") && line.contains("commandExecution"))
            .unwrap_or_else(|| panic!("no command in the capture"));
        started + 1
    }

    fn screen(top: &Top, now: Timestamp) -> String {
        let mut terminal = ratatui::Terminal::new(TestBackend::new(80, 24)).unwrap_or_else(|e| panic!("{e}"));
        terminal.draw(|frame| top.draw(frame, now)).unwrap_or_else(|e| panic!("{e}"));
        let buffer = terminal.backend().buffer();
        (0..buffer.area.height)
            .map(|y| {
                let row: String = (0..buffer.area.width).map(|x| buffer[(x, y)].symbol().to_owned()).collect();
                row.trim_end().to_owned()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// At 80 columns a session's row keeps its figures (agents, tokens,
    /// cost) and cuts its id instead: the whole id ran the row past the
    /// tokens and cost.
    #[test]
    fn an_80_column_row_keeps_a_sessions_figures_and_cuts_its_id() {
        let mut top = Top::new("inotify".to_owned(), false);
        top.upsert(v1_basic_as("codex-01a2299e-44a1-7231-998e-152aa90005cc", "2026-11-29T23:03:28.000Z"));
        let now = Timestamp::parse("2026-12-06T10:03:28.000Z").unwrap_or_else(|| panic!("time"));
        let screen = screen(&top, now);
        assert_eq!(screen.lines().nth(1), Some("codex codex-01a2299e-44a1-7231-998e-152aa9000… done · 2 agents · 33k tokens · $?"), "{screen}");
    }

    /// Before its first request a session's row has no cost (a `$0` would
    /// read as free), as its agents' rows have none, and one agent is `1
    /// agent`.
    #[test]
    fn a_session_before_its_first_request_shows_no_cost_and_one_agent_as_one() {
        let mut top = Top::new("inotify".to_owned(), false);
        top.upsert(v1_basic(3));
        let now = Timestamp::parse("2026-11-29T23:03:30.000Z").unwrap_or_else(|| panic!("time"));
        let screen = screen(&top, now);
        assert_eq!(screen.lines().nth(1), Some("codex run-top running · started 2.0s ago · 1 agent"), "{screen}");
    }

    /// An agent's label that is a path (a Codex V2 agent, `/root/child_a/
    /// child_g`) keeps its end, which names it, as `usage` keeps a
    /// folder's: cut at its end, a grandchild read `/root/child_a…`, the
    /// same as each of its siblings would.
    #[test]
    fn a_path_label_keeps_its_end_at_80_columns() {
        let mut top = Top::new("inotify".to_owned(), false);
        top.upsert(capture_cut("real_model_nested", usize::MAX, false));
        let now = Timestamp::parse("2026-11-29T23:10:00.000Z").unwrap_or_else(|| panic!("time"));
        let drawn = screen(&top, now);
        let labels: Vec<String> = drawn.lines().skip(3).take(3).map(|line| line.chars().take(18).collect::<String>().trim_end().to_owned()).collect();
        assert_eq!(labels, ["Main", "└ /root/child_a", "  └ …ild_a/child_g"], "{drawn}");
    }

    /// A session that ended mid-turn (its files still past the idle limit,
    /// a crash, a kill) is not at work: its row says so, as `runs` and
    /// `show` do, where it read `running` above agents all `ended unknown`.
    #[test]
    fn a_session_ended_mid_turn_reads_ended_mid_turn_not_running() {
        let mut top = Top::new("inotify".to_owned(), false);
        top.upsert(v1_basic_ended(while_the_helper_runs_its_command(), true));
        let now = Timestamp::parse("2026-11-29T23:13:28.000Z").unwrap_or_else(|| panic!("time"));
        let drawn = screen(&top, now);
        let rows: Vec<&str> = drawn.lines().skip(1).take(4).collect();
        assert_eq!(
            rows,
            [
                "codex run-top ended mid-turn · started 10m00s ago · 2 agents · 5.4k tokens · $?",
                "agent              state               tool now            tokens    cost silent",
                "Main               ended unknown                             5.4k      $?",
                "└ Helper 1         ended unknown",
            ],
            "{drawn}"
        );
    }

    #[test]
    fn a_live_session_shows_its_helper_working_with_the_tool_it_runs_and_for_how_long() {
        let session = v1_basic(while_the_helper_runs_its_command());
        let helper = session.agents.iter().find(|agent| agent.depth == 1).unwrap_or_else(|| panic!("{session:#?}"));
        assert_eq!((helper.state.as_str(), helper.live), ("working", true));
        assert!(helper.tool.is_some(), "{helper:#?}");
        let mut top = Top::new("inotify".to_owned(), false);
        top.upsert(session);
        let now = Timestamp::parse("2026-11-29T23:03:40.000Z").unwrap_or_else(|| panic!("time"));
        insta::assert_snapshot!(screen(&top, now));
    }

    #[test]
    fn an_ended_session_shows_how_each_agent_ended() {
        let mut top = Top::new("inotify".to_owned(), false);
        top.upsert(v1_basic(usize::MAX));
        let now = Timestamp::parse("2026-11-29T23:10:00.000Z").unwrap_or_else(|| panic!("time"));
        insta::assert_snapshot!(screen(&top, now));
    }

    /// An interrupted helper reads `ended interrupted`, as `status` and
    /// `show` say it, while `top --json` keeps the overview's `ended
    /// cancelled`: `top` said `ended cancelled`.
    #[test]
    fn an_interrupted_helper_reads_interrupted_as_status_says_it() {
        let session = capture_cut("v2_interrupt_agent", usize::MAX, true);
        let states: Vec<String> = session.agents.iter().map(|agent| agent.state.clone()).collect();
        let mut top = Top::new("inotify".to_owned(), false);
        top.upsert(session);
        let now = Timestamp::parse("2026-11-29T23:10:00.000Z").unwrap_or_else(|| panic!("time"));
        let drawn = screen(&top, now);
        // The agents' rows, to the end of the state column.
        let rows: Vec<String> = drawn.lines().skip(3).take(2).map(|row| row.chars().take(38).collect::<String>().trim_end().to_owned()).collect();
        assert_eq!(
            (states, rows),
            (
                vec!["ended done".to_owned(), "ended cancelled".to_owned()],
                vec!["Main               ended done".to_owned(), "└ /root/child_a    ended interrupted".to_owned()]
            ),
            "{drawn}"
        );
    }

    /// Sessions loaded oldest first leave the newest selected, at the top;
    /// once the user moves, the selection stays where they put it.
    #[test]
    fn the_selection_follows_the_top_of_the_list_until_the_user_moves_it() {
        let mut top = Top::new(String::new(), false);
        top.upsert(v1_basic_as("run-older", "2026-11-28T10:00:00.000Z"));
        top.upsert(v1_basic(usize::MAX));
        assert_eq!(top.selected, Some(RunId::from("run-top")));
        assert_eq!(top.key(Key::Down, 20), Asked::Nothing);
        top.upsert(v1_basic_as("run-newest", "2026-11-30T10:00:00.000Z"));
        assert_eq!((top.selected.clone(), top.visible().first().map(|s| s.run.id.clone())), (Some(RunId::from("run-older")), Some(RunId::from("run-newest"))));
    }

    /// A list scrolled to its selection starts at a session's first line,
    /// not among the agents of the one above it.
    #[test]
    fn a_scrolled_list_starts_at_a_sessions_first_line() {
        let mut top = Top::new("inotify".to_owned(), false);
        for n in 0..12 {
            top.upsert(v1_basic_as(&format!("run-{n:02}"), &format!("2026-11-29T10:{n:02}:00.000Z")));
        }
        assert_eq!(top.key(Key::Last, 20), Asked::Nothing);
        let now = Timestamp::parse("2026-11-29T23:10:00.000Z").unwrap_or_else(|| panic!("time"));
        let drawn = screen(&top, now);
        let first = drawn.lines().nth(1).unwrap_or_default();
        assert!(first.starts_with("codex run-"), "{drawn}");
    }

    #[test]
    fn keys_move_between_sessions_filter_them_open_events_and_quit() {
        let mut top = Top::new(String::new(), false);
        top.upsert(v1_basic(usize::MAX));
        top.upsert(v1_basic_as("run-older", "2026-11-28T10:00:00.000Z"));
        assert_eq!(top.selected, Some(RunId::from("run-top")));
        assert_eq!(top.key(Key::Down, 20), Asked::Nothing);
        assert_eq!(top.selected, Some(RunId::from("run-older")));
        assert_eq!(top.key(Key::Down, 20), Asked::Nothing);
        assert_eq!(top.selected, Some(RunId::from("run-older")), "the last stays selected");
        assert_eq!(top.key(Key::Open, 20), Asked::Events(RunId::from("run-older")));
        top.mode = Mode::Events { run: RunId::from("run-older"), lines: vec!["a".into(), "b".into()], top: None };
        assert_eq!(top.key(Key::Back, 20), Asked::Nothing);
        assert_eq!(top.mode, Mode::List);
        assert_eq!(top.key(Key::Provider, 20), Asked::Nothing);
        assert_eq!(top.provider, ProviderFilter::Only(Provider::Codex));
        assert_eq!(top.visible().len(), 2);
        assert_eq!(top.key(Key::Provider, 20), Asked::Nothing);
        assert_eq!(top.visible().len(), 0, "no Claude session");
        assert_eq!(top.key(Key::Provider, 20), Asked::Nothing);
        assert_eq!(top.key(Key::State, 20), Asked::Nothing);
        assert_eq!((top.state, top.visible().len()), (StateFilter::Live, 0));
        assert_eq!(top.key(Key::Quit, 20), Asked::Quit);
    }
}
