//! `agentrace serve`: binds the viewer and API of `agentrace-server`, prints
//! `listening on http://ADDR:PORT` as the first stdout line, and serves until
//! killed. Loopback by default; any other address requires a token file.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use agentrace_server::Options;
use agentrace_store::Home;
use anyhow::{bail, Context as _};
use clap::Args;

use crate::warning_config::WarningArgs;
use crate::output::Out;

/// `agentrace serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free one. Anything but loopback
    /// requires `--token-file`.
    #[arg(long, default_value = "127.0.0.1:7878")]
    bind: SocketAddr,
    /// A file whose first line is the token every request must present
    /// (`Authorization: Bearer <token>`, or `?token=` in the page's URL).
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Open the viewer in a browser (`xdg-open`, or `open` on macOS).
    #[arg(long)]
    open: bool,
    /// Follow the Codex and Claude Code sessions on disk as `watch` does,
    /// so the viewer shows them live (over its event stream) as they are
    /// written.
    #[arg(long)]
    watch: bool,
    /// With `--watch`: the Codex home to follow (default: `$CODEX_HOME`,
    /// else `~/.codex`).
    #[arg(long, value_name = "DIR", requires = "watch")]
    codex_home: Option<PathBuf>,
    /// With `--watch`: the Claude Code config dir to follow (default:
    /// `$CLAUDE_CONFIG_DIR`, else `~/.claude`).
    #[arg(long, value_name = "DIR", requires = "watch")]
    claude_dir: Option<PathBuf>,
    #[command(flatten)]
    warnings: WarningArgs,
}

/// Runs the server until the process is stopped.
pub fn run(home: Home, args: &ServeArgs, out: &mut Out) -> anyhow::Result<ExitCode> {
    let token = match &args.token_file {
        Some(path) => Some(read_token(path)?),
        None => None,
    };
    if token.is_none() && !args.bind.ip().is_loopback() {
        // A usage error (exit 2): the flags ask for something unsafe.
        eprintln!(
            "error: refusing to serve on {} without a token\nhint: pass --token-file FILE, or bind 127.0.0.1",
            args.bind
        );
        return Ok(ExitCode::from(2));
    }
    let config = crate::warning_config::judge(&args.warnings)?;
    if args.watch {
        follow(&home, args)?;
    }
    let usage_home = home.clone();
    let options = Options {
        token: token.clone(),
        config,
        // The viewer's /usage counts what `agentrace usage` counts, by the
        // same code.
        usage: Some(agentrace_server::UsageSource(std::sync::Arc::new(move |zone| {
            crate::commands::usage::charts(&usage_home, zone).map_err(|error| format!("{error:#}"))
        }))),
        ..Options::default()
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the server runtime")?;
    runtime.block_on(async {
        let (address, server) = agentrace_server::bind(args.bind, home, options)
            .await
            .with_context(|| format!("cannot listen on {}", args.bind))?;
        let url = format!("http://{address}");
        out.line(format!("listening on {url}"))?;
        out.flush()?;
        if args.open {
            let page = match &token {
                Some(token) => format!("{url}/?token={token}"),
                None => url.clone(),
            };
            open_browser(&page);
        }
        server.await.context("the server stopped")?;
        Ok(ExitCode::SUCCESS)
    })
}

/// `--watch`: the follower and its imports on a thread of their own, for
/// as long as the server runs; what they write, the server serves (its
/// streams follow the run logs as they grow).
fn follow(home: &Home, args: &ServeArgs) -> anyhow::Result<()> {
    let import = crate::commands::import::ImportArgs::quiet_of(args.codex_home.clone(), args.claude_dir.clone());
    let follower = crate::commands::watch::Follower::start(home, &import, false)?;
    if let Some(warning) = follower.fallback() {
        eprintln!("{warning}");
    } else {
        eprintln!("watching {} with {}", follower.folders(), follower.mode());
    }
    let home = home.clone();
    std::thread::spawn(move || {
        follower.follow(&home, &import, |result| {
            if let Err(error) = &result {
                eprintln!("warning: following the sessions: {error:#}");
            }
            true
        });
    });
    Ok(())
}

fn read_token(path: &PathBuf) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read the token file {}", path.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    if token.len() < 16 {
        bail!(
            "the token in {} is shorter than 16 characters\nhint: e.g. `head -c 32 /dev/urandom | base64 > {}`",
            path.display(),
            path.display()
        );
    }
    Ok(token)
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") {
        "open"
    } else {
        "xdg-open"
    };
    if let Err(error) = std::process::Command::new(opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    {
        eprintln!("warning: cannot open a browser with {opener}: {error}\nhint: open {url}");
    }
}
