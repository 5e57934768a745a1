//! The agent process a driven run starts (`run codex`, `run claude`): its
//! output read on a thread into the run's message channel, Ctrl-C as a
//! message on the same channel, and a bounded stop that ends the process
//! group it leads. Process handling only; recording is the callers'.

use std::io::Read;
use std::process::{Child, ExitStatus};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// What the driving loop of a run waits on.
pub enum Message {
    /// Bytes the agent printed on stdout.
    Stdout(Vec<u8>),
    /// The agent closed its stdout.
    StdoutClosed,
    /// The user pressed Ctrl-C.
    Interrupt,
}

/// Reads `stream` on a thread and sends every chunk, then `StdoutClosed`.
pub fn spawn_reader(mut stream: impl Read + Send + 'static, sender: Sender<Message>) {
    std::thread::spawn(move || {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) | Err(_) => break,
                Ok(read) => {
                    if sender
                        .send(Message::Stdout(buffer[..read].to_vec()))
                        .is_err()
                    {
                        return;
                    }
                }
            }
        }
        let _ = sender.send(Message::StdoutClosed);
    });
}

/// Sends `signal` to the process group the child leads.
pub fn signal_group(child: &Child, signal: nix::sys::signal::Signal) {
    if let Ok(pid) = i32::try_from(child.id()) {
        let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(pid), signal);
    }
}

/// Waits up to `grace` for the child to exit on its own, then ends it by
/// its pid, and what it started with it (it leads its own process group).
pub fn stop(child: &mut Child, grace: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + grace;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => break,
        }
    }
    signal_group(child, nix::sys::signal::Signal::SIGKILL);
    let _ = child.kill();
    child.wait().ok()
}
