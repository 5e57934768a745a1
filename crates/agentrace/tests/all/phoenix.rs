//! `agentrace export --otlp` against a real trace backend: Arize Phoenix
//! (installed by scripts/install-phoenix), started on loopback with its own
//! ports and working dir, fully offline, stopped by its pid. The span tree it
//! stores must be the agent tree `show --json` prints.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::{capture, Cli};

/// How long Phoenix gets to become ready (about 10 s here; CI is shared).
const READY_WITHIN: Duration = Duration::from_secs(240);

/// One Phoenix at a time: two started at once on a busy two-core machine
/// (each a Python server importing hundreds of modules) were not ready
/// within two minutes.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
/// How long spans get to appear after an accepted export.
const SPANS_WITHIN: Duration = Duration::from_secs(20);

/// The pinned Phoenix (`AGENTRACE_TEST_PHOENIX`, else `.tools/phoenix`).
/// Panics with a hint when it is missing: this test never skips.
fn phoenix_binary() -> PathBuf {
    let path = std::env::var_os("AGENTRACE_TEST_PHOENIX")
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.tools/phoenix/venv/bin/phoenix")
        });
    assert!(
        path.exists(),
        "Arize Phoenix is not installed at {}; run scripts/install-phoenix (scripts/test does)",
        path.display()
    );
    path
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|address| address.port())
        .unwrap_or_else(|error| panic!("no free port: {error}"))
}

/// A running Phoenix; stopped by its pid when dropped, also when a test
/// fails: SIGINT (a clean shutdown), then SIGKILL if it lingers.
struct Phoenix {
    child: Child,
    _turn: std::sync::MutexGuard<'static, ()>,
    base: String,
    _dir: tempfile::TempDir,
    log: PathBuf,
}

impl Phoenix {
    fn start() -> Self {
        // A test that failed holding the turn poisons it; the next may go.
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("tempdir: {error}"));
        let log = dir.path().join("phoenix.log");
        let log_file =
            std::fs::File::create(&log).unwrap_or_else(|error| panic!("phoenix log: {error}"));
        let err_file = log_file
            .try_clone()
            .unwrap_or_else(|error| panic!("phoenix log: {error}"));
        let port = free_port();
        let grpc_port = free_port();
        let child = Command::new(phoenix_binary())
            .arg("serve")
            .current_dir(dir.path())
            .env("PHOENIX_WORKING_DIR", dir.path())
            .env("PHOENIX_HOST", "127.0.0.1")
            .env("PHOENIX_PORT", port.to_string())
            .env("PHOENIX_GRPC_PORT", grpc_port.to_string())
            .env("PHOENIX_TELEMETRY_ENABLED", "false")
            .env("PHOENIX_ALLOW_EXTERNAL_RESOURCES", "false")
            .env("PHOENIX_ALLOWED_SANDBOX_PROVIDERS", "NONE")
            .env("PHOENIX_DISABLE_AGENT_ASSISTANT", "true")
            .env("PHOENIX_ENABLE_MCP_SERVER", "false")
            .stdin(Stdio::null())
            .stdout(log_file)
            .stderr(err_file)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start phoenix: {error}"));
        let phoenix = Self {
            child,
            _turn: turn,
            base: format!("http://127.0.0.1:{port}"),
            _dir: dir,
            log,
        };
        phoenix.wait_ready();
        phoenix
    }

    fn wait_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < READY_WITHIN {
            if self.get("/readyz").0 == 200 {
                return;
            }
            thread::sleep(Duration::from_millis(250));
        }
        panic!(
            "phoenix not ready within {READY_WITHIN:?}; its log:\n{}",
            std::fs::read_to_string(&self.log).unwrap_or_default()
        );
    }

    /// (status, body) of a GET; status 0 when nothing answered.
    fn get(&self, path: &str) -> (u16, String) {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(5)))
            .http_status_as_error(false)
            .build()
            .into();
        match agent.get(format!("{}{path}", self.base)).call() {
            Ok(mut response) => (
                response.status().as_u16(),
                response.body_mut().read_to_string().unwrap_or_default(),
            ),
            Err(_) => (0, String::new()),
        }
    }

    /// The project's spans once `count` of them are there.
    fn spans(&self, project: &str, count: usize) -> Vec<Value> {
        let started = Instant::now();
        let mut last = Vec::new();
        while started.elapsed() < SPANS_WITHIN {
            let (status, body) = self.get(&format!(
                "/v1/projects/{project}/spans?sort=start_time&order=asc&limit=1000"
            ));
            if status == 200 {
                let value: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
                last = value["data"].as_array().cloned().unwrap_or_default();
                if last.len() >= count {
                    return last;
                }
            }
            thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "phoenix has {} of {count} spans after {SPANS_WITHIN:?}",
            last.len()
        );
    }
}

impl Drop for Phoenix {
    fn drop(&mut self) {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-INT", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// (agent name, the agent it nests under, input tokens, output tokens,
/// cache-read tokens) for every agent of a `show --json` tree.
type AgentRow = (
    String,
    Option<String>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

fn expected_agents(nodes: &Value, parent: Option<&str>, rows: &mut Vec<AgentRow>) {
    for node in nodes.as_array().into_iter().flatten() {
        let label = node["label"].as_str().unwrap_or_default().to_owned();
        let tokens = &node["tokens"];
        rows.push((
            label.clone(),
            parent.map(str::to_owned),
            tokens["inputTokens"].as_i64(),
            tokens["outputTokens"].as_i64(),
            tokens["cachedInputTokens"].as_i64(),
        ));
        expected_agents(&node["children"], Some(&label), rows);
    }
}

/// The same rows read from Phoenix's spans of one trace: an agent's parent
/// is the nearest `invoke_agent` span above it (through its spawn span).
fn stored_agents(spans: &[Value], trace_id: &str) -> Vec<AgentRow> {
    let of_trace: Vec<&Value> = spans
        .iter()
        .filter(|span| span["context"]["trace_id"] == trace_id)
        .collect();
    let by_id: BTreeMap<&str, &Value> = of_trace
        .iter()
        .filter_map(|span| span["context"]["span_id"].as_str().map(|id| (id, *span)))
        .collect();
    let agent_name = |span: &Value| {
        span["name"]
            .as_str()
            .and_then(|name| name.strip_prefix("invoke_agent "))
            .map(str::to_owned)
    };
    let mut rows = Vec::new();
    for span in &of_trace {
        let Some(name) = agent_name(span) else {
            continue;
        };
        let mut parent = span["parent_id"].as_str().and_then(|id| by_id.get(id));
        let mut parent_agent = None;
        while let Some(candidate) = parent {
            if let Some(name) = agent_name(candidate) {
                parent_agent = Some(name);
                break;
            }
            parent = candidate["parent_id"].as_str().and_then(|id| by_id.get(id));
        }
        let attributes = &span["attributes"];
        rows.push((
            name,
            parent_agent,
            attributes["gen_ai.usage.input_tokens"].as_i64(),
            attributes["gen_ai.usage.output_tokens"].as_i64(),
            attributes["gen_ai.usage.cache_read.input_tokens"].as_i64(),
        ));
    }
    rows
}

#[test]
fn exported_runs_appear_in_phoenix_as_the_agent_tree_show_prints_and_a_second_export_adds_nothing()
{
    let cli = Cli::new();
    let runs = ["v1_basic", "v2_basic", "real_model_nested"];
    for name in runs {
        cli.ingest(
            &capture(name),
            &["--quiet", "--run-id", &format!("phoenix-{name}")],
        );
    }
    let run_ids: Vec<String> = runs.iter().map(|name| format!("phoenix-{name}")).collect();
    let phoenix = Phoenix::start();
    let project = "agentrace-ci";
    let export = |cli: &Cli| {
        let mut args = vec!["export", "--otlp", phoenix.base.as_str()];
        args.extend(run_ids.iter().map(String::as_str));
        let output = cli
            .command(&args)
            .env(
                "OTEL_RESOURCE_ATTRIBUTES",
                format!("openinference.project.name={project}"),
            )
            .output()
            .unwrap_or_else(|error| panic!("cannot run agentrace: {error}"));
        assert!(
            output.status.success(),
            "export failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let spans: usize = stderr
            .lines()
            .filter_map(|line| line.split(": ").nth(1))
            .filter_map(|rest| rest.split(' ').next())
            .filter_map(|count| count.parse::<usize>().ok())
            .sum();
        let traces: Vec<(String, String)> = String::from_utf8_lossy(&output.stdout)
            .lines()
            .filter_map(|line| line.split_once(' '))
            .map(|(run, trace)| (run.to_owned(), trace.to_owned()))
            .collect();
        (traces, spans)
    };
    let (traces, span_count) = export(&cli);
    assert_eq!(
        traces
            .iter()
            .map(|(run, _)| run.clone())
            .collect::<Vec<_>>(),
        run_ids
    );
    let stored = phoenix.spans(project, span_count);
    assert_eq!(stored.len(), span_count);

    for (run, trace_id) in &traces {
        let view: Value = serde_json::from_str(&cli.ok(&["show", run, "--json"]))
            .unwrap_or_else(|error| panic!("show --json: {error}"));
        let mut expected = Vec::new();
        expected_agents(&view["agents"], None, &mut expected);
        expected.sort();
        let mut got = stored_agents(&stored, trace_id);
        got.sort();
        assert_eq!(got, expected, "agent spans of {run}");
        // Every tool span hangs under an agent span of its own trace, and
        // every spawn names an agent of the tree as its transfer target.
        for span in stored
            .iter()
            .filter(|span| span["context"]["trace_id"] == trace_id.as_str())
        {
            let name = span["name"].as_str().unwrap_or_default();
            assert_eq!(span["attributes"]["gen_ai.conversation.id"], run.as_str());
            if name.starts_with("execute_tool ") {
                let parent = span["parent_id"].as_str().unwrap_or_default();
                let parent_span = stored
                    .iter()
                    .find(|other| other["context"]["span_id"] == parent)
                    .unwrap_or_else(|| panic!("{name} has no parent span"));
                assert!(parent_span["name"]
                    .as_str()
                    .is_some_and(|parent| parent.starts_with("invoke_agent ")));
                if let Some(target) =
                    span["attributes"]["agentrace.transfer_target.agent.name"].as_str()
                {
                    assert!(expected.iter().any(|row| row.0 == target), "{target}");
                }
            }
        }
    }

    // A second export sends the same ids: Phoenix keeps one copy of each.
    let (again, again_count) = export(&cli);
    assert_eq!((again, again_count), (traces, span_count));
    thread::sleep(Duration::from_secs(1));
    assert_eq!(phoenix.spans(project, span_count).len(), span_count);
}

/// The stored span named `name` (of a trace), panicking with what is there.
fn named<'a>(spans: &'a [&'a Value], name: &str) -> Vec<&'a Value> {
    let found: Vec<&Value> = spans.iter().copied().filter(|span| span["name"] == name).collect();
    assert!(
        !found.is_empty(),
        "no span {name} among {:?}",
        spans.iter().map(|span| span["name"].clone()).collect::<Vec<_>>()
    );
    found
}

/// A CI job's trace context: given as TRACEPARENT when the run was
/// recorded, it is kept with the run, and a later export (without it)
/// puts the run's root span under that span, in that trace; `--traceparent`
/// does the same for a run recorded without one. A helper given a
/// follow-up ran twice: two `invoke_agent` spans of one `gen_ai.agent.id`,
/// each under the root's call that started that run, neither inside the
/// other.
#[test]
fn an_export_joins_the_callers_trace_and_a_helper_with_a_follow_up_has_a_span_per_run() {
    let cli = Cli::new();
    let (trace, parent) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let fixture = capture("v1_followup").to_string_lossy().into_owned();
    let output = cli
        .command(&["ingest", "--quiet", "--run-id", "followup", &fixture])
        .env("TRACEPARENT", format!("00-{trace}-{parent}-01"))
        .output()
        .unwrap_or_else(|error| panic!("cannot run agentrace: {error}"));
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let view: Value = serde_json::from_str(&cli.ok(&["show", "followup", "--json"]))
        .unwrap_or_else(|error| panic!("show --json: {error}"));
    assert_eq!(view["run"]["traceparent"], format!("00-{trace}-{parent}-01"));
    cli.ingest(&capture("v1_basic"), &["--quiet", "--run-id", "later"]);

    let phoenix = Phoenix::start();
    let project = "agentrace-traceparent";
    let export = |args: &[&str]| {
        let mut all = vec!["export", "--otlp", phoenix.base.as_str()];
        all.extend_from_slice(args);
        let output = cli
            .command(&all)
            .env_remove("TRACEPARENT")
            .env("OTEL_RESOURCE_ATTRIBUTES", format!("openinference.project.name={project}"))
            .output()
            .unwrap_or_else(|error| panic!("cannot run agentrace: {error}"));
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
        let spans: usize = stderr
            .lines()
            .filter_map(|line| line.split(": ").nth(1))
            .filter_map(|rest| rest.split(' ').next())
            .filter_map(|count| count.parse::<usize>().ok())
            .sum();
        (String::from_utf8_lossy(&output.stdout).into_owned(), spans)
    };
    let (followup, followup_spans) = export(&["followup"]);
    let (other_trace, other_parent) = ("0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331");
    let given = format!("00-{other_trace}-{other_parent}-01");
    let (later, later_spans) = export(&["--traceparent", &given, "later"]);
    assert_eq!(
        (followup, later),
        (format!("followup {trace}\n"), format!("later {other_trace}\n"))
    );
    let stored = phoenix.spans(project, followup_spans + later_spans);
    let of = |trace: &str| -> Vec<&Value> {
        stored.iter().filter(|span| span["context"]["trace_id"] == trace).collect()
    };
    let (first, second) = (of(trace), of(other_trace));
    assert_eq!((first.len(), second.len()), (followup_spans, later_spans));
    for (spans, parent) in [(&first, parent), (&second, other_parent)] {
        let roots = named(spans, "invoke_agent Main");
        assert_eq!(roots.len(), 1);
        assert_eq!(roots[0]["parent_id"], parent, "the root hangs under the caller's span");
    }

    let runs = named(&first, "invoke_agent Halley");
    let helper = view["agents"][0]["children"][0]["threadId"].clone();
    let by_id = |id: &Value| first.iter().copied().find(|span| span["context"]["span_id"] == *id);
    let rows: Vec<(Value, Value, String, String)> = runs
        .iter()
        .map(|span| {
            let spawner = by_id(&span["parent_id"]).unwrap_or_else(|| panic!("no parent of {span}"));
            let spawner_agent = by_id(&spawner["parent_id"]).unwrap_or_else(|| panic!("no parent of {spawner}"));
            (
                span["attributes"]["gen_ai.agent.id"].clone(),
                span["attributes"]["agentrace.agent.generation"].clone(),
                spawner["name"].as_str().unwrap_or_default().to_owned(),
                spawner_agent["name"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let mut rows = rows;
    rows.sort_by_key(|row| row.1.as_i64());
    assert_eq!(
        rows,
        vec![
            (helper.clone(), serde_json::json!(1), "execute_tool spawnAgent".to_owned(), "invoke_agent Main".to_owned()),
            (helper, serde_json::json!(2), "execute_tool sendInput".to_owned(), "invoke_agent Main".to_owned()),
        ]
    );
}
