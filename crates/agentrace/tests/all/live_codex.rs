//! The real `codex app-server` (npm `@openai/codex@0.171.0`) driven by
//! `agentrace run codex` and seen through `agentrace tap`, against a scripted
//! Responses API on 127.0.0.1. Only the model is scripted.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use agentrace_testkit::responses::{Call, MockResponses, Script, Step};
use serde_json::{json, Value};

use super::codex_exec::check_exec_run;
use super::support::Cli;

/// Longest a scenario may take before it is killed (and fails).
const SCENARIO_LIMIT: Duration = Duration::from_secs(150);

struct Codex {
    cli: Cli,
    home: tempfile::TempDir,
    work: tempfile::TempDir,
    mock: MockResponses,
}

impl Codex {
    fn new(script: Script, model: &str, features: &str) -> Self {
        let mock = MockResponses::start(script);
        let home = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let work = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(home.path().join("config.toml"), mock.codex_config(model, features))
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            cli: Cli::new(),
            home,
            work,
            mock,
        }
    }

    fn env(&self, command: &mut Command) {
        // A private HOME too: Codex runs commands in a login shell, and the
        // machine's own profile (pyenv's rehash lock, say) must not stall them.
        command
            .env("HOME", self.home.path())
            .env("CODEX_HOME", self.home.path())
            .env("MOCK_API_KEY", "sk-mock-local")
            .env("RUST_LOG", "error");
    }

    /// Starts `agentrace run codex --codex … --cwd … <options> -- prompt`.
    fn start(&self, options: &[&str], prompt: &str) -> Child {
        let codex = agentrace_testkit::agents::codex();
        let codex = codex.to_string_lossy().into_owned();
        let work = self.work.path().to_string_lossy().into_owned();
        let mut args = vec!["run", "codex", "--codex", &codex, "--cwd", &work];
        args.extend_from_slice(options);
        args.extend_from_slice(&["--", prompt]);
        let mut command = self.cli.command(&args);
        self.env(&mut command);
        command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start agentrace: {e}"))
    }

    /// `agentrace run codex … -- prompt` accepting approvals, bounded in time.
    fn run(&self, run_id: &str, prompt: &str) -> Output {
        wait_bounded(self.start(&["--approval", "accept", "--run-id", run_id], prompt))
    }

    fn show(&self, run: &str) -> Value {
        let stdout = self.cli.ok(&["show", run, "--json"]);
        serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}"))
    }

    fn events(&self, run: &str) -> Vec<Value> {
        self.cli
            .ok(&["events", run, "--json", "--raw"])
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}")))
            .collect()
    }
}

fn wait_bounded(mut child: Child) -> Output {
    // Read both pipes while waiting: a child blocked on a full pipe never exits.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as Box<dyn std::io::Read + Send>));
    let deadline = Instant::now() + SCENARIO_LIMIT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() > deadline => {
                let _ = child.kill();
                let _ = child.wait();
                let stderr = stderr.join().unwrap_or_default();
                panic!(
                    "scenario took longer than {SCENARIO_LIMIT:?}\nstderr:\n{}",
                    String::from_utf8_lossy(&stderr)
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(error) => panic!("{error}"),
        }
    };
    Output {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    }
}

fn spawn_v1(child: &str, task: &str) -> Call {
    Call::new("spawn_agent", json!({"message": format!("[[CHILD:{child}]] {task}")}))
}

fn shell(command: &str) -> Step {
    Step::Calls(vec![Call::new("exec_command", json!({"cmd": command, "yield_time_ms": 5000}))])
}

const ROOT_ANSWER: &str = "ROOT DONE: final answer from the root agent.";

/// Checks what every scenario must hold: each frame that names its thread
/// is that thread's, by the provider's word; the run ends at the root's
/// turn; the result is the root's own answer.
fn check_attribution(events: &[Value], root: &str) {
    let mut root_turn_completed = None;
    for (index, envelope) in events.iter().enumerate() {
        let raw = &envelope["raw"];
        if let Some(thread) = raw.pointer("/params/threadId").and_then(Value::as_str) {
            assert_eq!(envelope["actor"]["threadId"], thread, "sequence {}", envelope["sequence"]);
            assert_eq!(envelope["actor"]["confidence"], "provider");
        }
        if !raw.is_null() {
            assert!(envelope["direction"].is_string(), "a driven frame says which way it went");
        }
        if raw["method"] == "turn/completed" && raw["params"]["threadId"] == root {
            root_turn_completed = Some(index);
        }
        if matches!(envelope["event"]["type"].as_str(), Some("done" | "failed" | "interrupted")) {
            let previous = events[..index].iter().rev().find(|e| !e["raw"].is_null());
            let previous = previous.map(|e| &e["raw"]).unwrap_or(&Value::Null);
            assert_eq!(previous["method"], "turn/completed");
            assert_eq!(previous["params"]["threadId"], root, "only the root's turn ends the run");
        }
    }
    assert!(root_turn_completed.is_some(), "the root's turn completed");
}

fn labels(agent: &Value, out: &mut Vec<(String, String, u64)>) {
    out.push((
        agent["label"].as_str().unwrap_or_default().to_owned(),
        agent["role"].as_str().unwrap_or_default().to_owned(),
        agent["depth"].as_u64().unwrap_or(99),
    ));
    for child in agent["children"].as_array().into_iter().flatten() {
        labels(child, out);
    }
}

fn without_ids(mut view: Value) -> Value {
    view["run"]["id"] = Value::Null;
    view
}

#[test]
fn run_codex_records_one_v1_child_and_prints_the_roots_answer() {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![spawn_v1("A", "Run `echo hello-from-child-A` and report its output.")]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 60000}))]),
                Step::Calls(vec![Call::new("close_agent", json!({"target": "$AGENT_ID_0"}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent(
            "CHILD:A",
            vec![shell("echo hello-from-child-A"), Step::Message("CHILD A DONE: it printed hello-from-child-A.".to_owned())],
        );
    let codex = Codex::new(script, "mock-model", "");
    let output = codex.run("v1-one", "[[ROOT]] Delegate the work to a sub-agent, wait for it, then answer.");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{ROOT_ANSWER}\n"));
    // The live view named who did what.
    assert!(stderr.contains("Main  spawned"), "{stderr}");
    assert!(stderr.contains("shell: /bin/bash -lc 'echo hello-from-child-A'") || stderr.contains("shell: "), "{stderr}");
    let view = codex.show("v1-one");
    let root = view["run"]["rootThreadId"].as_str().unwrap_or_default().to_owned();
    assert_eq!(view["run"]["status"], "done");
    assert_eq!(view["run"]["source"], "codex-run");
    assert_eq!(view["run"]["result"], ROOT_ANSWER);
    assert_eq!(view["run"]["resultSource"]["role"], "root");
    assert_eq!(view["run"]["resultSource"]["threadId"], root.as_str());
    let mut tree = Vec::new();
    labels(&view["agents"][0], &mut tree);
    assert_eq!(tree.len(), 2, "{tree:?}");
    assert_eq!((tree[0].1.as_str(), tree[0].2), ("root", 0));
    assert_eq!((tree[1].1.as_str(), tree[1].2), ("helper", 1));
    let helper = &view["agents"][0]["children"][0];
    assert_eq!(helper["finalMessage"], "CHILD A DONE: it printed hello-from-child-A.");
    assert_eq!(helper["toolCount"], 1);
    check_attribution(&codex.events("v1-one"), &root);

    // The same stream attributed again from the log gives the same run.
    let log = codex.cli.home.path().join("runs/v1-one.jsonl");
    let replayed = codex.cli.ingest(&log, &["--run-id", "v1-one-replayed", "--quiet"]);
    assert_eq!(without_ids(codex.show(&replayed)), without_ids(view));
}

/// `--sandbox` asks the real Codex for the thread's sandbox: the server's
/// answer to `thread/start` names the policy it applies (`readOnly` for
/// `read-only`), where without the flag it is the config's.
#[test]
fn run_codex_sandbox_sets_the_threads_sandbox() {
    let script = Script::new().agent("ROOT", vec![Step::Message(ROOT_ANSWER.to_owned())]);
    let codex = Codex::new(script, "mock-model", "");
    let output = wait_bounded(codex.start(&["--approval", "accept", "--run-id", "sandboxed", "--sandbox", "read-only"], "[[ROOT]] Answer."));
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let sandboxes = |run: &str| -> Vec<(Value, Value)> {
        codex
            .events(run)
            .iter()
            .filter_map(|envelope| {
                let raw = &envelope["raw"];
                let asked = raw["params"]["sandbox"].clone();
                let applied = raw["result"]["sandbox"]["type"].clone();
                (!asked.is_null() || !applied.is_null()).then_some((asked, applied))
            })
            .collect()
    };
    assert_eq!(sandboxes("sandboxed"), vec![(json!("read-only"), Value::Null), (Value::Null, json!("readOnly"))]);
}

#[test]
fn run_codex_records_two_parallel_v1_children() {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![spawn_v1("A", "Say A."), spawn_v1("B", "Say B.")]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 60000}))]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 60000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
                // A child's completion notice that reaches the root after
                // its answer was asked for is read in one more request of
                // the same turn (under load, now and then): the model
                // answers it the same, as a real one would.
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent("CHILD:A", vec![Step::Message("CHILD A DONE".to_owned())])
        .agent("CHILD:B", vec![Step::Message("CHILD B DONE".to_owned())]);
    let codex = Codex::new(script, "mock-model", "");
    let output = codex.run("v1-two", "[[ROOT]] Spawn two helpers in parallel.");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let view = codex.show("v1-two");
    let children = view["agents"][0]["children"].as_array().cloned().unwrap_or_default();
    let mut finals: Vec<&str> = children.iter().filter_map(|c| c["finalMessage"].as_str()).collect();
    finals.sort_unstable();
    assert_eq!(finals, vec!["CHILD A DONE", "CHILD B DONE"]);
    assert!(children.iter().all(|c| c["role"] == "helper" && c["depth"] == 1));
    // Should it differ, what the model was asked, each request's thread and
    // last input item, says why.
    let asked: Vec<String> = codex
        .mock
        .requests()
        .iter()
        .map(|request| {
            let last = request["input"].as_array().and_then(|items| items.last()).map(Value::to_string).unwrap_or_default();
            format!("{} {}", request["client_metadata"]["thread_id"], last.chars().take(200).collect::<String>())
        })
        .collect();
    assert_eq!(view["run"]["result"], ROOT_ANSWER, "{asked:#?}");
    let root = view["run"]["rootThreadId"].as_str().unwrap_or_default().to_owned();
    check_attribution(&codex.events("v1-two"), &root);
}

#[test]
fn run_codex_records_a_child_whose_model_call_fails() {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![spawn_v1("A", "Try your best.")]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 60000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent("CHILD:A", vec![Step::Http500]);
    let codex = Codex::new(script, "mock-model", "");
    let output = codex.run("v1-fail", "[[ROOT]] Delegate, even if it fails.");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let view = codex.show("v1-fail");
    let helper = &view["agents"][0]["children"][0];
    assert_eq!(helper["status"], "failed");
    assert_eq!(view["run"]["result"], ROOT_ANSWER, "a failed helper never supplies the answer");
    let root = view["run"]["rootThreadId"].as_str().unwrap_or_default().to_owned();
    check_attribution(&codex.events("v1-fail"), &root);
}

#[test]
fn run_codex_records_a_v2_child_by_its_task_path() {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![Call::new("spawn_agent", json!({"task_name": "child_a", "message": "[[CHILD:A]] Say A."}))]),
                Step::Calls(vec![Call::new("wait_agent", json!({"timeout_ms": 60000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent("CHILD:A", vec![Step::Message("CHILD A DONE (v2)".to_owned())]);
    let codex = Codex::new(script, "mock-model", "multi_agent_v2 = true");
    let output = codex.run("v2", "[[ROOT]] Delegate with a task name.");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let view = codex.show("v2");
    let helper = &view["agents"][0]["children"][0];
    assert_eq!(helper["label"], "/root/child_a");
    assert_eq!(helper["status"], "completed");
    assert_eq!(view["run"]["result"], ROOT_ANSWER);
    let root = view["run"]["rootThreadId"].as_str().unwrap_or_default().to_owned();
    check_attribution(&codex.events("v2"), &root);
}

#[test]
fn run_codex_records_a_grandchild_at_depth_two() {
    let spawn = |name: &str, marker: &str| {
        Step::Calls(vec![Call::new("spawn_agent", json!({"task_name": name, "message": format!("[[{marker}]] Do your part.")}))])
    };
    let wait = || Step::Calls(vec![Call::new("wait_agent", json!({"timeout_ms": 60000}))]);
    let script = Script::new()
        .agent("ROOT", vec![spawn("child_a", "CHILD:A"), wait(), Step::Message(ROOT_ANSWER.to_owned())])
        .agent("CHILD:A", vec![spawn("child_g", "CHILD:G"), wait(), Step::Message("CHILD A DONE".to_owned())])
        .agent("CHILD:G", vec![Step::Message("CHILD G DONE".to_owned())]);
    let codex = Codex::new(script, "gpt-6.1-sol", "");
    let output = codex.run("nested", "[[ROOT]] Delegate to a helper that delegates again.");
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let view = codex.show("nested");
    let mut tree = Vec::new();
    labels(&view["agents"][0], &mut tree);
    assert_eq!(
        tree,
        vec![
            ("Main".to_owned(), "root".to_owned(), 0),
            ("/root/child_a".to_owned(), "helper".to_owned(), 1),
            ("/root/child_a/child_g".to_owned(), "helper".to_owned(), 2),
        ]
    );
    assert_eq!(view["run"]["result"], ROOT_ANSWER);
    let root = view["run"]["rootThreadId"].as_str().unwrap_or_default().to_owned();
    check_attribution(&codex.events("nested"), &root);
}

/// A small app-server client of our own, talking through `agentrace tap`.
fn drive_through_tap(codex: &Codex, run_id: &str, prompt: &str) -> (Vec<String>, Option<i32>) {
    drive_turns_through_tap(codex, run_id, &[(prompt, json!({}))])
}

/// The client of [`drive_through_tap`], starting one turn after another
/// with `turns`' prompts, each `turn/start` with its extra params.
fn drive_turns_through_tap(codex: &Codex, run_id: &str, turns: &[(&str, Value)]) -> (Vec<String>, Option<i32>) {
    let binary = agentrace_testkit::agents::codex();
    let binary = binary.to_string_lossy().into_owned();
    let mut command = codex.cli.command(&["tap", "--run-id", run_id, "--", &binary, "app-server"]);
    codex.env(&mut command);
    let mut child = command
        .current_dir(codex.work.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let stdout = child.stdout.take().unwrap_or_else(|| panic!("no stdout"));
    let (sender, receiver) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if sender.send(line).is_err() {
                break;
            }
        }
    });
    let mut send = |value: Value| {
        let mut line = serde_json::to_vec(&value).unwrap_or_default();
        line.push(b'\n');
        stdin.write_all(&line).unwrap_or_else(|e| panic!("{e}"));
    };
    let work = codex.work.path().to_string_lossy().into_owned();
    send(json!({"id": 1, "method": "initialize", "params": {"clientInfo": {"name": "test-client", "version": "1"}, "capabilities": {"experimentalApi": true}}}));
    let deadline = Instant::now() + SCENARIO_LIMIT;
    let mut received = Vec::new();
    let mut root = None;
    let mut turns = turns.iter();
    let mut next_turn = 3;
    let mut start_turn = |send: &mut dyn FnMut(Value), thread: &str| match turns.next() {
        Some((prompt, extra)) => {
            let mut params = json!({"threadId": thread, "input": [{"type": "text", "text": prompt}]});
            for (key, value) in extra.as_object().into_iter().flatten() {
                params[key] = value.clone();
            }
            send(json!({"id": next_turn, "method": "turn/start", "params": params}));
            next_turn += 1;
            true
        }
        None => false,
    };
    loop {
        let line = receiver
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .unwrap_or_else(|e| panic!("no answer through the tap: {e}"));
        let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        received.push(line);
        if message["id"] == 1 && message.get("result").is_some() {
            send(json!({"method": "initialized"}));
            send(json!({"id": 2, "method": "thread/start", "params": {"cwd": work}}));
        } else if message["id"] == 2 && message.get("result").is_some() {
            let thread = message["result"]["thread"]["id"].as_str().unwrap_or_default().to_owned();
            start_turn(&mut send, &thread);
            root = Some(thread);
        } else if message["method"] == "turn/completed"
            && root.as_deref().is_some_and(|root| message["params"]["threadId"] == root)
            && !start_turn(&mut send, root.as_deref().unwrap_or_default())
        {
            break;
        }
    }
    drop(stdin);
    let output = wait_bounded(child);
    (received, output.status.code())
}

#[test]
fn tap_is_invisible_to_a_client_and_records_the_same_run() {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![spawn_v1("A", "Say A.")]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 60000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent("CHILD:A", vec![Step::Message("CHILD A DONE".to_owned())]);
    let codex = Codex::new(script, "mock-model", "");
    let (received, code) = drive_through_tap(&codex, "tapped", "[[ROOT]] Delegate once.");
    assert_eq!(code, Some(0), "the tap exits with the server's code");
    let events = codex.events("tapped");
    // Every line the client received is recorded, byte for byte, in order.
    let recorded: Vec<String> = events
        .iter()
        .filter(|e| e["direction"] == "fromServer")
        .filter_map(|e| e.get("raw").map(|raw| raw.to_string()))
        .collect();
    let received: Vec<String> = received
        .iter()
        .map(|line| serde_json::from_str::<Value>(line).map(|v| v.to_string()).unwrap_or_default())
        .collect();
    assert_eq!(&recorded[..received.len()], &received[..]);
    let to_server: Vec<&Value> = events.iter().filter(|e| e["direction"] == "toServer").collect();
    assert_eq!(to_server[0]["raw"]["method"], "initialize");
    let view = codex.show("tapped");
    assert_eq!(view["run"]["source"], "codex-tap");
    assert_eq!(view["run"]["status"], "done");
    assert_eq!(view["run"]["result"], ROOT_ANSWER);
    assert_eq!(view["agents"][0]["children"][0]["finalMessage"], "CHILD A DONE");
    let root = view["run"]["rootThreadId"].as_str().unwrap_or_default().to_owned();
    check_attribution(&events, &root);
}

#[test]
fn run_codex_fails_with_the_servers_status_when_it_dies_mid_turn() {
    let script = Script::new().agent("ROOT", vec![Step::Calls(vec![spawn_v1("A", "Wait.")])]);
    let codex = Codex::new(script, "mock-model", "");
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    // A "server" that answers initialize like Codex would, then dies.
    let fake = dir.path().join("dying-server");
    std::fs::write(
        &fake,
        "#!/bin/sh\nread line\necho '{\"id\":1,\"result\":{}}'\nread line\nread line\necho 'about to die' >&2\nexit 3\n",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    make_executable(&fake);
    let fake = fake.to_string_lossy().into_owned();
    let output = codex.cli.run(&["run", "codex", "--codex", &fake, "--run-id", "dies", "--quiet", "--", "hello"]);
    assert_eq!(output.status.code(), Some(1));
    let view = codex.show("dies");
    assert_eq!(view["run"]["status"], "failed");
    let error = view["run"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("exit status: 3") && error.contains("about to die"), "{error}");
    let events = codex.events("dies");
    assert!(events.iter().any(|e| e["raw"]["id"] == 1), "what was received is kept");
    let _ = &codex.mock;
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt as _;
    let mut permissions = std::fs::metadata(path).unwrap_or_else(|e| panic!("{e}")).permissions();
    permissions.set_mode(0o755);
    std::fs::set_permissions(path, permissions).unwrap_or_else(|e| panic!("{e}"));
}

/// Runs `agentrace tap` over a shell "server" and feeds it `input`.
fn tap_shell(cli: &Cli, run_id: &str, script: &str, input: &[u8]) -> Output {
    let mut child = cli
        .command(&["tap", "--run-id", run_id, "--", "sh", "-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let output = wait_bounded(child);
    let _ = writer.join();
    output
}

#[test]
fn tap_forwards_a_closed_stdin_and_exits_with_the_servers_code() {
    let cli = Cli::new();
    let input = b"{\"id\":1,\"method\":\"initialize\"}\n{\"method\":\"initialized\"}\n";
    let output = tap_shell(&cli, "closed", "cat; exit 7", input);
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(output.stdout, input.to_vec(), "bytes pass through unchanged, in order");
    let events: Vec<Value> = cli
        .ok(&["events", "closed", "--json"])
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}")))
        .collect();
    let directions: Vec<&str> = events.iter().filter_map(|e| e["direction"].as_str()).collect();
    assert_eq!(directions, vec!["toServer", "toServer", "fromServer", "fromServer"]);
}

#[test]
fn tap_passes_bad_bytes_through_exactly_and_the_recorder_counts_them() {
    let cli = Cli::new();
    let mut input = Vec::new();
    input.extend_from_slice(b"{\"id\":1,\"method\":\"initialize\"}\n");
    input.extend_from_slice(b"not json\n");
    input.extend_from_slice(b"{\"method\":\"bad \xff\xfe utf8\"}\n");
    let huge = agentrace_core_free_huge_line();
    input.extend_from_slice(&huge);
    input.extend_from_slice(b"{\"method\":\"partial last line");
    let output = tap_shell(&cli, "bad", "cat", &input);
    assert_eq!(output.status.code(), Some(0));
    assert!(output.stdout == input, "the tap changed the bytes it passed through");
    let view: Value = serde_json::from_str(&cli.ok(&["show", "bad", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    // not json, bad UTF-8, the huge line and the partial last line, each way.
    assert_eq!(view["run"]["counts"]["undecodedLines"], 8);
    assert_eq!(view["run"]["counts"]["droppedBytes"], 0);
}

/// A line just over the 64 MiB limit, newline included.
fn agentrace_core_free_huge_line() -> Vec<u8> {
    let mut line = vec![b'x'; 64 * 1024 * 1024 + 16];
    line.push(b'\n');
    line
}

#[test]
fn ctrl_c_interrupts_the_root_turn_and_exits_130() {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![spawn_v1("A", "Take your time.")]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 120000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent("CHILD:A", vec![shell("sleep 60"), Step::Message("CHILD A DONE".to_owned())]);
    let codex = Codex::new(script, "mock-model", "");
    let child = codex.start(&["--run-id", "stopped"], "[[ROOT]] Wait for a slow helper.");
    // Interrupt once the root is waiting for its helper.
    let log = codex.cli.home.path().join("runs/stopped.jsonl");
    let deadline = Instant::now() + SCENARIO_LIMIT;
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.contains("\"agent_wait_started\"") {
            break;
        }
        assert!(Instant::now() < deadline, "the root never started waiting");
        std::thread::sleep(Duration::from_millis(100));
    }
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(status.success());
    let output = wait_bounded(child);
    assert_eq!(output.status.code(), Some(130), "{}", String::from_utf8_lossy(&output.stderr));
    let view = codex.show("stopped");
    assert_eq!(view["run"]["status"], "interrupted");
    assert_eq!(view["run"]["result"], Value::Null);
    let events = codex.events("stopped");
    assert!(
        events.iter().any(|e| e["direction"] == "toServer" && e["raw"]["method"] == "turn/interrupt"),
        "turn/interrupt was sent and recorded"
    );
}

fn approval_run(policy: &str, run_id: &str) -> (Codex, Value, Vec<Value>) {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![spawn_v1("A", "Write a file.")]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 60000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent(
            "CHILD:A",
            vec![shell("mkdir -p out && echo hello | tee out/child-A.txt"), Step::Message("CHILD A DONE".to_owned())],
        );
    let codex = Codex::new(script, "mock-model", "");
    let options = ["--approval-policy", "untrusted", "--approval", policy, "--run-id", run_id, "--quiet"];
    let output = wait_bounded(codex.start(&options, "[[ROOT]] Delegate a write."));
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let view = codex.show(run_id);
    let events = codex.events(run_id);
    (codex, view, events)
}

fn approval_answers(events: &[Value]) -> Vec<(String, Value)> {
    let requests: Vec<&Value> = events.iter().filter(|e| e["event"]["type"] == "server_request").collect();
    requests
        .iter()
        .map(|request| {
            let id = &request["raw"]["id"];
            let answer = events
                .iter()
                .find(|e| e["direction"] == "toServer" && &e["raw"]["id"] == id && e["raw"].get("result").is_some())
                .map(|e| e["raw"]["result"]["decision"].clone())
                .unwrap_or(Value::Null);
            (request["actor"]["role"].as_str().unwrap_or_default().to_owned(), answer)
        })
        .collect()
}

#[test]
fn approval_requests_of_a_helper_are_answered_by_policy_and_recorded() {
    let (codex, view, events) = approval_run("accept", "approve");
    assert_eq!(approval_answers(&events), vec![("helper".to_owned(), json!("accept"))]);
    assert!(codex.work.path().join("out/child-A.txt").exists(), "the accepted command ran");
    assert_eq!(view["run"]["result"], ROOT_ANSWER);

    let (codex, _, events) = approval_run("deny", "deny");
    assert_eq!(approval_answers(&events), vec![("helper".to_owned(), json!("decline"))]);
    assert!(!codex.work.path().join("out/child-A.txt").exists(), "the declined command did not run");
}

#[test]
fn tap_with_otlp_exports_the_run_when_the_session_ends() {
    let cli = Cli::new();
    let (endpoint, received) = super::support::otlp_receiver();
    let frames = concat!(
        "{\"method\":\"thread/started\",\"params\":{\"thread\":{\"id\":\"t-root\",\"source\":\"vscode\"}}}\n",
        "{\"method\":\"turn/started\",\"params\":{\"threadId\":\"t-root\",\"turn\":{\"id\":\"u1\",\"status\":\"inProgress\"}}}\n",
        "{\"method\":\"item/completed\",\"params\":{\"threadId\":\"t-root\",\"turnId\":\"u1\",\"item\":{\"type\":\"agentMessage\",\"id\":\"m1\",\"text\":\"ok\",\"phase\":null}}}\n",
        "{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"t-root\",\"turn\":{\"id\":\"u1\",\"status\":\"completed\"}}}\n",
    );
    let mut child = cli
        .command(&["tap", "--run-id", "exported", "--otlp", &endpoint, "--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{e}"));
    let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
    stdin.write_all(frames.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
    drop(stdin);
    let output = wait_bounded(child);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.stdout, frames.as_bytes());
    assert_eq!(received.load(std::sync::atomic::Ordering::SeqCst), 1, "{}", String::from_utf8_lossy(&output.stderr));
}

/// A user's own `codex exec`, started without agentrace, followed by
/// `agentrace watch` through the rollouts Codex writes: while the helper
/// runs its command, its record reads `working` with that tool; once it is
/// over, `ended succeeded`; and the watched run is exactly what an import
/// of the finished files makes.
#[test]
fn watch_follows_a_codex_session_started_without_agentrace() {
    let script = Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![spawn_v1("A", "Run `sleep 4` and report.")]),
                Step::Calls(vec![Call::new("wait_agent", json!({"targets": "$AGENT_IDS", "timeout_ms": 60000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent("CHILD:A", vec![shell("sleep 4"), Step::Message("CHILD A DONE: it slept.".to_owned())]);
    let codex = Codex::new(script, "mock-model", "");
    let claude = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let codex_home = codex.home.path().to_string_lossy().into_owned();
    let claude_dir = claude.path().to_string_lossy().into_owned();
    struct Killed(Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let watch = Killed(
        codex
            .cli
            .command(&["watch", "--codex-home", &codex_home, "--claude-dir", &claude_dir, "--quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}")),
    );
    let mut exec = Command::new(agentrace_testkit::agents::codex());
    codex.env(&mut exec);
    let exec = exec
        .args(["exec", "--skip-git-repo-check", "--json", "[[ROOT]] Delegate the work to a sub-agent, wait for it, then answer."])
        .current_dir(codex.work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start codex exec: {e}"));
    let records = |cli: &Cli| -> Vec<Value> {
        let output = cli.run(&["status", "--json"]);
        serde_json::from_slice::<Value>(&output.stdout)
            .ok()
            .and_then(|value| value["records"].as_array().cloned())
            .unwrap_or_default()
    };
    let deadline = Instant::now() + SCENARIO_LIMIT;
    let working = loop {
        let found = records(&codex.cli)
            .into_iter()
            .find(|record| record["kind"] == "agent" && record["state"] == "working" && record["operation"].is_object());
        if let Some(record) = found {
            break record;
        }
        assert!(Instant::now() < deadline, "the helper was never seen working with a tool");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(working["operation"]["basis"], "open");
    assert!(working["operation"]["input"].as_str().unwrap_or_default().contains("sleep 4"), "{working}");
    let output = wait_bounded(exec);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let deadline = Instant::now() + Duration::from_secs(20);
    let ended = loop {
        let found = records(&codex.cli).into_iter().find(|record| record["childWorkId"] == working["childWorkId"] && record["state"] == "ended");
        let done = codex.cli.run(&["show", "latest", "--json"]);
        let done = serde_json::from_slice::<Value>(&done.stdout).map(|view| view["run"]["status"] == "done").unwrap_or(false);
        if let (Some(record), true) = (found, done) {
            break record;
        }
        assert!(
            Instant::now() < deadline,
            "the helper never read ended with the run done:\n{}\n{}",
            codex.cli.ok(&["status"]),
            codex.cli.ok(&["show", "latest"])
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(ended["outcome"], "succeeded");
    drop(watch);
    let whole = Cli::new();
    let import = whole.run(&["import", "--codex-home", &codex_home, "--claude-dir", &claude_dir]);
    assert!(import.status.success(), "{}", String::from_utf8_lossy(&import.stderr));
    assert_eq!(codex.cli.ok(&["show", "latest", "--json"]), whole.ok(&["show", "latest", "--json"]));
    assert_eq!(codex.cli.ok(&["status", "--json"]), whole.ok(&["status", "--json"]));
}


/// Two V2 helpers spawned in one model response: the `codex exec` stream
/// shows neither (only the root's waits), so both come from the rollouts.
fn parallel_v2_spawn() -> Script {
    Script::new()
        .agent(
            "ROOT",
            vec![
                Step::Calls(vec![
                    Call::new("spawn_agent", json!({"task_name": "child_a", "message": "[[CHILD:A]] Run `echo a` and report."})),
                    Call::new("spawn_agent", json!({"task_name": "child_b", "message": "[[CHILD:B]] Say B."})),
                ]),
                Step::Calls(vec![Call::new("wait_agent", json!({"timeout_ms": 60000}))]),
                // Returns at once when the first wait saw both end; else
                // when the other ends. The bound only keeps a run short
                // where the first wait already saw both.
                Step::Calls(vec![Call::new("wait_agent", json!({"timeout_ms": 10000}))]),
                Step::Message(ROOT_ANSWER.to_owned()),
            ],
        )
        .agent("CHILD:A", vec![shell("echo a"), Step::Message("CHILD A DONE (v2)".to_owned())])
        .agent("CHILD:B", vec![Step::Message("CHILD B DONE (v2)".to_owned())])
}

#[test]
fn run_codex_exec_records_every_v2_child_of_a_parallel_spawn_with_its_rollouts_tokens() {
    let codex = Codex::new(parallel_v2_spawn(), "mock-model", "multi_agent_v2 = true");
    let binary = agentrace_testkit::agents::codex().to_string_lossy().into_owned();
    let work = codex.work.path().to_string_lossy().into_owned();
    let home = codex.home.path().to_string_lossy().into_owned();
    let mut command = codex.cli.command(&[
        "run", "codex", "--exec", "--codex", &binary, "--cwd", &work, "--codex-home", &home,
        "--skip-git-repo-check", "--run-id", "exec-v2", "--", "[[ROOT]] Delegate to two helpers at once.",
    ]);
    codex.env(&mut command);
    // Not from the environment: `--codex-home` names the home codex runs with.
    command.env_remove("CODEX_HOME");
    let output = wait_bounded(command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap_or_else(|e| panic!("{e}")));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), format!("{ROOT_ANSWER}\n"));
    check_exec_run(&codex.show("exec-v2"), codex.home.path(), ROOT_ANSWER);
}

#[test]
fn a_saved_codex_exec_stream_is_detected_and_joined_to_its_rollouts() {
    let codex = Codex::new(parallel_v2_spawn(), "mock-model", "multi_agent_v2 = true");
    let mut exec = Command::new(agentrace_testkit::agents::codex());
    codex.env(&mut exec);
    let exec = exec
        .args(["exec", "--skip-git-repo-check", "--json", "[[ROOT]] Delegate to two helpers at once."])
        .current_dir(codex.work.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start codex exec: {e}"));
    let output = wait_bounded(exec);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let stream = codex.work.path().join("exec.jsonl");
    std::fs::write(&stream, &output.stdout).unwrap_or_else(|e| panic!("{e}"));
    let home = codex.home.path().to_string_lossy().into_owned();
    // No --format: the stream's `thread.started` says what it is.
    let id = codex.cli.ingest(&stream, &["--codex-home", &home, "--quiet", "--run-id", "exec-saved"]);
    assert_eq!(id, "exec-saved");
    check_exec_run(&codex.show("exec-saved"), codex.home.path(), ROOT_ANSWER);
}

/// `tap` and `run codex` keep the `TRACEPARENT` they were started in with
/// the run, so a later export joins that trace; a malformed one is named
/// and left out, never a failed session.
#[test]
fn tap_keeps_the_trace_context_it_was_started_in_with_the_run() {
    let cli = Cli::new();
    let frames = concat!(
        "{\"method\":\"thread/started\",\"params\":{\"thread\":{\"id\":\"t-root\",\"source\":\"vscode\"}}}\n",
        "{\"method\":\"turn/started\",\"params\":{\"threadId\":\"t-root\",\"turn\":{\"id\":\"u1\",\"status\":\"inProgress\"}}}\n",
        "{\"method\":\"turn/completed\",\"params\":{\"threadId\":\"t-root\",\"turn\":{\"id\":\"u1\",\"status\":\"completed\"}}}\n",
    );
    let tap = |run_id: &str, traceparent: &str| {
        let mut child = cli
            .command(&["tap", "--run-id", run_id, "--", "cat"])
            .env("TRACEPARENT", traceparent)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{e}"));
        let mut stdin = child.stdin.take().unwrap_or_else(|| panic!("no stdin"));
        stdin.write_all(frames.as_bytes()).unwrap_or_else(|e| panic!("{e}"));
        drop(stdin);
        let output = wait_bounded(child);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        let view: Value = serde_json::from_str(&cli.ok(&["show", run_id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
        (view["run"]["traceparent"].clone(), String::from_utf8_lossy(&output.stderr).into_owned())
    };
    let given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    assert_eq!(tap("traced", given).0, json!(given));
    let (kept, stderr) = tap("badly-traced", "00-not-a-trace-01");
    assert_eq!(kept, Value::Null);
    assert!(stderr.contains("warning: TRACEPARENT ignored: `00-not-a-trace-01` is not a W3C traceparent"), "{stderr}");
}

#[test]
fn a_model_a_client_switches_to_in_turn_start_prices_the_turns_after_it() {
    // Codex 0.171 answers a `turn/start` that overrides the model with
    // `thread/settings/updated`, naming it; the thread's token updates never
    // name one.
    let script = Script::new().agent("ROOT", vec![Step::Message("FIRST".to_owned()), Step::Message("SECOND".to_owned())]);
    let codex = Codex::new(script, "mock-model", "");
    let (received, code) = drive_turns_through_tap(
        &codex,
        "switched",
        &[("[[ROOT]] One.", json!({})), ("[[ROOT]] Two.", json!({"model": "gpt-6.1-sol"}))],
    );
    assert_eq!(code, Some(0));
    assert!(received.iter().any(|line| line.contains(r#""method":"thread/settings/updated""#)), "no settings update");
    let view = codex.show("switched");
    let root = &view["agents"][0];
    let parts: Vec<(Value, bool)> = root["tokensByModel"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|part| (part["model"].clone(), part["cost"].as_f64().is_some_and(|cost| cost > 0.0)))
        .collect();
    // The first turn ran the configured model (no price), the second the
    // one the client switched to.
    assert_eq!(parts, vec![(json!("mock-model"), false), (json!("gpt-6.1-sol"), true)], "{root:#}");
    assert_eq!((&root["model"], &root["costStatus"]), (&json!("gpt-6.1-sol"), &json!("floor")), "{root:#}");
    // The settings update is read, not an unknown frame.
    let events = codex.events("switched");
    let unknown: Vec<&Value> = events.iter().filter(|event| event["event"]["type"] == "unknown").collect();
    assert!(unknown.is_empty(), "{unknown:?}");
}

/// A Codex usage event's request (its `last`) priced straight by the
/// database as gpt-6.1-sol, at `tier` when one is given.
fn sol_price(usage: &Value, tier: Option<&str>) -> f64 {
    let last = &usage["event"]["last"];
    let number = |key: &str| last[key].as_f64().unwrap_or(0.0);
    let tokens = [
        ("input_tokens", number("inputTokens")),
        ("cache_read_tokens", number("cachedInputTokens")),
        ("output_tokens", number("outputTokens")),
    ];
    let timestamp = usage["timestamp"].as_str().unwrap_or_default();
    super::costs::priced_at_tier("openai", "gpt-6.1-sol", &tokens, timestamp, tier).unwrap_or_else(|| panic!("no price"))
}

#[test]
fn a_service_tier_a_client_switches_to_prices_the_turns_after_it() {
    // Codex 0.171 sends a `turn/start`'s `serviceTier` to the model's API
    // as `service_tier` ("fast" as "priority") and announces it in
    // `thread/settings/updated`; a tier unchanged is not announced again.
    let script = Script::new().agent(
        "ROOT",
        vec![Step::Message("FIRST".to_owned()), Step::Message("SECOND".to_owned()), Step::Message("THIRD".to_owned())],
    );
    let codex = Codex::new(script, "gpt-6.1-sol", "");
    let (_, code) = drive_turns_through_tap(
        &codex,
        "tiers",
        &[
            ("[[ROOT]] One.", json!({})),
            ("[[ROOT]] Two.", json!({"serviceTier": "flex"})),
            ("[[ROOT]] Three.", json!({"serviceTier": "fast"})),
        ],
    );
    assert_eq!(code, Some(0));
    let sent: Vec<Value> = codex.mock.requests().iter().map(|request| request["service_tier"].clone()).collect();
    assert_eq!(sent, vec![Value::Null, json!("flex"), json!("priority")]);
    // Each turn's request priced straight by the database at the tier the
    // API was asked for.
    let usages: Vec<Value> = codex.events("tiers").into_iter().filter(|event| event["event"]["type"] == "usage").collect();
    assert_eq!(usages.len(), 3);
    let priced = |tiers: [Option<&str>; 3]| -> f64 { usages.iter().zip(tiers).map(|(usage, tier)| sol_price(usage, tier)).sum() };
    let (expected, standard) = (priced([None, Some("flex"), Some("priority")]), priced([None; 3]));
    let root = &codex.show("tiers")["agents"][0];
    let cost = root["cost"].as_f64().unwrap_or_else(|| panic!("no cost: {root:#}"));
    assert!((cost - expected).abs() <= expected * 1e-9, "{cost} where {expected} is due");
    // Not what the standard tier would have cost.
    assert!((cost - standard).abs() > standard * 1e-3, "{cost} is the standard tier's {standard}");
}

#[test]
fn a_service_tier_set_in_the_codex_config_prices_the_thread() {
    // The answer to `thread/start` names the configured tier
    // (`serviceTier`), as the API is sent it.
    let script = Script::new().agent("ROOT", vec![Step::Message("FIRST".to_owned())]);
    let codex = Codex::new(script, "gpt-6.1-sol", "");
    let config = codex.home.path().join("config.toml");
    let written = std::fs::read_to_string(&config).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&config, format!("service_tier = \"flex\"\n{written}")).unwrap_or_else(|e| panic!("{e}"));
    let (_, code) = drive_turns_through_tap(&codex, "configured", &[("[[ROOT]] One.", json!({}))]);
    assert_eq!(code, Some(0));
    let sent: Vec<Value> = codex.mock.requests().iter().map(|request| request["service_tier"].clone()).collect();
    assert_eq!(sent, vec![json!("flex")]);
    let usages: Vec<Value> = codex.events("configured").into_iter().filter(|event| event["event"]["type"] == "usage").collect();
    let [usage] = &usages[..] else { panic!("{} usages", usages.len()) };
    let (flex, standard) = (sol_price(usage, Some("flex")), sol_price(usage, None));
    let root = &codex.show("configured")["agents"][0];
    let cost = root["cost"].as_f64().unwrap_or_else(|| panic!("no cost: {root:#}"));
    assert!((cost - flex).abs() <= flex * 1e-9 && flex < standard, "{cost} where {flex} is due (standard {standard})");
}
