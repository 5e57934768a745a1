//! What a recorded run shows while it is recorded and how its end is
//! told: the compact live view on stderr (one of the recording shell's
//! sinks, see [`crate::recording`]) and the exit of `run`.

use std::collections::HashMap;
use std::io::{IsTerminal as _, Write as _};

use agentrace_core::book::Changes;
use agentrace_core::childwork::ChangeKind;
use agentrace_core::model::{Envelope, Event, EventBody, RunId};

use crate::render::one_line;

/// The compact live view: one stderr line per spawn, tool call, wait, agent
/// end, warning and ending, each with its actor's label.
pub struct LiveView {
    colour: bool,
    labels: HashMap<String, String>,
}

impl LiveView {
    /// A view on stderr; colour only on a terminal without `NO_COLOR`.
    pub fn new() -> Self {
        let colour = std::io::stderr().is_terminal()
            && std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty());
        Self {
            colour,
            labels: HashMap::new(),
        }
    }

    fn label_of(&self, thread: &str) -> String {
        self.labels
            .get(thread)
            .cloned()
            .unwrap_or_else(|| thread.to_owned())
    }

    /// Shows the records the session's end settled (the other changes
    /// show as their envelopes).
    pub fn changes(&mut self, changes: &Changes) {
        for change in &changes.records {
            match change.change {
                ChangeKind::Settled => self.say(
                    "agentrace",
                    &format!("{} was still running when the session ended: outcome unknown", change.record.label),
                ),
                ChangeKind::Admitted | ChangeKind::Updated | ChangeKind::Ended => {}
            }
        }
    }

    fn say(&self, label: &str, text: &str) {
        let label = one_line(label, 32);
        let text = one_line(text, 140);
        let line = if self.colour {
            format!("\x1b[36m{label:>16}\x1b[0m  {text}\n")
        } else {
            format!("{label:>16}  {text}\n")
        };
        // The live view is best effort: a closed stderr must not stop recording.
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
    }

    /// Shows one envelope, if it is worth a line.
    pub fn show(&mut self, envelope: &Envelope) {
        if let Some(thread) = &envelope.actor.thread_id {
            self.labels
                .insert(thread.to_string(), envelope.actor.label.clone());
        }
        let EventBody::Known(event) = &envelope.event else {
            return;
        };
        let text = match event {
            Event::ActorResolved { thread_id, actor } => {
                self.labels
                    .insert(thread_id.to_string(), actor.label.clone());
                return;
            }
            Event::AgentSpawned {
                child_thread_id,
                prompt,
                ..
            } => format!(
                "spawned {}{}",
                self.label_of(child_thread_id.as_str()),
                prompt
                    .as_ref()
                    .map(|prompt| format!(": {prompt}"))
                    .unwrap_or_default()
            ),
            Event::ToolUse { name, input, .. } if name != "spawnAgent" && name != "wait" => {
                // A collaboration call whose input is an agent's thread id
                // (`closeAgent`) names the agent as the other lines do.
                match self.labels.get(input.trim()) {
                    Some(label) => format!("{name}: {label}"),
                    None => format!("{name}: {input}"),
                }
            }
            Event::AgentWaitStarted {
                child_thread_ids, ..
            } => {
                if child_thread_ids.is_empty() {
                    "waits for its helpers".to_owned()
                } else {
                    let names: Vec<String> = child_thread_ids
                        .iter()
                        .map(|id| self.label_of(id.as_str()))
                        .collect();
                    format!("waits for {}", names.join(", "))
                }
            }
            Event::AgentCompleted {
                thread_id,
                status,
                result,
                ..
            } => format!(
                "{}ended {}{}",
                if envelope.actor.thread_id.as_ref() == Some(thread_id) {
                    String::new()
                } else {
                    format!("{} ", self.label_of(thread_id.as_str()))
                },
                status.as_str(),
                result
                    .as_ref()
                    .map(|result| format!(": {result}"))
                    .unwrap_or_default()
            ),
            Event::Warning { warning } => format!("warning {}: {}", warning.code, warning.message),
            Event::Done { .. } => "done".to_owned(),
            Event::Failed { error, .. } => {
                format!("failed: {}", error.as_deref().unwrap_or("(no error given)"))
            }
            Event::Interrupted { .. } => "interrupted".to_owned(),
            Event::Dropped { bytes, .. } => {
                format!("recorder fell behind: {bytes} bytes passed through unrecorded")
            }
            _ => return,
        };
        self.say(&envelope.actor.label, &text);
    }
}

/// How a recorded run's end is told, the same for every `run`: the root's
/// answer on stdout, and exit 0 (done), 1 (failed, or never ended) or 130
/// (interrupted), with what went wrong on stderr.
pub fn tell_end(
    out: &mut crate::output::Out,
    id: &RunId,
    summary: &agentrace_core::state::RunSummary,
) -> anyhow::Result<std::process::ExitCode> {
    use agentrace_core::model::RunStatus;
    use std::process::ExitCode;
    match summary.status {
        RunStatus::Done => {
            match &summary.result {
                Some(result) => out.line(result)?,
                None => eprintln!("warning: the root's last turn ended without an answer of its own\nhint: agentrace show {id}"),
            }
            Ok(ExitCode::SUCCESS)
        }
        RunStatus::Interrupted => {
            eprintln!("interrupted; recorded as {id}");
            Ok(ExitCode::from(130))
        }
        RunStatus::Failed | RunStatus::Running => {
            eprintln!(
                "error: the run failed: {}\nhint: agentrace show {id}",
                summary.error.as_deref().unwrap_or("no error given")
            );
            Ok(ExitCode::FAILURE)
        }
    }
}
