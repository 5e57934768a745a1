//! Following the sessions already on disk as they are written: `agentrace
//! top` in a real terminal (tmux runs it at 80 columns; `send-keys` presses
//! its keys and `capture-pane` reads the screen), `watch`'s notifications,
//! and `serve --watch`'s live stream.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use super::import_usage::{Growth, Homes, Provider};
use super::support::Cli;

/// A tmux server of its own (its own socket), killed when dropped.
struct Tmux {
    socket: String,
}

impl Tmux {
    /// Starts `command` in a window `columns` wide and 24 lines high.
    fn start_sized(command: &str, columns: u16) -> Self {
        // A server per test: tests of one process run at once.
        static STARTED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let number = STARTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("agentrace-top-{}-{number}", std::process::id());
        let tmux = Tmux { socket };
        let status = tmux
            .command(&["new-session", "-d", "-s", "top", "-x", &columns.to_string(), "-y", "24", command])
            .status()
            .unwrap_or_else(|e| panic!("tmux: {e}"));
        assert!(status.success(), "tmux new-session: {status}");
        tmux
    }

    /// `agentrace top` of `cli`'s home over `homes`' folders, without
    /// colour; when it exits, the window says `top-exited=<status>`.
    fn top(cli: &Cli, homes: &Homes) -> Self {
        Self::top_sized(cli, homes, 80)
    }

    /// [`Tmux::top`] in a window `columns` wide.
    fn top_sized(cli: &Cli, homes: &Homes, columns: u16) -> Self {
        Self::start_sized(&format!(
            "env AGENTRACE_HOME={} NO_COLOR=1 {} top --codex-home {} --claude-dir {}; echo top-exited=$?; sleep 30",
            quoted(cli.home.path()),
            quoted(Path::new(env!("CARGO_BIN_EXE_agentrace"))),
            quoted(&homes.of(Provider::Codex)),
            quoted(&homes.of(Provider::Claude)),
        ), columns)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new("tmux");
        command.arg("-L").arg(&self.socket).args(args);
        command
    }

    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "top"];
        args.extend_from_slice(keys);
        let status = self.command(&args).status().unwrap_or_else(|e| panic!("tmux: {e}"));
        assert!(status.success(), "tmux send-keys: {status}");
    }

    /// The screen with its wrapped lines joined: each line as the program
    /// wrote it.
    fn joined_screen(&self) -> String {
        let output = self.command(&["capture-pane", "-p", "-J", "-t", "top"]).output().unwrap_or_else(|e| panic!("tmux: {e}"));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    fn screen(&self) -> String {
        let output = self.command(&["capture-pane", "-p", "-t", "top"]).output().unwrap_or_else(|e| panic!("tmux: {e}"));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Waits (at most 20 s) for the screen to satisfy `wanted`.
    fn wait_for(&self, what: &str, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let screen = self.screen();
            if wanted(&screen) {
                return screen;
            }
            assert!(Instant::now() < deadline, "never saw {what}; the screen:\n{screen}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).status();
    }
}

/// The first command's progress bar never goes backwards: Claude's
/// sessions are counted before Codex's (which are listed while Claude's
/// are imported), and the bar drew `5/5` and then fell back to `5/10`. Until
/// the total is final it shows a count alone; every bar it draws (all the
/// bytes the terminal got, by `pipe-pane`) has the final total, and its
/// count never falls.
#[test]
fn the_first_commands_progress_bar_never_goes_backwards() {
    if Command::new("tmux").arg("-V").output().is_err() {
        panic!("tmux is needed (scripts/test installs it)");
    }
    let dir = super::import_usage::homes(&["v1_basic", "v1_parallel", "v2_basic", "real_model_nested", "v1_roles"], &["single_bg", "nested_fg", "parallel_fg", "single_fg", "bash_then_agent_fg"]);
    let cli = Cli::new();
    let typescript = cli.home.path().with_extension("typescript");
    // The command waits for Enter, so the terminal is recorded from its
    // first byte.
    let tmux = Tmux::start_sized(&format!(
        "read go; env AGENTRACE_HOME={} CODEX_HOME={} CLAUDE_CONFIG_DIR={} NO_COLOR=1 {}; echo first-exited=$?; sleep 30",
        quoted(cli.home.path()),
        quoted(&dir.path().join("codex")),
        quoted(&dir.path().join("claude")),
        quoted(Path::new(env!("CARGO_BIN_EXE_agentrace"))),
    ), 120);
    let status = tmux.command(&["pipe-pane", "-o", "-t", "top", &format!("cat > {}", quoted(&typescript))]).status().unwrap_or_else(|e| panic!("tmux: {e}"));
    assert!(status.success(), "tmux pipe-pane: {status}");
    tmux.keys(&["Enter"]);
    tmux.wait_for("the first command to end", |screen| screen.contains("first-exited=0"));
    let written = std::fs::read(&typescript).unwrap_or_else(|e| panic!("{e}"));
    let written = String::from_utf8_lossy(&written);
    // Each drawing of the bar, `importing [===>  ] 6/10 sessions`.
    let drawn: Vec<(u64, u64)> = written
        .split("importing [")
        .skip(1)
        .filter_map(|drawing| {
            let figures = drawing.split("] ").nth(1)?.split(" sessions").next()?;
            let (done, total) = figures.split_once('/')?;
            Some((done.parse().ok()?, total.parse().ok()?))
        })
        .collect();
    let mut totals: Vec<u64> = drawn.iter().map(|(_, total)| *total).collect();
    totals.dedup();
    let counts: Vec<u64> = drawn.iter().map(|(done, _)| *done).collect();
    let mut rising = counts.clone();
    rising.sort_unstable();
    assert_eq!((totals, counts.last().copied(), counts), (vec![10], Some(10), rising), "{written}");
}

/// A capture's helper (the first file a spawn made) and, in writing order,
/// where its last line comes.
fn helper_of(growth: &Growth) -> (usize, usize) {
    let file = growth
        .files
        .iter()
        .position(|file| file.lines.first().is_some_and(|line| String::from_utf8_lossy(line).contains("thread_spawn")))
        .unwrap_or_else(|| panic!("no helper file"));
    let last = growth.order.iter().rposition(|at| at.0 == file).unwrap_or_else(|| panic!("order"));
    (file, last)
}

/// The screen line of the root's helper (the tree's first child).
fn helper_row(screen: &str) -> Option<&str> {
    screen.lines().find(|line| line.starts_with("└ "))
}

fn quoted(path: &Path) -> String {
    format!("'{}'", path.display())
}

/// Waits (at most `seconds`, looking every 100 ms) until `done` holds;
/// past that, fails with what `why` says.
fn wait_until(seconds: u64, mut done: impl FnMut() -> bool, why: impl FnOnce() -> String) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !done() {
        assert!(Instant::now() < deadline, "{}", why());
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `top` follows a Codex session as it is written: while the helper runs
/// its command, its row reads `working` with that tool; once the session
/// is over it reads `ended succeeded`, under a `done` session. Enter shows
/// the session's events, Esc comes back, `p` filters by provider, `q`
/// quits; nothing is wider than 80 columns.
#[test]
fn top_shows_a_growing_codex_session_live_in_80_columns_and_answers_its_keys() {
    if Command::new("tmux").arg("-V").output().is_err() {
        panic!("tmux is needed (scripts/test installs it)");
    }
    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    // Up to the helper's command (its function_call) and no further.
    let (helper_file, _) = helper_of(&growth);
    let call = growth.files[helper_file]
        .lines
        .iter()
        .position(|line| {
            let text = String::from_utf8_lossy(line);
            text.contains("\"function_call\"") && text.contains("exec_command")
        })
        .unwrap_or_else(|| panic!("no command in the helper's file"));
    let cut = growth.order.iter().position(|at| *at == (helper_file, call)).unwrap_or_else(|| panic!("order")) + 1;
    growth.write(&homes, 0..cut, true);
    let cli = Cli::new();
    let tmux = Tmux::top(&cli, &homes);
    let live = tmux.wait_for("the helper working", |screen| {
        screen.contains("1 live") && helper_row(screen).is_some_and(|row| row.contains("working"))
    });
    let helper = helper_row(&live).unwrap_or_default();
    let status = cli.run(&["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    let tool = status
        .lines()
        .find_map(|line| line.split("  ").find(|column| column.contains(':')).map(|column| column.split(':').next().unwrap_or("").trim().to_owned()))
        .unwrap_or_else(|| panic!("status names no tool:\n{status}"));
    let shown: String = tool.chars().take(11).collect();
    assert!(helper.contains(&shown), "the helper's row names its tool {tool}: {helper}\n{live}");
    assert!(live.lines().all(|line| line.chars().count() <= 80), "{live}");

    growth.write(&homes, cut..growth.order.len(), true);
    let ended = tmux.wait_for("the session ended", |screen| {
        screen.contains("0 live") && screen.lines().any(|line| line.contains("ended succeeded"))
    });
    assert!(ended.lines().any(|line| line.starts_with("codex ") && line.contains(" done ")), "{ended}");

    tmux.keys(&["Enter"]);
    let events = tmux.wait_for("the events", |screen| screen.contains("events of"));
    assert!(events.contains("turn_started") || events.contains("turn started") || events.lines().count() > 5, "{events}");
    tmux.keys(&["Escape"]);
    tmux.wait_for("the list again", |screen| screen.contains("provider all"));
    tmux.keys(&["p"]);
    tmux.wait_for("the provider filter", |screen| screen.contains("provider codex") && screen.contains("1 session"));
    tmux.keys(&["p"]);
    tmux.wait_for("no Claude session", |screen| screen.contains("provider claude") && screen.contains("0 sessions"));
    tmux.keys(&["q"]);
    tmux.wait_for("top to quit", |screen| screen.contains("top-exited=0"));
}

/// Enter shows a session's events as `attach` prints them: each event,
/// the record changes it made (a helper admitted, its tool, its end) and
/// the warnings, line for line (the record changes were left out, so the
/// view said nothing of how a helper ended but the raw events).
#[test]
fn tops_events_view_shows_a_session_as_attach_prints_it() {
    const COLUMNS: usize = 200;
    let cli = Cli::new();
    let run = cli.ingest(&super::support::capture("v1_basic"), &["--quiet"]);
    let attached = cli.ok(&["attach", &run]);
    let homes = Homes::new();
    let tmux = Tmux::top_sized(&cli, &homes, u16::try_from(COLUMNS).unwrap_or(u16::MAX));
    tmux.wait_for("the session", |screen| screen.contains("1 session"));
    tmux.keys(&["Enter"]);
    let events = tmux.wait_for("the events", |screen| screen.contains("events of"));
    // The view follows the end: the last lines, each cut to the window.
    let shown: Vec<&str> = events.lines().skip(1).take(22).collect();
    let cut = |line: &str| -> String {
        if line.chars().count() <= COLUMNS {
            line.trim_end().to_owned()
        } else {
            line.chars().take(COLUMNS - 1).chain(std::iter::once('…')).collect()
        }
    };
    let lines: Vec<&str> = attached.lines().collect();
    let expected: Vec<String> = lines[lines.len().saturating_sub(22)..].iter().map(|line| cut(line)).collect();
    assert!(expected.iter().any(|line| line.starts_with("  updated ") || line.starts_with("  ended ")), "no record change in the view's lines:\n{attached}");
    assert_eq!(shown, expected, "{events}");
    tmux.keys(&["q"]);
    tmux.wait_for("top to quit", |screen| screen.contains("top-exited=0"));
}

/// `top` judges what each pass brings by the home's warning config as it
/// is then, as the pass judged the run's record: a helper rule written
/// while `top` runs counts on the session's line once its session grows
/// (it kept the config it started with, and said 1 warning where `runs`
/// said 2).
#[test]
fn top_counts_warnings_by_the_home_config_as_it_is_at_each_pass() {
    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    let cli = Cli::new();
    // Wide enough for the session's line to reach its warnings.
    let tmux = Tmux::top_sized(&cli, &homes, 200);
    tmux.wait_for("the session live", |screen| screen.contains("1 live"));
    std::fs::write(
        cli.home.path().join("warnings.json"),
        r#"{"helperRules":[{"toolKind":"command","description":"helpers must not run commands"}],"silentAfterSecs":100000000}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    growth.write(&homes, helper_last..growth.order.len(), true);
    // The rule's warning; the rollout's note (`replayed_history`) is no
    // problem and not counted.
    let ended = tmux.wait_for("the session ended with the rule's warning", |screen| {
        screen.contains("0 live") && screen.lines().any(|line| line.starts_with("codex ") && line.contains(" · 1 warning"))
    });
    let listed: serde_json::Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(listed["runs"][0]["warningCount"], 2, "{listed}\n{ended}");
    tmux.keys(&["q"]);
    tmux.wait_for("top to quit", |screen| screen.contains("top-exited=0"));
}

/// The `single_bg` capture written into new homes up to the root's first
/// answer (its background helper at work), with where that cut is and a
/// CLI to read them.
fn single_bg_written_through_the_roots_first_answer() -> (Growth, Homes, usize, Cli) {
    let growth = Growth::of(Provider::Claude, "single_bg");
    let homes = Homes::new();
    let cut = growth.through_the_roots_first_answer();
    growth.write(&homes, 0..cut, true);
    (growth, homes, cut, Cli::new())
}

/// A Claude root whose turn ended while its background helper works on is
/// not an ended session in `top`: it stays live, its line says `helpers
/// working` and the root's row `waiting on helpers` (it read `done`, `0
/// live` and `ended done` above a helper at work). Once the helper and the
/// root's last turn are written, the session is done.
#[test]
fn top_keeps_a_session_live_while_a_background_helper_works_after_the_roots_turn() {
    let (growth, homes, cut, cli) = single_bg_written_through_the_roots_first_answer();
    let tmux = Tmux::top(&cli, &homes);
    let waiting = tmux.wait_for("the helper at work", |screen| helper_row(screen).is_some_and(|row| row.contains("working")));
    let line_of = |start: &str| waiting.lines().find(|line| line.starts_with(start)).unwrap_or_default().to_owned();
    assert_eq!(
        (line_of("agentrace top").contains("1 session, 1 live"), line_of("claude ").contains(" helpers working · "), line_of("Main").contains(" waiting on helpers ")),
        (true, true, true),
        "{waiting}"
    );
    // The state filter counts it live.
    tmux.keys(&["s"]);
    tmux.wait_for("the live filter", |screen| screen.contains("state live") && screen.contains("1 session, 1 live"));
    tmux.keys(&["s"]);
    tmux.wait_for("the ended filter", |screen| screen.contains("state ended") && screen.contains("0 sessions"));
    tmux.keys(&["s"]);
    growth.write(&homes, cut..growth.order.len(), true);
    let ended = tmux.wait_for("the session ended", |screen| screen.contains("state all") && screen.contains("0 live") && screen.lines().any(|line| line.starts_with("Main") && line.contains("ended done")));
    assert!(ended.lines().any(|line| line.starts_with("claude ") && line.contains(" done · ")), "{ended}");
    tmux.keys(&["q"]);
    tmux.wait_for("top to quit", |screen| screen.contains("top-exited=0"));
}

/// `watch`'s text line for a Claude session whose root's turn ended while
/// its background helper works on says the helpers work, as `runs` and
/// `top` do: it said `<run id> done`, which read as the session's end. Once
/// the helper's report and the root's last turn are written, the line says
/// `done` alone.
#[test]
fn watch_says_a_session_is_not_done_while_its_helpers_work_after_the_roots_turn() {
    use super::import_usage::Watch;

    let (growth, homes, cut, cli) = single_bg_written_through_the_roots_first_answer();
    let runs = || -> Vec<serde_json::Value> {
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"]))
            .ok()
            .and_then(|listed| listed["runs"].as_array().cloned())
            .unwrap_or_default()
    };
    let watch = Watch::start(&cli, &homes, &[]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    wait_until(20, || runs().first().is_some_and(|run| run["helpersWorking"] == true), || format!("the helper was never at work: {:?}", runs()));
    growth.write(&homes, cut..growth.order.len(), true);
    let over = || runs().first().is_some_and(|run| run["status"] == "done" && run.get("helpersWorking").is_none());
    wait_until(20, over, || format!("the session never ended: {:?}", runs()));
    // The pass that recorded the end has printed it by the time the record
    // reads so; a moment for its line to be flushed.
    std::thread::sleep(Duration::from_millis(500));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let id = runs().first().and_then(|run| run["id"].as_str().map(str::to_owned)).unwrap_or_else(|| panic!("no run"));
    let mut lines: Vec<&str> = stdout.lines().collect();
    lines.dedup();
    // Between the two, the root's next turn (the helper's report) may be
    // caught running; the first line and the last are what the files said
    // before and after.
    assert_eq!(
        (lines.first().copied(), lines.last().copied()),
        (Some(format!("{id} done (helpers working)").as_str()), Some(format!("{id} done").as_str())),
        "{stdout}"
    );
}

/// `watch`'s text line for a session that ended with its root's turn open
/// (its files still past the idle limit) says so, as `runs` and `top` do:
/// it said `<run id> running`, of a session nothing is at work in.
#[test]
fn watch_says_a_session_that_ended_mid_turn_is_not_running() {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Claude, "single_fg");
    let homes = Homes::new();
    // Up to the root's answer, not with it: its turn is open.
    growth.write(&homes, 0..growth.through_the_roots_first_answer() - 1, true);
    // Still for longer than the limit the watch is given.
    std::thread::sleep(Duration::from_millis(2100));
    let cli = Cli::new();
    let runs = || -> Vec<serde_json::Value> {
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"]))
            .ok()
            .and_then(|listed| listed["runs"].as_array().cloned())
            .unwrap_or_default()
    };
    let watch = Watch::start(&cli, &homes, &["--idle-limit", "1"]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    wait_until(20, || runs().first().is_some_and(|run| run["sessionEnded"] == true), || format!("the session never ended: {:?}", runs()));
    std::thread::sleep(Duration::from_millis(500));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let id = runs().first().and_then(|run| run["id"].as_str().map(str::to_owned)).unwrap_or_else(|| panic!("no run"));
    assert_eq!(stdout, format!("{id} running (ended mid-turn)\n"));
}

/// Not on a terminal, `top` prints each session and its agents once, as
/// rows of text.
#[test]
fn top_without_a_terminal_prints_its_rows_once() {
    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    growth.write(&homes, 0..growth.order.len(), true);
    let cli = Cli::new();
    let codex = homes.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let output = cli.run(&["top", "--codex-home", &codex, "--claude-dir", &claude]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 4, "{stdout}");
    assert!(lines[0].starts_with("codex ") && lines[0].contains(" done · "), "{stdout}");
    assert_eq!(lines[1].split_whitespace().collect::<Vec<_>>(), ["agent", "state", "tool", "now", "tokens", "cost", "silent"]);
    assert!(lines[2].starts_with("Main ") && lines[2].contains("ended done"), "{stdout}");
    assert!(lines[3].starts_with("└ ") && lines[3].contains("ended succeeded"), "{stdout}");
}

/// `top --recent N` with a provider filter shows the `N` newest ended
/// sessions of that provider: the filter is applied before the cut. It was
/// applied after, so with the one newest session a Codex one, `p` on
/// Claude showed none of the Claude sessions there were.
#[test]
fn top_filters_by_provider_before_it_keeps_the_newest_ended_sessions() {
    let homes = Homes::new();
    // The Claude capture started before the Codex one.
    for (provider, capture) in [(Provider::Codex, "v1_basic"), (Provider::Claude, "single_fg")] {
        let growth = Growth::of(provider, capture);
        growth.write(&homes, 0..growth.order.len(), true);
    }
    let cli = Cli::new();
    // Imported before: `top`'s own pass finds nothing new, and what it
    // shows is what it loads of the catalog.
    let (codex_home, claude_dir) = (homes.of(Provider::Codex).to_string_lossy().into_owned(), homes.of(Provider::Claude).to_string_lossy().into_owned());
    cli.ok(&["import", "--quiet", "--codex-home", &codex_home, "--claude-dir", &claude_dir]);
    let tmux = Tmux::start_sized(
        &format!(
            "env AGENTRACE_HOME={} NO_COLOR=1 {} top --recent 1 --codex-home {} --claude-dir {}; echo top-exited=$?; sleep 30",
            quoted(cli.home.path()),
            quoted(Path::new(env!("CARGO_BIN_EXE_agentrace"))),
            quoted(&homes.of(Provider::Codex)),
            quoted(&homes.of(Provider::Claude)),
        ),
        100,
    );
    let sessions = |screen: &str| -> Vec<String> {
        screen.lines().filter(|line| line.starts_with("codex ") || line.starts_with("claude ")).map(|line| line.split_whitespace().next().unwrap_or_default().to_owned()).collect()
    };
    let all = tmux.wait_for("the newest session", |screen| screen.contains("provider all") && !sessions(screen).is_empty());
    assert_eq!(sessions(&all), vec!["codex"], "{all}");
    tmux.keys(&["p"]);
    tmux.wait_for("the Codex filter", |screen| screen.contains("provider codex"));
    tmux.keys(&["p"]);
    let claude = tmux.wait_for("the Claude filter", |screen| screen.contains("provider claude") && (screen.contains("1 session") || screen.contains("0 sessions")));
    assert_eq!(sessions(&claude), vec!["claude"], "{claude}");
    tmux.keys(&["q"]);
    tmux.wait_for("top to exit", |screen| screen.contains("top-exited=0"));
}

/// `top --json` prints the sessions once as the viewer's `GET /api/live`
/// gives them (the same overview of each: its record, whether it is live,
/// each agent's state, tool, tokens and cost), a Claude session whose
/// helper works on after its root's turn first.
#[test]
fn top_json_gives_the_sessions_as_the_viewers_live_api_does() {
    let homes = Homes::new();
    let codex = Growth::of(Provider::Codex, "v1_basic");
    codex.write(&homes, 0..codex.order.len(), true);
    let claude = Growth::of(Provider::Claude, "single_bg");
    claude.write(&homes, 0..claude.through_the_roots_first_answer(), true);
    let cli = Cli::new();
    let (codex_home, claude_dir) = (homes.of(Provider::Codex).to_string_lossy().into_owned(), homes.of(Provider::Claude).to_string_lossy().into_owned());
    let printed: serde_json::Value = serde_json::from_str(&cli.ok(&["top", "--json", "--codex-home", &codex_home, "--claude-dir", &claude_dir])).unwrap_or_else(|e| panic!("{e}"));
    let (_server, address) = super::raw_ref::serve(&cli);
    let served = super::raw_ref::get_json(&address, "/api/live");
    let shape = |sessions: &serde_json::Value| -> Vec<(serde_json::Value, serde_json::Value, usize)> {
        sessions.as_array().into_iter().flatten().map(|session| (session["run"]["id"].clone(), session["live"].clone(), session["agents"].as_array().map_or(0, Vec::len))).collect()
    };
    assert_eq!(
        (printed["sessions"].clone(), printed["now"].is_string(), shape(&printed["sessions"]).iter().map(|(_, live, agents)| (live.clone(), *agents)).collect::<Vec<_>>()),
        (served["sessions"].clone(), true, vec![(serde_json::Value::Bool(true), 2), (serde_json::Value::Bool(false), 2)])
    );
}

/// A root running a tool shows it in `top`'s `tool now`, as a helper does:
/// a Claude root at work on a Bash command (and a Codex root on an
/// `exec_command`) had its column blank, the root having no child-work
/// record, so a session of one agent never said what it ran.
#[test]
fn top_shows_the_tool_the_root_runs_now() {
    let homes = Homes::new();
    let claude = Growth::of(Provider::Claude, "bash_then_agent_fg");
    let root = claude.files.iter().position(|file| !file.path.to_string_lossy().contains("subagents")).unwrap_or_else(|| panic!("no root transcript"));
    let call = claude.files[root]
        .lines
        .iter()
        .position(|line| {
            let line = String::from_utf8_lossy(line);
            line.contains("\"type\":\"tool_use\"") && line.contains("\"name\":\"Bash\"")
        })
        .unwrap_or_else(|| panic!("the root runs no Bash"));
    let through = claude.order.iter().position(|at| *at == (root, call)).unwrap_or_else(|| panic!("order")) + 1;
    claude.write(&homes, 0..through, true);
    let cli = Cli::new();
    let claude_dir = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let printed: serde_json::Value = serde_json::from_str(&cli.ok(&["top", "--json", "--claude-dir", &claude_dir])).unwrap_or_else(|e| panic!("{e}"));
    let rows: Vec<(serde_json::Value, serde_json::Value, serde_json::Value, serde_json::Value)> = printed["sessions"][0]["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|row| (row["label"].clone(), row["state"].clone(), row["tool"]["name"].clone(), row["tool"]["input"].clone()))
        .collect();
    assert_eq!(rows, vec![(serde_json::json!("Main"), serde_json::json!("working"), serde_json::json!("Bash"), serde_json::json!("echo root-bash"))]);
}

/// The names of the notes the notification commands wrote into `dir`,
/// sorted.
fn noted_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{e}"))
        .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// For a watch's notices: a Codex capture to grow (its helper runs a
/// command), folders holding a session over before the watch begins, and a
/// home whose rule the helper breaks (an error once its command is seen).
/// The capture's lines are days old, so its helper at work would read quiet
/// past any limit: the limit is set out of reach (a helper gone quiet has
/// its own test).
fn a_rule_and_a_session_over() -> (Growth, Homes, Cli) {
    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    let cli = Cli::new();
    std::fs::write(
        cli.home.path().join("warnings.json"),
        r#"{"deny":["helper_policy_violation"],"helperRules":[{"toolKind":"command","description":"helpers must not run commands"}],"silentAfterSecs":100000000}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let before = Growth::of(Provider::Codex, "v2_basic");
    before.write(&homes, 0..before.order.len(), true);
    (growth, homes, cli)
}

/// `watch --on-end` fires once when a session is over (its root done, no
/// child working), not while its helper still works, and not for a session
/// that had ended before the watch began; `--on-warning` fires once per
/// error-level warning, however many passes see it. Each command gets the
/// run id and a summary in its environment and the notice as JSON on stdin.
#[test]
fn watch_notifies_once_when_a_session_ends_and_once_per_error_warning() {
    use super::import_usage::Watch;

    let (growth, homes, cli) = a_rule_and_a_session_over();
    let notes = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // Each command also keeps what its environment told it.
    let on_end = format!(
        "cat > '{0}'/end-$AGENTRACE_RUN_ID-$AGENTRACE_STATUS.json; printf '%s\\n' \"$AGENTRACE_EVENT\" \"$AGENTRACE_PROVIDER\" \"$AGENTRACE_SUMMARY\" > '{0}'/told-end",
        notes.path().display()
    );
    let on_warning = format!(
        "cat > '{0}'/warning-$AGENTRACE_RUN_ID-$AGENTRACE_WARNING_CODE-$(date +%s%N).json; printf '%s\\n' \"$AGENTRACE_EVENT\" \"$AGENTRACE_WARNING_MESSAGE\" > '{0}'/told-warning",
        notes.path().display()
    );
    let watch = Watch::start(&cli, &homes, &["--on-end", &on_end, "--on-warning", &on_warning]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    // The first pass (what was there before) is done once its run is
    // listed, and a moment after, its judging.
    let listed_done = || {
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"]))
            .ok()
            .and_then(|listed| listed["runs"].as_array().cloned())
            .is_some_and(|runs| runs.iter().any(|run| run["status"] == "done"))
    };
    wait_until(20, listed_done, || "the first pass never ended".to_owned());
    std::thread::sleep(Duration::from_millis(500));
    let noted = || noted_in(notes.path());
    // Up to the root's answer, the helper's turn still open.
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    wait_until(20, || noted().iter().any(|name| name.starts_with("warning-")), || format!("no warning noted: {:?}", noted()));
    std::thread::sleep(Duration::from_millis(1500));
    let runs = cli.ok(&["runs", "--json"]);
    assert!(!noted().iter().any(|name| name.starts_with("end-")), "an end fired while the helper worked: {:?}\n{runs}", noted());
    growth.write(&homes, helper_last..growth.order.len(), true);
    wait_until(20, || noted().iter().any(|name| name.starts_with("end-")), || format!("no end noted: {:?}", noted()));
    std::thread::sleep(Duration::from_millis(1500));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let id = stdout.lines().last().and_then(|line| line.split(' ').next()).unwrap_or_else(|| panic!("{stdout}")).to_owned();
    let names = noted();
    let ends: Vec<&String> = names.iter().filter(|name| name.starts_with("end-")).collect();
    assert_eq!(ends, [&format!("end-{id}-done.json")], "{names:?}");
    let warnings: Vec<&String> = names.iter().filter(|name| name.starts_with("warning-")).collect();
    assert_eq!(warnings.len(), 1, "{names:?}");
    assert!(warnings[0].starts_with(&format!("warning-{id}-helper_policy_violation-")), "{names:?}");
    let end: serde_json::Value = serde_json::from_slice(&std::fs::read(notes.path().join(ends[0])).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((end["event"].as_str(), end["run"]["id"].as_str(), end["run"]["status"].as_str()), (Some("end"), Some(id.as_str()), Some("done")));
    let warning: serde_json::Value = serde_json::from_slice(&std::fs::read(notes.path().join(warnings[0])).unwrap_or_else(|e| panic!("{e}")))
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (warning["event"].as_str(), warning["warning"]["code"].as_str(), warning["warning"]["severity"].as_str()),
        (Some("warning"), Some("helper_policy_violation"), Some("error"))
    );
    let told = |name: &str| std::fs::read_to_string(notes.path().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        (told("told-end"), told("told-warning")),
        (
            format!("end\ncodex\n{id} done: ROOT DONE: all sub-agents finished; final answer from the root agent.\n"),
            format!("warning\n{}\n", warning["warning"]["message"].as_str().unwrap_or_default()),
        )
    );
}

/// `watch --json` prints one JSON object per line: each run it records or
/// changes as `{"event": "run", "run": {…}}`, and the notices the commands
/// get: a warning once per error, the end once when the session is over
/// (after its helper's end, never for a session over before the watch
/// began), so a script can follow without `--on-end`.
#[test]
fn watch_json_prints_each_change_and_each_notice_once() {
    use super::import_usage::Watch;

    let (growth, homes, cli) = a_rule_and_a_session_over();
    let watch = Watch::start(&cli, &homes, &["--json"]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    let runs = || -> Vec<serde_json::Value> {
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"]))
            .ok()
            .and_then(|listed| listed["runs"].as_array().cloned())
            .unwrap_or_default()
    };
    wait_until(20, || runs().len() == 1, || "the first pass never ended".to_owned());
    std::thread::sleep(Duration::from_millis(500));
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    wait_until(20, || runs().len() == 2, || "the session was never imported".to_owned());
    std::thread::sleep(Duration::from_millis(1000));
    growth.write(&homes, helper_last..growth.order.len(), true);
    let over = || runs().iter().filter(|run| run["status"] == "done" && run.get("helpersWorking").is_none()).count() == 2;
    wait_until(20, over, || format!("the session never ended: {:?}", runs()));
    std::thread::sleep(Duration::from_millis(1500));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let printed: Vec<serde_json::Value> =
        stdout.lines().map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"))).collect();
    let id_of = |run: &serde_json::Value| run["id"].as_str().unwrap_or_default().to_owned();
    // The first pass's run is printed first; the other is the watched one.
    let first = printed.first().map(|line| id_of(&line["run"])).unwrap_or_else(|| panic!("nothing printed"));
    let watched = runs().iter().map(id_of).find(|id| *id != first).unwrap_or_else(|| panic!("{stdout}"));
    // What was printed, in order: the event, the run and its status, the
    // warning's code; runs printed again with nothing new are one.
    let mut said: Vec<(String, String, String, Option<String>)> = printed
        .iter()
        .map(|line| {
            (
                line["event"].as_str().unwrap_or_default().to_owned(),
                id_of(&line["run"]),
                format!("{}{}", line["run"]["status"].as_str().unwrap_or_default(), if line["run"]["helpersWorking"] == true { " (helpers working)" } else { "" }),
                line["warning"]["code"].as_str().map(str::to_owned),
            )
        })
        .collect();
    said.dedup();
    let said_of = |id: &str| said.iter().filter(|(_, run, _, _)| run == id).map(|(event, _, status, code)| (event.as_str(), status.as_str(), code.as_deref())).collect::<Vec<_>>();
    assert_eq!(said_of(&first), [("run", "done", None)], "{stdout}");
    let watched_said = said_of(&watched);
    let notices: Vec<_> = watched_said.iter().filter(|(event, _, _)| *event != "run").copied().collect();
    assert_eq!(notices, [("warning", "running", Some("helper_policy_violation")), ("end", "done", None)], "{stdout}");
    // The end comes last, after the run's last change.
    assert_eq!(watched_said[watched_said.len() - 2..], [("run", "done", None), ("end", "done", None)], "{stdout}");
    // The end's notice carries the run as listed.
    let end = printed.iter().find(|line| line["event"] == "end").unwrap_or_else(|| panic!("{stdout}"));
    let last_change = printed.iter().rev().find(|line| line["event"] == "run" && id_of(&line["run"]) == watched).unwrap_or_else(|| panic!("{stdout}"));
    assert_eq!(end["run"], last_change["run"], "{stdout}");
}

/// `watch --json` tells a Claude session's end after the lines Claude Code
/// writes once its last turn is over (its Stop hook's summary, the last
/// prompt, its cost), and the end carries the run as its last `run` line
/// does. It told the end as soon as the root's answer was read, then printed
/// the run again with those lines (`end` 30 events, then `run` 33).
#[test]
fn watch_json_tells_a_claude_sessions_end_after_the_lines_that_trail_its_last_answer() {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Claude, "single_fg");
    let root = growth.files.iter().position(|file| !file.path.to_string_lossy().contains("subagents")).unwrap_or_else(|| panic!("no root"));
    let answer = growth.files[root]
        .lines
        .iter()
        .rposition(|line| String::from_utf8_lossy(line).contains("\"stop_reason\":\"end_turn\""))
        .unwrap_or_else(|| panic!("the root never answers"));
    let through_answer = growth.order.iter().position(|at| *at == (root, answer)).unwrap_or_else(|| panic!("order")) + 1;
    assert!(through_answer < growth.order.len(), "no line trails the root's last answer");
    let homes = Homes::new();
    let cli = Cli::new();
    // A session there before the watch: once it is listed, the first pass
    // is done, and what is written next is news.
    let before = Growth::of(Provider::Codex, "v2_basic");
    before.write(&homes, 0..before.order.len(), true);
    let watch = Watch::start(&cli, &homes, &["--json"]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    let runs = || -> Vec<serde_json::Value> {
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json", "--provider", "claude"]))
            .ok()
            .and_then(|listed| listed["runs"].as_array().cloned())
            .unwrap_or_default()
    };
    let listed = || String::from_utf8_lossy(&cli.run(&["runs", "--json"]).stdout).into_owned();
    wait_until(20, || listed().contains("\"status\": \"done\""), || format!("the first pass never ended: {}", listed()));
    std::thread::sleep(Duration::from_millis(500));
    growth.write(&homes, 0..through_answer, true);
    wait_until(20, || runs().iter().any(|run| run["status"] == "done"), || format!("the root's answer was never read: {:?}", runs()));
    // The lines that trail the answer come a moment later, as Claude Code
    // writes them once its Stop hook has run.
    std::thread::sleep(Duration::from_millis(300));
    growth.write(&homes, through_answer..growth.order.len(), true);
    let id = runs().first().and_then(|run| run["id"].as_str().map(str::to_owned)).unwrap_or_else(|| panic!("no run"));
    let events = || runs().iter().find(|run| run["id"] == id.as_str()).and_then(|run| run["counts"]["events"].as_u64());
    let answered = events();
    wait_until(20, || events() > answered, || format!("the trailing lines were never read: {answered:?} events"));
    // Past the time the end settles in, after the last line was read.
    std::thread::sleep(Duration::from_millis(3500));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let printed: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .filter(|line| line["run"]["id"] == id.as_str())
        .collect();
    let told: Vec<(String, String, u64)> = printed
        .iter()
        .map(|line| {
            (
                line["event"].as_str().unwrap_or_default().to_owned(),
                line["run"]["status"].as_str().unwrap_or_default().to_owned(),
                line["run"]["counts"]["events"].as_u64().unwrap_or_default(),
            )
        })
        .collect();
    let last_two: Vec<&str> = printed[printed.len().saturating_sub(2)..].iter().map(|line| line["event"].as_str().unwrap_or_default()).collect();
    assert_eq!(last_two, ["run", "end"], "{told:?}");
    assert_eq!(told.iter().filter(|(event, _, _)| event == "end").count(), 1, "{told:?}");
    assert_eq!(printed[printed.len() - 1]["run"], printed[printed.len() - 2]["run"], "{stdout}");
}

/// `line` with every `"timestamp":"…"` moved by `by_ms`.
fn stamped_later(line: &[u8], by_ms: i64) -> Vec<u8> {
    let text = String::from_utf8_lossy(line);
    let mut out = String::new();
    let mut rest: &str = &text;
    while let Some(at) = rest.find("\"timestamp\":\"") {
        let start = at + "\"timestamp\":\"".len();
        let end = rest[start..].find('"').map_or(start, |length| start + length);
        out.push_str(&rest[..start]);
        match agentrace_core::model::Timestamp::parse(&rest[start..end]) {
            Some(time) => out.push_str(serde_json::to_value(agentrace_core::model::Timestamp::from_millis(time.millis() + by_ms)).unwrap_or_default().as_str().unwrap_or_default()),
            None => out.push_str(&rest[start..end]),
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out.into_bytes()
}

/// `growth` with every line's time moved so that the last of the first
/// `cut` lines in writing order reads as written just now.
pub(super) fn stamped_as_if_written_now(mut growth: Growth, cut: usize) -> Growth {
    let last_written = growth.order[..cut]
        .iter()
        .filter_map(|&(file, line)| {
            let value: serde_json::Value = serde_json::from_slice(&growth.files[file].lines[line]).ok()?;
            agentrace_core::model::Timestamp::parse(value["timestamp"].as_str()?)
        })
        .map(|time| time.millis())
        .max()
        .unwrap_or_else(|| panic!("no time"));
    let now = i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|elapsed| elapsed.as_millis()).unwrap_or(0)).unwrap_or(0);
    for file in &mut growth.files {
        for line in &mut file.lines {
            *line = stamped_later(line, now - last_written);
        }
    }
    growth
}

/// `top` judges a live session again when a helper's silence passes the
/// limit, though no line comes to wake it: the session's row counts the
/// `silent_agent` warning `show` lists then, and the helper's row says it
/// is silent (it was judged only when a pass brought a change, so a stuck
/// helper, which writes nothing, read as one at work, in green, and the
/// session's row said no warning where `show` listed one).
#[test]
fn top_tells_a_helper_gone_silent_with_no_line_to_wake_it() {
    let growth = Growth::of(Provider::Claude, "single_bg");
    let cut = growth.through_the_roots_first_answer();
    let growth = stamped_as_if_written_now(growth, cut);
    let homes = Homes::new();
    let cli = Cli::new();
    std::fs::write(cli.home.path().join("warnings.json"), r#"{"silentAfterSecs":8}"#).unwrap_or_else(|e| panic!("{e}"));
    growth.write(&homes, 0..cut, true);
    let tmux = Tmux::top(&cli, &homes);
    let at_work = tmux.wait_for("the helper at work", |screen| helper_row(screen).is_some_and(|row| row.contains("working")));
    let session_row = |screen: &str| screen.lines().find(|line| line.starts_with("claude ")).unwrap_or_default().to_owned();
    assert!(!session_row(&at_work).contains("warning"), "judged silent before the limit (a slow start?):\n{at_work}");
    let silent = tmux.wait_for("the helper silent", |screen| session_row(screen).ends_with(" · 1 warning"));
    let run = cli.ok(&["runs", "--json"]);
    let run: serde_json::Value = serde_json::from_str(&run).unwrap_or_else(|e| panic!("{e}"));
    let shown: serde_json::Value = serde_json::from_str(&cli.ok(&["show", run["runs"][0]["id"].as_str().unwrap_or_default(), "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let codes: Vec<&str> = shown["warnings"].as_array().map(|warnings| warnings.iter().filter_map(|warning| warning["code"].as_str()).collect()).unwrap_or_default();
    assert_eq!(
        (codes, helper_row(&silent).map(|row| row.split_whitespace().skip(1).any(|word| word == "silent"))),
        (vec!["silent_agent"], Some(true)),
        "{silent}"
    );
    tmux.keys(&["q"]);
    tmux.wait_for("top to quit", |screen| screen.contains("top-exited=0"));
}

/// `watch --on-warning` tells of a helper gone quiet past the limit
/// (`silent_agent`: maybe stuck) once the limit passes, though nothing is
/// written to wake the watch: a Claude background helper at work after its
/// root's turn, its lines stamped as if written just now, the limit 3 s.
/// A stuck helper looked like a working one: nothing fired.
#[test]
fn watch_tells_of_a_helper_gone_quiet_past_the_limit_with_no_line_to_wake_it() {
    use super::import_usage::Watch;

    let mut growth = Growth::of(Provider::Claude, "single_bg");
    let cut = growth.through_the_roots_first_answer();
    let last_written = growth.order[..cut]
        .iter()
        .filter_map(|&(file, line)| {
            let value: serde_json::Value = serde_json::from_slice(&growth.files[file].lines[line]).ok()?;
            agentrace_core::model::Timestamp::parse(value["timestamp"].as_str()?)
        })
        .map(|time| time.millis())
        .max()
        .unwrap_or_else(|| panic!("no time"));
    let now = i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|elapsed| elapsed.as_millis()).unwrap_or(0)).unwrap_or(0);
    for file in &mut growth.files {
        for line in &mut file.lines {
            *line = stamped_later(line, now - last_written);
        }
    }
    let homes = Homes::new();
    let cli = Cli::new();
    std::fs::write(cli.home.path().join("warnings.json"), r#"{"silentAfterSecs":3}"#).unwrap_or_else(|e| panic!("{e}"));
    let notes = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let on_warning = format!("cat > '{}'/warning-$AGENTRACE_WARNING_CODE-$(date +%s%N).json", notes.path().display());
    let watch = Watch::start(&cli, &homes, &["--on-warning", &on_warning]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    growth.write(&homes, 0..cut, true);
    let noted = || noted_in(notes.path());
    wait_until(30, || !noted().is_empty(), || "no helper gone quiet was told of".to_owned());
    // Once, however long it stays quiet.
    std::thread::sleep(Duration::from_millis(4000));
    let (status, _) = watch.stop();
    assert!(status.success(), "{status}");
    let names = noted();
    assert_eq!(names.len(), 1, "{names:?}");
    let notice: serde_json::Value = serde_json::from_slice(&std::fs::read(notes.path().join(&names[0])).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (notice["event"].as_str(), notice["warning"]["code"].as_str(), notice["warning"]["threadId"].as_str(), notice["run"]["helpersWorking"].as_bool()),
        (Some("warning"), Some("silent_agent"), Some("a677864a14014df4f"), Some(true))
    );
}

/// A Claude root whose turn ended while its background helper still runs
/// (`run_in_background`) is not done: `watch --on-end` waits for the
/// helper's end, then fires once. The records show settled in between (the
/// root's turn ended), which is why the end is judged on the reducer's.
#[test]
fn watch_waits_for_a_background_helper_before_it_says_a_session_ended() {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Claude, "single_bg");
    let homes = Homes::new();
    let cli = Cli::new();
    let notes = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let on_end = format!("cat > '{}'/end-$AGENTRACE_RUN_ID.json", notes.path().display());
    let watch = Watch::start(&cli, &homes, &["--on-end", &on_end]);
    assert!(watch.said().starts_with("watching "));
    let noted = || noted_in(notes.path());
    // Up to the root's first answer (its turn's end), the helper mid-command.
    let cut = growth.through_the_roots_first_answer();
    growth.write(&homes, 0..cut, true);
    // Once the run is there, status reads the helper at work on its command.
    let status = || String::from_utf8_lossy(&cli.run(&["status", "--json"]).stdout).into_owned();
    let working = || {
        serde_json::from_str::<serde_json::Value>(&status()).ok().is_some_and(|status| {
            status["records"]
                .as_array()
                .is_some_and(|records| records.iter().any(|record| record["state"] == "working" && record["operation"]["toolName"] == "Bash"))
        })
    };
    wait_until(20, working, || format!("the helper's command never showed: {}", status()));
    let runs = cli.ok(&["runs", "--json"]);
    let listed: serde_json::Value = serde_json::from_str(&runs).unwrap_or_else(|e| panic!("{e}: {runs}"));
    assert_ne!(listed["runs"][0]["status"], "running", "the root's turn had ended: {runs}");
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(noted(), Vec::<String>::new(), "an end fired while the background helper worked");
    growth.write(&homes, cut..growth.order.len(), true);
    wait_until(20, || !noted().is_empty(), || "no end noted".to_owned());
    std::thread::sleep(Duration::from_millis(1500));
    let (status, _) = watch.stop();
    assert!(status.success(), "{status}");
    let id = listed["runs"][0]["id"].as_str().unwrap_or_else(|| panic!("{runs}")).to_owned();
    assert_eq!(noted(), [format!("end-{id}.json")]);
}

/// `serve --watch` follows a session as it is written: the run is listed
/// while it runs, and its event stream carries the helper's record as it
/// works and as it ends, then the run done.
#[test]
fn serve_watch_streams_a_session_as_it_is_written() {
    use std::io::{BufRead as _, BufReader, Read as _, Write as _};
    use std::net::TcpStream;
    use std::process::Stdio;

    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    let cli = Cli::new();
    let codex = homes.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let mut server = cli
        .command(&["serve", "--bind", "127.0.0.1:0", "--watch", "--codex-home", &codex, "--claude-dir", &claude])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let stdout = server.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let _server = Killed(server);
    let mut first = String::new();
    BufReader::new(stdout).read_line(&mut first).unwrap_or_else(|e| panic!("{e}"));
    let address = first.trim_end().strip_prefix("listening on http://").unwrap_or_else(|| panic!("{first:?}")).to_owned();
    let get = |path: &str| -> String {
        let mut stream = TcpStream::connect(&address).unwrap_or_else(|e| panic!("{e}"));
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap_or_else(|e| panic!("{e}"));
        write!(stream, "GET {path} HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap_or_else(|e| panic!("{e}"));
        response
    };
    // Listed while it runs.
    let deadline = Instant::now() + Duration::from_secs(20);
    let id = loop {
        let runs = get("/api/runs");
        let body = runs.split("\r\n\r\n").nth(1).unwrap_or_default();
        let found = body
            .split("\"id\":\"")
            .skip(1)
            .filter_map(|rest| rest.split('"').next())
            .find(|id| id.starts_with("codex-"))
            .map(str::to_owned);
        if let (Some(id), true) = (found, body.contains("\"status\":\"running\"")) {
            break id;
        }
        assert!(Instant::now() < deadline, "the session was never listed running: {runs}");
        std::thread::sleep(Duration::from_millis(100));
    };
    // Its stream, read on a thread, line by line.
    let mut stream = TcpStream::connect(&address).unwrap_or_else(|e| panic!("{e}"));
    write!(stream, "GET /api/runs/{id}/stream HTTP/1.1\r\nHost: {address}\r\n\r\n").unwrap_or_else(|e| panic!("{e}"));
    let (lines, said) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stream).lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                return;
            }
        }
    });
    let mut seen = Vec::new();
    let mut wait_for = |what: &str, wanted: &dyn Fn(&str) -> bool| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if seen.iter().any(|line: &String| wanted(line)) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match said.recv_timeout(left) {
                Ok(line) => seen.push(line),
                Err(_) => panic!("the stream never carried {what}:\n{}", seen.join("\n")),
            }
        }
    };
    wait_for("the helper working", &|line| line.starts_with("data:") && line.contains("\"childWorkId\"") && line.contains("\"state\":\"working\""));
    growth.write(&homes, helper_last..growth.order.len(), true);
    wait_for("the helper ended", &|line| line.starts_with("data:") && line.contains("\"childWorkId\"") && line.contains("\"outcome\":\"succeeded\""));
    wait_for("the run done", &|line| line.starts_with("data:") && line.contains("\"status\":\"done\""));
}

/// A watched session whose files stop growing while its helper is live
/// ends at the idle limit: `session_ended` (reason `idle`) closes its log
/// and the helper's record settles `ended unknown`; when its files grow
/// again, it is read again and ends as an import of the finished files.
#[test]
fn watch_ends_a_session_idle_past_the_limit_and_reads_it_again_when_it_grows() {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    let cli = Cli::new();
    let watch = Watch::start(&cli, &homes, &["--idle-limit", "2"]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    // Past its first pass (of empty folders, a few milliseconds): what the
    // first pass reads is followed only if it was written within the
    // limit by the captures' own clock, and this capture is days old.
    std::thread::sleep(Duration::from_millis(500));
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    let records = |cli: &Cli| -> Vec<serde_json::Value> {
        serde_json::from_slice::<serde_json::Value>(&cli.run(&["status", "--json"]).stdout)
            .ok()
            .and_then(|value| value["records"].as_array().cloned())
            .unwrap_or_default()
    };
    wait_until(20, || records(&cli).iter().any(|record| record["state"] == "working"), || "the helper was never seen working".to_owned());
    // Past the limit, nothing written: the session ends idle.
    let deadline = Instant::now() + Duration::from_secs(20);
    let settled = loop {
        let now = records(&cli);
        if now.iter().all(|record| record["state"] == "ended") {
            break now;
        }
        if Instant::now() > deadline {
            let (_, stdout) = watch.stop();
            panic!("the idle session never ended: {now:?}\nwatch printed:\n{stdout}\n{}", cli.ok(&["events", "latest"]));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(settled.iter().map(|record| record["outcome"].as_str()).collect::<Vec<_>>(), [Some("unknown")]);
    let events = cli.ok(&["events", "latest", "--json"]);
    let last: serde_json::Value = serde_json::from_str(events.lines().last().unwrap_or_default()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(last["event"], serde_json::json!({"type": "session_ended", "reason": "idle"}));
    // It grows again: read again, it ends as the whole.
    growth.write(&homes, helper_last..growth.order.len(), true);
    wait_until(20, || records(&cli).iter().all(|record| record["outcome"] == "succeeded"), || format!("the session never ended as a whole: {:?}", records(&cli)));
    std::thread::sleep(Duration::from_millis(500));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    assert!(stdout.lines().any(|line| line.ends_with(" idle")), "{stdout}");
    let whole = Cli::new();
    let fresh = Homes::new();
    growth.write(&fresh, 0..growth.order.len(), true);
    let codex = fresh.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = fresh.of(Provider::Claude).to_string_lossy().into_owned();
    whole.ok(&["import", "--codex-home", &codex, "--claude-dir", &claude]);
    assert_eq!(cli.ok(&["show", "latest", "--json"]), whole.ok(&["show", "latest", "--json"]));
}

/// A session the watch ended idle stays ended as it was: the import's
/// catalog still called it open (read while its files were young), so the
/// watch's next whole pass (here, for a folder made beside it) found it
/// open and still, rebuilt it as `importFinished` (the idle end gone) and
/// printed it as changed again; a later `import` would have done the same.
#[test]
fn a_session_a_watch_ended_idle_is_not_ended_again_by_a_whole_pass_or_an_import() {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    let cli = Cli::new();
    let watch = Watch::start(&cli, &homes, &["--json", "--idle-limit", "2"]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    // Past its first pass: see `watch_ends_a_session_idle_past_the_limit_…`.
    std::thread::sleep(Duration::from_millis(500));
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    let ended = || newest_run_ended(&cli);
    wait_until(30, ended, || format!("the session never ended idle: {}", cli.ok(&["runs"])));
    let id = newest_run(&cli);
    // Its end told (once the session has been over and still for 2 s).
    std::thread::sleep(Duration::from_millis(3000));
    // A folder made is a change the watch cannot place: a whole pass.
    std::fs::create_dir_all(homes.of(Provider::Codex).join("sessions/2099/12/31")).unwrap_or_else(|e| panic!("{e}"));
    // The pass, and the time an end would take to be told again.
    std::thread::sleep(Duration::from_millis(4000));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let codex = homes.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let imported = cli.run(&["import", "--codex-home", &codex, "--claude-dir", &claude, "--idle-limit", "2"]);
    let imported = String::from_utf8_lossy(&imported.stderr).lines().next().unwrap_or_default().to_owned();
    let printed: Vec<String> = printed_of(&stdout, &id).into_iter().map(|(event, _)| event).collect();
    let since_idle = printed.iter().position(|event| event == "idle").map_or_else(Vec::new, |at| printed[at..].to_vec());
    let ends: Vec<serde_json::Value> = cli
        .ok(&["events", &id, "--json"])
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .filter(|envelope| envelope["event"]["type"] == "session_ended")
        .map(|envelope| envelope["event"].clone())
        .collect();
    assert_eq!(
        (since_idle, ends, imported),
        (
            vec!["idle".to_owned(), "end".to_owned()],
            vec![serde_json::json!({"type": "session_ended", "reason": "idle"})],
            format!("imported 0 new sessions, 0 changed, 1 unchanged (Codex from {codex}, Claude from {claude})")
        ),
        "{stdout}"
    );
}

/// The id of the run `runs` lists first.
fn newest_run(cli: &Cli) -> String {
    serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"))["runs"][0]["id"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Whether the run `runs` lists first has its session ended (its record's
/// `sessionEnded`).
fn newest_run_ended(cli: &Cli) -> bool {
    serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"]))
        .ok()
        .and_then(|listed| listed["runs"][0]["sessionEnded"].as_bool())
        == Some(true)
}

/// The events `watch --json` printed for run `id`, each as its event and
/// the run's status.
fn printed_of(stdout: &str, id: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .filter(|line| line["run"]["id"] == id)
        .map(|line| (line["event"].as_str().unwrap_or_default().to_owned(), line["run"]["status"].as_str().unwrap_or_default().to_owned()))
        .collect()
}

/// A change another process imported is news to a watch too: with two
/// followers on one home, only the one whose import came first was told a
/// run changed, and the other (`top`, a second `watch`) kept the session
/// live for good and never told its end. Here the watch is stopped
/// (SIGSTOP) while an import reads the session's last lines, then let go:
/// its own import finds nothing new, and it still prints the run done and
/// its end.
#[test]
fn a_watch_tells_the_end_of_a_session_another_process_imported() {
    tells_the_end_of_a_session_another_process_imported(&["--json"]);
}

/// The same with a watch that polls (no inotify): it did not look at the
/// runs folder at all, so two polling followers still missed each other.
/// It now looks at the folder's stamp each second and reads the records
/// written since.
#[test]
fn a_polling_watch_tells_the_end_of_a_session_another_process_imported() {
    tells_the_end_of_a_session_another_process_imported(&["--json", "--poll"]);
}

fn tells_the_end_of_a_session_another_process_imported(args: &[&str]) {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    let cli = Cli::new();
    let watch = Watch::start(&cli, &homes, args);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    std::thread::sleep(Duration::from_millis(500));
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    let runs = || -> Vec<serde_json::Value> {
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"]))
            .ok()
            .and_then(|listed| listed["runs"].as_array().cloned())
            .unwrap_or_default()
    };
    wait_until(20, || runs().len() == 1, || "the session was never imported".to_owned());
    std::thread::sleep(Duration::from_millis(500));
    let pid = nix::unistd::Pid::from_raw(i32::try_from(watch.pid()).unwrap_or_else(|e| panic!("{e}")));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGSTOP).unwrap_or_else(|e| panic!("{e}"));
    growth.write(&homes, helper_last..growth.order.len(), true);
    // Another idle limit: an import that does not trust the watch's lease.
    let codex = homes.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let imported = cli.run(&["import", "--codex-home", &codex, "--claude-dir", &claude, "--idle-limit", "599"]);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGCONT).unwrap_or_else(|e| panic!("{e}"));
    assert!(String::from_utf8_lossy(&imported.stderr).starts_with("imported 0 new sessions, 1 changed"), "{}", String::from_utf8_lossy(&imported.stderr));
    let id = runs().first().and_then(|run| run["id"].as_str().map(str::to_owned)).unwrap_or_else(|| panic!("no run"));
    // The end is told once the session has been still a moment.
    std::thread::sleep(Duration::from_millis(4000));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let mut printed = printed_of(&stdout, &id);
    printed.dedup();
    let last_two = printed[printed.len().saturating_sub(2)..].to_vec();
    assert_eq!(last_two, [("run".to_owned(), "done".to_owned()), ("end".to_owned(), "done".to_owned())], "{stdout}");
}

/// A session at work again after its end (Claude Code's `--resume`, a new
/// prompt in the same session) ends again, and that end is told too: the
/// watch told a session's end once for good, so `--on-end` said nothing
/// of every answer after the first.
#[test]
fn a_watch_tells_each_end_of_a_session_that_was_resumed() {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Claude, "resumed_session");
    let homes = Homes::new();
    let cli = Cli::new();
    let watch = Watch::start(&cli, &homes, &["--json"]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    std::thread::sleep(Duration::from_millis(500));
    let first = growth.through_the_roots_first_answer();
    growth.write(&homes, 0..first, true);
    let ended = || -> bool {
        serde_json::from_str::<serde_json::Value>(&cli.ok(&["runs", "--json"]))
            .ok()
            .is_some_and(|listed| listed["runs"][0]["status"] == "done")
    };
    wait_until(20, ended, || format!("the first answer was never imported: {}", cli.ok(&["runs"])));
    // Its end is told once its files have been still for 2 s.
    std::thread::sleep(Duration::from_millis(4000));
    growth.write(&homes, first..growth.order.len(), true);
    std::thread::sleep(Duration::from_millis(5000));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let id = newest_run(&cli);
    let ends: Vec<(String, String)> = printed_of(&stdout, &id).into_iter().filter(|(event, _)| event == "end").collect();
    assert_eq!(ends, [("end".to_owned(), "done".to_owned()), ("end".to_owned(), "done".to_owned())], "{stdout}");
}

/// A session an import read while its files were young, and which never
/// grew since (a crash), is ended by a watch once its files have been
/// still for the idle limit: no change comes to wake the watch, and while
/// it ran it was never ended (an import trusting its lease read nothing).
#[test]
fn a_watch_ends_a_session_an_earlier_import_left_open_once_its_files_are_still() {
    use super::import_usage::Watch;

    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    let cli = Cli::new();
    let (_, helper_last) = helper_of(&growth);
    growth.write(&homes, 0..helper_last, true);
    let codex = homes.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = homes.of(Provider::Claude).to_string_lossy().into_owned();
    // The watch must begin before the files have been still for the
    // limit: a session idle past it when the watch began had ended before
    // it (its first pass ends it, no news), and under a loaded CI a watch
    // took close to 3 s to begin (10 s leave room for a CI twice as
    // loaded). How late its first pass comes after it began no longer
    // matters (`watch::first_pass` judges the limit at the watch's start).
    cli.ok(&["import", "--codex-home", &codex, "--claude-dir", &claude, "--idle-limit", "10"]);
    let watch = Watch::start(&cli, &homes, &["--json", "--idle-limit", "10"]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    let ended = || newest_run_ended(&cli);
    wait_until(30, ended, || format!("the session was never ended: {}\n{}", cli.ok(&["runs"]), watch.so_far()));
    std::thread::sleep(Duration::from_millis(3000));
    let (status, stdout) = watch.stop();
    assert!(status.success(), "{status}");
    let id = newest_run(&cli);
    let events: Vec<String> = printed_of(&stdout, &id).into_iter().map(|(event, _)| event).collect();
    assert_eq!((events.first().map(String::as_str), events.last().map(String::as_str)), (Some("idle"), Some("end")), "{stdout}");
}

/// `watch` asks the kernel to be told of changes only: every file read in
/// a watched folder (by an import, `usage`, ccusage, the agent itself) was
/// an event too, which cost the reader (a repeated import took half as long
/// again while `top` ran) and woke the watcher for nothing. Checked where
/// the kernel keeps it: each inotify watch's mask.
#[test]
fn watch_is_told_of_changes_not_of_reads() {
    use super::support::{inotify_masks, IN_MODIFY, IN_READ_ONLY};

    let (_homes, cli, watch) = watching_a_finished_session();
    wait_until(20, || cli.ok(&["runs", "--json"]).contains("\"status\": \"done\""), || "the first pass never ended".to_owned());
    let masks = inotify_masks(watch.pid());
    // The sessions folder and each folder below it down to the day's.
    assert!(masks.len() >= 4, "{masks:x?}");
    assert!(masks.iter().all(|mask| mask & IN_READ_ONLY == 0 && mask & IN_MODIFY != 0), "{masks:x?}");
    let (status, _) = watch.stop();
    assert!(status.success(), "{status}");
}

/// While a watch follows the folders and has imported every change it was
/// told of, an import of the same folders trusts the catalog and says so;
/// one from a day, or once the watch is gone, imports as ever.
#[test]
fn an_import_trusts_a_current_watch_of_the_same_folders_only_while_it_runs() {
    let (homes, cli, watch) = watching_a_finished_session();
    let codex = homes.of(Provider::Codex).to_string_lossy().into_owned();
    let claude = homes.of(Provider::Claude).to_string_lossy().into_owned();
    let import = |extra: &[&str]| -> String {
        let mut args = vec!["import", "--codex-home", codex.as_str(), "--claude-dir", claude.as_str()];
        args.extend_from_slice(extra);
        let output = cli.run(&args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stderr).into_owned()
    };
    let trusted = format!(
        "imported nothing new: the follower running as pid {} has imported every change to these folders (Codex from {codex}, Claude from {claude})\n",
        watch.pid()
    );
    // Its first pass over, the watch says every change is imported.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let said = import(&[]);
        if said == trusted {
            break;
        }
        assert!(Instant::now() < deadline, "the import never trusted the watch: {said}");
        std::thread::sleep(Duration::from_millis(100));
    }
    let from_a_day = import(&["--since", "2020-01-01"]);
    assert!(from_a_day.starts_with("imported 0 new sessions, 0 changed, 1 unchanged"), "{from_a_day}");
    // An archive folder made since the watch began is not one it watches.
    let archived = homes.of(Provider::Codex).join("archived_sessions");
    std::fs::create_dir(&archived).unwrap_or_else(|e| panic!("{e}"));
    let unwatched = import(&[]);
    assert!(unwatched.starts_with("imported 0 new sessions, 0 changed, 1 unchanged"), "{unwatched}");
    std::fs::remove_dir(&archived).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(import(&[]), trusted);
    // As JSON: nothing read, and whose work that is.
    let output = cli.run(&["import", "--json", "--codex-home", codex.as_str(), "--claude-dir", claude.as_str()]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (report, String::from_utf8_lossy(&output.stderr).into_owned()),
        (
            serde_json::json!({"new": 0, "changed": 0, "readOn": 0, "unchanged": 0, "runs": [], "codexHome": codex, "claudeDir": claude, "follower": watch.pid()}),
            String::new()
        )
    );
    let (status, _) = watch.stop();
    assert!(status.success(), "{status}");
    let after = import(&[]);
    assert!(after.starts_with("imported 0 new sessions, 0 changed, 1 unchanged"), "{after}");
}

/// A finished Codex session (`v1_basic`) in its homes, and a `watch` of
/// them that has begun.
fn watching_a_finished_session() -> (Homes, Cli, super::import_usage::Watch) {
    let growth = Growth::of(Provider::Codex, "v1_basic");
    let homes = Homes::new();
    growth.write(&homes, 0..growth.order.len(), true);
    let cli = Cli::new();
    let watch = super::import_usage::Watch::start(&cli, &homes, &[]);
    let said = watch.said();
    assert!(said.starts_with("watching "), "{said}");
    (homes, cli, watch)
}

/// On a terminal, `runs` (and `agentrace` alone) fits the window: the ids
/// whole, the project and result cut to what is left, each run on one line;
/// in a window too narrow for the result beside the rest, the result goes
/// on its own line under its run, and in one too narrow for the id beside
/// the figures, the id too. (A pipe gets the one fixed layout.)
#[test]
fn runs_on_a_terminal_fits_the_window_and_keeps_each_id_whole() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    agentrace_testkit::files::copy_dir(&agentrace_testkit::files::fixtures().join("claude/nested_fg/home_claude"), &sources.path().join("claude"));
    let cli = Cli::new();
    cli.ingest(&super::support::capture("v1_basic"), &["--run-id", "a-run-of-a-rather-long-name", "--quiet"]);
    cli.ok(&["import", "--quiet", "--claude-dir", &sources.path().join("claude").to_string_lossy(), "--codex-home", &sources.path().join("none").to_string_lossy()]);
    let ids = ["a-run-of-a-rather-long-name", "claude-d882d213-4da9-4bcb-bd05-cb557061dd59"];
    let results = ["ROOT DONE: all sub-agents finished; final answer from the root agent.", "ROOT-FINAL: all subagents finished for scenario nested_fg."];
    let shown = |columns: u16| -> Vec<String> {
        let tmux = Tmux::start_sized(
            &format!("env AGENTRACE_HOME={} NO_COLOR=1 {} runs; echo runs-exited=$?; sleep 30", quoted(cli.home.path()), quoted(Path::new(env!("CARGO_BIN_EXE_agentrace")))),
            columns,
        );
        tmux.wait_for("runs to exit", |screen| screen.contains("runs-exited=0"));
        let screen = tmux.joined_screen();
        let lines: Vec<String> = screen.lines().take_while(|line| !line.starts_with("runs-exited")).map(|line| line.trim_end().to_owned()).collect();
        for line in &lines {
            assert!(line.chars().count() <= usize::from(columns), "wider than {columns}: {line:?}");
        }
        lines
    };
    // Wide: one line a run, its whole result at its end.
    let wide = shown(220);
    assert_eq!(wide.len(), 3, "{wide:#?}");
    assert!(wide[0].starts_with("RUN ") && wide[0].ends_with("  RESULT"), "{wide:#?}");
    for (line, (id, result)) in wide[1..].iter().zip(ids.iter().zip(results)) {
        assert!(line.starts_with(&format!("{id} ")) && line.ends_with(&format!("  {result}")), "{line:?}");
    }
    // Narrow: the result under its run.
    let narrow = shown(120);
    assert_eq!(narrow.len(), 6, "{narrow:#?}");
    assert_eq!((narrow[0].split_whitespace().last(), narrow[1].as_str()), (Some("WARN"), "    RESULT"));
    for (pair, (id, result)) in narrow[2..].chunks(2).zip(ids.iter().zip(results)) {
        assert!(pair[0].starts_with(&format!("{id} ")), "{pair:?}");
        assert_eq!(pair[1], format!("    {result}"));
    }
    // Too narrow for an id beside the figures (80 columns): the id on a
    // line of its own, the figures and the result indented under it.
    let stacked = shown(80);
    assert_eq!(stacked.len(), 9, "{stacked:#?}");
    assert_eq!((stacked[0].as_str(), stacked[1].split_whitespace().collect::<Vec<_>>(), stacked[2].as_str()), ("RUN", vec!["PROVIDER", "PROJECT", "STARTED", "TIME", "AGENTS", "TOKENS", "COST", "WARN"], "    RESULT"));
    for (three, (id, result)) in stacked[3..].chunks(3).zip(ids.iter().zip(results)) {
        assert_eq!((three[0].as_str(), three[2].clone()), (*id, format!("    {result}")), "{three:?}");
        assert!(three[1].starts_with("    ") && three[1].split_whitespace().next().is_some_and(|provider| ["codex", "claude"].contains(&provider)), "{three:?}");
    }
}

/// On a terminal, `usage` grouped by model, day or project fits the window:
/// its names' column gives way to the figures (the sessions of `--by run`
/// keep their ids whole).
#[test]
fn usage_on_a_terminal_fits_the_window() {
    let sources = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    agentrace_testkit::files::copy_dir(&agentrace_testkit::files::fixtures().join("claude/nested_fg/home_claude"), &sources.path().join("claude"));
    let cli = Cli::new();
    cli.ok(&["import", "--quiet", "--claude-dir", &sources.path().join("claude").to_string_lossy(), "--codex-home", &sources.path().join("none").to_string_lossy()]);
    let tmux = Tmux::start_sized(
        &format!("env AGENTRACE_HOME={} NO_COLOR=1 {} usage --by project; echo usage-exited=$?; sleep 30", quoted(cli.home.path()), quoted(Path::new(env!("CARGO_BIN_EXE_agentrace")))),
        100,
    );
    tmux.wait_for("usage to exit", |screen| screen.contains("usage-exited=0"));
    let screen = tmux.joined_screen();
    let lines: Vec<&str> = screen.lines().filter(|line| !line.starts_with("warning") && !line.starts_with("hint")).take_while(|line| !line.starts_with("usage-exited")).map(str::trim_end).collect();
    let names: Vec<&str> = lines.iter().map(|line| line.split("  ").next().unwrap_or_default()).collect();
    assert_eq!(names, ["PROJECT", "…v/agents/work/nested_fg", "TOTAL"], "{lines:#?}");
    assert!(lines.iter().all(|line| line.chars().count() <= 100), "{lines:#?}");
}
