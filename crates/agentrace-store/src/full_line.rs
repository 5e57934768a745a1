//! The v2 line a live recording writes, byte for byte what `serde_json`
//! writes for an [`Envelope`], with the parts that repeat on every line
//! encoded once: the run id, each recent actor (a run's lines come from
//! a handful of agents, and their actors were a quarter of what the writing
//! thread spent encoding) and the last line's time. The event and the frame
//! are written as they come; the frame, already checked JSON, is copied in
//! as its text.

use agentrace_core::model::{Actor, Timestamp};
use agentrace_core::Envelope;

/// How many actors' JSON is kept: more than the agents a run has at work
/// at once, few enough that looking through them is a handful of compares.
const KEPT_ACTORS: usize = 16;

/// Encodes a run's envelopes as v2 lines (see the module's doc).
#[derive(Debug, Default)]
pub(crate) struct FullLines {
    /// `,"runId":"…"` of the run, once its first line is encoded.
    run_id: Option<Vec<u8>>,
    /// The actors met most recently and their JSON, the latest first.
    actors: Vec<(Actor, Vec<u8>)>,
    /// The last line's time and its JSON (more than half of the lines of
    /// an app-server stream have their previous line's time).
    last_time: Option<(Timestamp, Vec<u8>)>,
}

impl FullLines {
    /// Appends `envelope`'s line (without its line break) to `out`. Every
    /// envelope given is of one run (the writer checks).
    pub(crate) fn encode(&mut self, envelope: &Envelope, out: &mut Vec<u8>) -> serde_json::Result<()> {
        // The members in `Envelope`'s order, skipped where its serde
        // attributes skip them.
        out.extend_from_slice(b"{\"version\":");
        serde_json::to_writer(&mut *out, &envelope.version)?;
        out.extend_from_slice(b",\"timestamp\":");
        match &self.last_time {
            Some((time, json)) if *time == envelope.timestamp => out.extend_from_slice(json),
            _ => {
                let json = serde_json::to_vec(&envelope.timestamp)?;
                out.extend_from_slice(&json);
                self.last_time = Some((envelope.timestamp, json));
            }
        }
        out.extend_from_slice(b",\"sequence\":");
        serde_json::to_writer(&mut *out, &envelope.sequence)?;
        match &self.run_id {
            Some(member) => out.extend_from_slice(member),
            None => {
                let mut member = b",\"runId\":".to_vec();
                serde_json::to_writer(&mut member, &envelope.run_id)?;
                out.extend_from_slice(&member);
                self.run_id = Some(member);
            }
        }
        if let Some(direction) = &envelope.direction {
            out.extend_from_slice(b",\"direction\":");
            serde_json::to_writer(&mut *out, direction)?;
        }
        out.extend_from_slice(b",\"actor\":");
        self.actor(&envelope.actor, out)?;
        out.extend_from_slice(b",\"event\":");
        serde_json::to_writer(&mut *out, &envelope.event)?;
        if let Some(raw) = &envelope.raw {
            out.extend_from_slice(b",\"raw\":");
            out.extend_from_slice(raw.get().as_bytes());
        }
        if let Some(reference) = &envelope.raw_ref {
            out.extend_from_slice(b",\"rawRef\":");
            serde_json::to_writer(&mut *out, reference)?;
        }
        if let Some(unavailable) = &envelope.raw_unavailable {
            out.extend_from_slice(b",\"rawUnavailable\":");
            serde_json::to_writer(&mut *out, unavailable)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// Appends `actor`'s JSON, kept from before when it was met lately.
    fn actor(&mut self, actor: &Actor, out: &mut Vec<u8>) -> serde_json::Result<()> {
        if let Some(at) = self.actors.iter().position(|(kept, _)| kept == actor) {
            out.extend_from_slice(&self.actors[at].1);
            // Moved to the front, so the agents at work are found first.
            self.actors[..=at].rotate_right(1);
            return Ok(());
        }
        let json = serde_json::to_vec(actor)?;
        out.extend_from_slice(&json);
        if self.actors.len() == KEPT_ACTORS {
            self.actors.pop();
        }
        self.actors.insert(0, (actor.clone(), json));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentrace_core::model::{Direction, RawRef, RawUnavailable, Role};
    use agentrace_core::attribute::InputLine;
    use agentrace_core::RunId;
    use agentrace_core::recorder::{Format, Recorder};

    /// Every envelope the recorder makes of the repo's Codex app-server
    /// and Claude stream captures.
    fn envelopes() -> Vec<Envelope> {
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures"));
        let mut all = Vec::new();
        for (folder, file, format) in [
            ("codex", "server.jsonl", Format::CodexAppServer),
            ("claude", "stream.jsonl", Format::ClaudeStream),
        ] {
            let mut captures: Vec<_> = std::fs::read_dir(root.join(folder))
                .unwrap_or_else(|e| panic!("{folder}: {e}"))
                .map(|entry| entry.unwrap_or_else(|e| panic!("{e}")).path().join(file))
                .filter(|path| path.is_file())
                .collect();
            captures.sort();
            assert!(captures.len() > 5, "{folder}: {captures:?}");
            for capture in captures {
                let text = std::fs::read(&capture).unwrap_or_else(|e| panic!("{}: {e}", capture.display()));
                let mut recorder = Recorder::new(RunId::from("run-lines"), format);
                all.extend(recorder.start(Timestamp::from_millis(1_795_000_000_000)));
                for (index, line) in text.split(|byte| *byte == b'\n').filter(|line| !line.is_empty()).enumerate() {
                    all.extend(recorder.push(&InputLine {
                        bytes: line,
                        line_number: index as u64 + 1,
                        observed_at: Timestamp::from_millis(1_795_000_000_000),
                        direction: None,
                        truncated_from: None,
                    }));
                }
                all.extend(recorder.finish());
            }
        }
        all
    }

    #[test]
    fn every_line_is_what_serde_writes_for_its_envelope() {
        let mut envelopes = envelopes();
        assert!(envelopes.len() > 1000, "{} envelopes", envelopes.len());
        // The members the captures never set.
        let mut odd = envelopes[1].clone();
        odd.direction = Some(Direction::ToServer);
        odd.raw_ref = Some(RawRef {
            path: "/tmp/a \"quoted\" path.jsonl".to_owned(),
            offset: 7,
            length: 9,
            crc32: 42,
        });
        odd.raw_unavailable = Some(RawUnavailable::SourceChanged);
        odd.actor.label = "Ash \u{1F331} \"explorer\"\n".to_owned();
        odd.actor.role = Role::Helper;
        envelopes.push(odd);
        let mut lines = FullLines::default();
        let mut distinct = std::collections::BTreeSet::new();
        for envelope in &envelopes {
            let mut out = Vec::new();
            lines.encode(envelope, &mut out).unwrap_or_else(|e| panic!("{e}"));
            let expected = serde_json::to_vec(envelope).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(String::from_utf8_lossy(&out), String::from_utf8_lossy(&expected));
            distinct.insert(serde_json::to_string(&envelope.actor).unwrap_or_else(|e| panic!("{e}")));
        }
        // More actors than are kept, so the cache's turnover is exercised.
        assert!(distinct.len() > KEPT_ACTORS, "{} actors", distinct.len());
    }
}
