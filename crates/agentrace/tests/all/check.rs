//! `agentrace check`: exit codes for CI, allow/deny flags, the config file
//! and budgets, on real captures (one edited so the root passes off a
//! helper's answer as its own).

use serde_json::{json, Value};

use super::support::{capture, Cli};

/// v1_basic with the root's final answer replaced by child A's word for word.
fn root_copies_helper(cli: &Cli) -> String {
    let text = std::fs::read_to_string(capture("v1_basic")).unwrap_or_else(|e| panic!("{e}"));
    let edited = text.replace(
        "ROOT DONE: all sub-agents finished; final answer from the root agent.",
        "CHILD A DONE: the command printed hello-from-child-A.",
    );
    assert_ne!(edited, text, "the capture changed; update this test");
    let path = cli.home.path().join("copied.jsonl");
    std::fs::write(&path, edited).unwrap_or_else(|e| panic!("{e}"));
    cli.ingest(&path, &["--run-id", "copied", "--quiet"])
}

#[test]
fn check_passes_a_run_whose_answer_came_from_the_root() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "clean", "--quiet"]);
    let output = cli.run(&["check", "clean"]);
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned()
        ),
        (Some(0), "clean: 0 warning(s), 0 error(s): ok\n".to_owned())
    );
}

#[test]
fn check_fails_a_run_whose_root_passed_off_a_helpers_answer() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    let output = cli.run(&["check", &id, "--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (output.status.code(), report),
        (
            Some(1),
            json!({
                "run": "copied",
                "status": "done",
                "ok": false,
                "warnings": [{
                    "code": "helper_result_used_as_done",
                    "severity": "error",
                    "message": "the run's result is word for word the final message of Dewey",
                    "threadId": "01a2298c-947a-75b0-8b49-6a2e1016272b"
                }]
            })
        )
    );
}

#[test]
fn check_fails_a_claude_stream_whose_root_passed_off_its_foreground_subagents_report() {
    // Stdout never forwards a foreground subagent's text: its final message
    // is the report handed back in the root's tool_result.
    let cli = Cli::new();
    let capture = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/claude/single_fg/stream.jsonl");
    let text = std::fs::read_to_string(&capture).unwrap_or_else(|e| panic!("{e}"));
    let answer = "ROOT-FINAL: all subagents finished for scenario single_fg.";
    assert_eq!(
        text.matches(answer).count(),
        2,
        "the capture changed; update this test"
    );
    let path = cli.home.path().join("copied.jsonl");
    std::fs::write(
        &path,
        text.replace(answer, "SUBAGENT-A-DONE: the command printed hello-from-A."),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    cli.ingest(&capture, &["--run-id", "own", "--quiet"]);
    cli.ingest(&path, &["--run-id", "copied", "--quiet"]);
    let own = cli.run(&["check", "own"]);
    let copied = cli.run(&["check", "copied", "--json"]);
    let report: Value = serde_json::from_slice(&copied.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (own.status.code(), copied.status.code(), report),
        (
            Some(0),
            Some(1),
            json!({
                "run": "copied",
                "status": "done",
                "ok": false,
                "warnings": [{
                    "code": "helper_result_used_as_done",
                    "severity": "error",
                    "message": "the run's result is word for word the final message of Echo task A [general-purpose]",
                    "threadId": "a3723d29fe24feb6b"
                }]
            })
        )
    );
}

#[test]
fn an_allowed_code_no_longer_fails_check() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    let output = cli.run(&["check", &id, "-A", "helper_result_used_as_done"]);
    assert_eq!(output.status.code(), Some(0));
}

#[test]
fn the_config_file_in_the_home_denies_and_sets_rules() {
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "clean", "--quiet"]);
    std::fs::write(
        cli.home.path().join("warnings.json"),
        r#"{"deny":["helper_policy_violation"],"helperRules":[{"toolKind":"command","description":"helpers must not run commands"}]}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let output = cli.run(&["check", "clean"]);
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned()),
        (
            Some(1),
            "error   helper_policy_violation: helpers must not run commands: Dewey called command `shell` (1×) [thread 01a2298c-947a-75b0-8b49-6a2e1016272b] [event 26]\nclean: 1 warning(s), 1 error(s): FAILED\n".to_owned()
        )
    );
}

#[test]
fn show_json_lists_the_detected_warnings_and_counts_them() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    let view: Value =
        serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (&view["run"]["warningCount"], &view["warnings"][0]["code"]),
        (&json!(1), &json!("helper_result_used_as_done"))
    );
}

/// `(warningCount, warningCodes)` of run `id` in `runs --json`.
fn listed(cli: &Cli, id: &str) -> (Value, Value) {
    let list: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let run = list["runs"]
        .as_array()
        .and_then(|runs| runs.iter().find(|run| run["id"] == id))
        .unwrap_or_else(|| panic!("{id} is not listed: {list}"));
    (run["warningCount"].clone(), run.get("warningCodes").cloned().unwrap_or(Value::Null))
}

#[test]
fn the_run_list_counts_the_detected_warnings_as_show_does() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    assert_eq!(listed(&cli, &id), (json!(1), json!(["helper_result_used_as_done"])));
    // A code the config file allows leaves the list as it leaves `show`.
    std::fs::write(cli.home.path().join("warnings.json"), r#"{"allow":["helper_result_used_as_done"]}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let view: Value = serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (listed(&cli, &id), &view["run"]["warningCount"]),
        ((json!(0), Value::Null), &json!(0))
    );
    // `agentrace` alone lists the runs as `agentrace runs` does.
    assert_eq!(cli.ok(&[]), cli.ok(&["runs"]));
}

/// An imported run is listed with the warnings its record and `show`
/// give (those the detectors find, a replayed history here): the catalog
/// indexed the recorder's state, which knows only the warnings raised
/// while recording, and the list said 0.
#[test]
fn the_run_list_counts_an_imported_runs_warnings_as_show_does() {
    let cli = Cli::new();
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    agentrace_testkit::files::copy_dir(&agentrace_testkit::files::fixtures().join("codex/v1_basic/rollouts"), &dir.path().join("sessions"));
    let codex = dir.path().to_string_lossy().into_owned();
    let claude = dir.path().join("no-claude").to_string_lossy().into_owned();
    std::fs::create_dir(dir.path().join("no-claude")).unwrap_or_else(|e| panic!("{e}"));
    cli.ok(&["import", "--codex-home", &codex, "--claude-dir", &claude]);
    let list: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let id = list["runs"][0]["id"].as_str().unwrap_or_else(|| panic!("{list}")).to_owned();
    let view: Value = serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let shown: Vec<Value> = view["warnings"].as_array().into_iter().flatten().map(|warning| warning["code"].clone()).collect();
    assert_eq!(listed(&cli, &id), (json!(1), json!(["replayed_history"])));
    assert_eq!(shown, vec![json!("replayed_history")]);

    // A catalog an earlier import wrote, its row without the record's
    // warnings: the next command lists the record's, once.
    let conn = rusqlite::Connection::open(cli.home.path().join("catalog.sqlite")).unwrap_or_else(|e| panic!("{e}"));
    let record = std::fs::read_to_string(cli.home.path().join("runs").join(format!("{id}.json"))).unwrap_or_else(|e| panic!("{e}"));
    let mut unjudged: Value = serde_json::from_str(&record).unwrap_or_else(|e| panic!("{e}"));
    unjudged["warningCount"] = json!(0);
    unjudged.as_object_mut().map(|record| record.remove("warningCodes"));
    conn.execute(
        "UPDATE runs SET warning_count = 0, warning_codes = '', record = ?2 WHERE id = ?1",
        rusqlite::params![id, unjudged.to_string()],
    )
    .unwrap_or_else(|e| panic!("{e}"));
    conn.execute("DELETE FROM meta WHERE key = 'rows_as_recorded'", []).unwrap_or_else(|e| panic!("{e}"));
    drop(conn);
    assert_eq!(listed(&cli, &id), (json!(1), json!(["replayed_history"])));
}

#[test]
fn a_run_without_a_record_is_listed_with_its_detected_warnings() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    std::fs::remove_file(cli.home.path().join("runs").join(format!("{id}.json"))).unwrap_or_else(|e| panic!("{e}"));
    // A log copied by a tool that dropped its last line break: that line
    // still counts, in the list as in `show`.
    let log = cli.home.path().join("runs").join(format!("{id}.jsonl"));
    let text = std::fs::read_to_string(&log).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&log, text.trim_end()).unwrap_or_else(|e| panic!("{e}"));
    let list: Value = serde_json::from_str(&cli.ok(&["runs", "--json"])).unwrap_or_else(|e| panic!("{e}"));
    let view: Value = serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (listed(&cli, &id), &list["runs"][0]["counts"]),
        ((json!(1), json!(["helper_result_used_as_done"])), &view["run"]["counts"])
    );
}

/// The warnings `attach --json` printed (`args` after the run id), whole.
fn attached_warnings(cli: &Cli, id: &str, args: &[&str]) -> Vec<Value> {
    let stdout = cli.ok(&[&["attach", id, "--json"], args].concat());
    stdout
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .filter_map(|item| item.get("warning").cloned())
        .collect()
}

#[test]
fn attach_prints_the_warnings_show_lists_and_hides_allowed_codes() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    let view: Value = serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (
            Value::Array(attached_warnings(&cli, &id, &[])),
            attached_warnings(&cli, &id, &["-A", "helper_result_used_as_done"])
        ),
        (view["warnings"].clone(), Vec::new())
    );
    let text = cli.ok(&["attach", &id]);
    assert!(
        text.ends_with("  error    helper_result_used_as_done: the run's result is word for word the final message of Dewey\n"),
        "{text}"
    );
}

#[test]
fn show_takes_the_warning_flags_check_takes() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    let shown = |args: &[&str]| -> Value {
        let view: Value = serde_json::from_str(&cli.ok(&[&["show", &id, "--json"], args].concat())).unwrap_or_else(|e| panic!("{e}"));
        json!([view["run"]["warningCount"], view["warnings"].as_array().map(|warnings| warnings.len())])
    };
    assert_eq!(
        (shown(&[]), shown(&["-A", "helper_result_used_as_done"])),
        (json!([1, 1]), json!([0, 0]))
    );
}

/// `(exit code, stdout, stderr)` of `agentrace` with `args`.
fn said(cli: &Cli, args: &[&str]) -> (Option<i32>, String, String) {
    let output = cli.run(args);
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_misspelled_warning_code_is_refused_by_check_show_and_attach_as_runs_warning_refuses_it() {
    // `-W unknown_actor_event` (the code ends in `s`) denied nothing, and
    // a CI gate on it passed.
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "clean", "--quiet"]);
    let codes = agentrace_core::warnings::known_codes().collect::<Vec<_>>().join(", ");
    // What a list can keep to: no code judged only when a run is read.
    let listable = agentrace_core::warnings::listable_codes().collect::<Vec<_>>().join(", ");
    let refused = |flag: &str, code: &str, expected: &str, hint: &str| {
        let codes = if flag == "--warning" { &listable } else { &codes };
        (Some(1), String::new(), format!("error: {flag} {code}: not a warning code; expected {expected} {codes}\n{hint}"))
    };
    assert_eq!(
        [
            said(&cli, &["check", "clean", "-W", "unknown_actor_event"]),
            said(&cli, &["show", "clean", "-W", "nosuchcode"]),
            said(&cli, &["show", "clean", "--allow", "nosuchcode"]),
            said(&cli, &["attach", "clean", "--json", "-A", "orphan_chil"]),
            said(&cli, &["check", "clean", "-W", "all"]),
            said(&cli, &["runs", "--warning", "nosuchcode"]),
        ],
        [
            refused("-W/--deny", "unknown_actor_event", "one of", "hint: did you mean unknown_actor_events?\n"),
            refused("-W/--deny", "nosuchcode", "one of", ""),
            refused("-A/--allow", "nosuchcode", "`all` or one of", ""),
            refused("-A/--allow", "orphan_chil", "`all` or one of", "hint: did you mean orphan_child?\n"),
            refused("-W/--deny", "all", "one of", "hint: `all` only hides (`-A all`); deny each code by its name\n"),
            refused("--warning", "nosuchcode", "`any` or one of", ""),
        ]
    );
}

/// `runs --warning silent_agent` listed nothing, always, while `show`,
/// `top` and the API's run gave the warning: the code is judged against
/// the clock when a run is read, and no record carries it. Refused, saying
/// so (exit 1, as a code no run may carry); a rule's code, judged by the
/// home's `warnings.json` when the record is written, lists its runs.
#[test]
fn runs_warning_refuses_a_code_judged_only_when_a_run_is_read_and_lists_a_rules_code() {
    let cli = Cli::new();
    let id = priced_run(&cli);
    // The catalog first, then the rule: its runs are judged again by it.
    cli.ok(&["runs"]);
    std::fs::write(cli.home.path().join("warnings.json"), r#"{"maxCost":0.01}"#).unwrap_or_else(|e| panic!("{e}"));
    let (code, listed, _) = said(&cli, &["runs", "--warning", "budget_exceeded", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap_or_else(|e| panic!("{e}: {listed}"));
    assert_eq!(
        (
            said(&cli, &["runs", "--warning", "silent_agent"]),
            (code, listed["total"].clone(), listed["runs"][0]["id"].clone()),
        ),
        (
            (
                Some(1),
                String::new(),
                "error: --warning silent_agent: a list of runs cannot keep to this code: it is judged against the clock when a run is read, and no run's record carries it\nhint: `agentrace check RUN` or `agentrace show RUN` judge it (and `top` marks a silent agent)\n".to_owned()
            ),
            (Some(0), json!(1), json!(id)),
        )
    );
}

#[test]
fn the_warning_flags_take_every_code_a_run_may_carry_and_all_to_hide() {
    // `link_cycle` is raised by both attributors: refusing it would leave
    // no way to deny it.
    let cli = Cli::new();
    cli.ingest(&capture("v1_basic"), &["--run-id", "clean", "--quiet"]);
    let mut args = vec!["check", "clean", "-A", "all"];
    for code in agentrace_core::warnings::known_codes() {
        args.extend(["-W", code]);
    }
    assert_eq!(
        (said(&cli, &args), said(&cli, &["runs", "--warning", "link_cycle", "--json"])),
        (
            (Some(0), "clean: 0 warning(s), 0 error(s): ok\n".to_owned(), String::new()),
            (Some(0), "{\n  \"runs\": [],\n  \"total\": 0\n}\n".to_owned(), String::new())
        )
    );
}

#[test]
fn check_without_a_run_is_a_usage_error() {
    let cli = Cli::new();
    assert_eq!(cli.run(&["check"]).status.code(), Some(2));
}

// Budgets, on the transcripts of a Claude capture of a model the price
// database knows (claude-opus-5-5), every request priced (stdout would
// give floors: it never carries a subagent's last response): the run cost
// $0.0462 for 10,852 tokens, of which the root's own requests $0.0248
// (5,808 tokens) and its helper's $0.0213 (5,044 tokens).

const PRICED_ROOT: &str = "8beed115-2652-4f2b-897f-f3849f761b78";

fn priced_run(cli: &Cli) -> String {
    let projects = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/claude/single_fg/home_claude/projects");
    cli.ingest(&projects, &["--format", "claude-transcript", "--run-id", "priced", "--quiet"])
}

/// `(exit code, stdout)` of `agentrace check` with `args`.
fn checked(cli: &Cli, args: &[&str]) -> (Option<i32>, String) {
    let output = cli.run(&[&["check"], args].concat());
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

#[test]
fn check_max_cost_fails_a_run_that_cost_more_and_names_its_cost_and_the_limit() {
    let cli = Cli::new();
    let id = priced_run(&cli);
    let output = cli.run(&["check", &id, "--max-cost", "0.03", "--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (
            checked(&cli, &[&id, "--max-cost", "0.03"]),
            output.status.code(),
            report
        ),
        (
            (
                Some(1),
                "error   budget_exceeded: run priced cost $0.0462 is over the budget of $0.03\npriced: 1 warning(s), 1 error(s): FAILED\n".to_owned()
            ),
            Some(1),
            json!({
                "run": "priced",
                "status": "done",
                "ok": false,
                "warnings": [{
                    "code": "budget_exceeded",
                    "severity": "error",
                    "message": "run priced cost $0.0462 is over the budget of $0.03"
                }]
            })
        )
    );
}

#[test]
fn check_passes_a_run_within_its_budgets() {
    let cli = Cli::new();
    let id = priced_run(&cli);
    assert_eq!(
        checked(&cli, &[&id, "--max-cost", "0.05", "--max-tokens", "10852"]),
        (Some(0), "priced: 0 warning(s), 0 error(s): ok\n".to_owned())
    );
}

#[test]
fn per_agent_budgets_judge_each_agent_by_its_own_cost_and_tokens_not_its_subtrees() {
    let cli = Cli::new();
    let id = priced_run(&cli);
    assert_eq!(
        (
            // The root's subtree cost $0.0462, its own requests $0.0248.
            checked(&cli, &[&id, "--max-cost", "0.03", "--per", "agent"]),
            checked(&cli, &[&id, "--max-cost", "0.03", "--per", "run"]).0,
            checked(&cli, &[&id, "--max-cost", "0.02", "--max-tokens", "2000", "--per", "agent"]),
        ),
        (
            (Some(0), "priced: 0 warning(s), 0 error(s): ok\n".to_owned()),
            Some(1),
            (
                Some(1),
                format!(
                    "error   budget_exceeded: agent Main (thread {PRICED_ROOT}) cost $0.0248 is over the budget of $0.02, and used 5808 tokens, over the budget of 2000 tokens [thread {PRICED_ROOT}]\n\
                     error   budget_exceeded: agent Echo task A [general-purpose] (thread a3723d29fe24feb6b) cost $0.0213 is over the budget of $0.02, and used 5044 tokens, over the budget of 2000 tokens [thread a3723d29fe24feb6b]\n\
                     priced: 2 warning(s), 2 error(s): FAILED\n"
                )
            ),
        )
    );
}

#[test]
fn the_config_files_budget_fails_check_and_the_flags_override_it() {
    let cli = Cli::new();
    let id = priced_run(&cli);
    std::fs::write(
        cli.home.path().join("warnings.json"),
        r#"{"maxCost":0.03,"maxTokens":3000,"budgetPer":"agent"}"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (
            checked(&cli, &[&id]),
            checked(&cli, &[&id, "--max-tokens", "6000"]).0,
            checked(&cli, &[&id, "--max-tokens", "6000", "--per", "run"]),
        ),
        (
            (
                Some(1),
                format!(
                    "error   budget_exceeded: agent Main (thread {PRICED_ROOT}) used 5808 tokens, over the budget of 3000 tokens [thread {PRICED_ROOT}]\n\
                     error   budget_exceeded: agent Echo task A [general-purpose] (thread a3723d29fe24feb6b) used 5044 tokens, over the budget of 3000 tokens [thread a3723d29fe24feb6b]\n\
                     priced: 2 warning(s), 2 error(s): FAILED\n"
                )
            ),
            Some(0),
            (
                Some(1),
                "error   budget_exceeded: run priced cost $0.0462 is over the budget of $0.03, and used 10852 tokens, over the budget of 6000 tokens\npriced: 1 warning(s), 1 error(s): FAILED\n".to_owned()
            ),
        )
    );
}

#[test]
fn an_allowed_budget_exceeded_no_longer_fails_check() {
    let cli = Cli::new();
    let id = priced_run(&cli);
    assert_eq!(
        checked(&cli, &[&id, "--max-cost", "0.01", "-A", "budget_exceeded"]),
        (Some(0), "priced: 0 warning(s), 0 error(s): ok\n".to_owned())
    );
}

#[test]
fn a_cost_budget_on_a_run_nothing_could_price_is_a_warning_that_it_cannot_be_checked() {
    let cli = Cli::new();
    // v1_basic ran `mock-model`, which no price database knows.
    cli.ingest(&capture("v1_basic"), &["--run-id", "unpriced", "--quiet"]);
    assert_eq!(
        checked(&cli, &["unpriced", "--max-cost", "0.25"]),
        (
            Some(0),
            "warning budget_unchecked: run unpriced cost is unknown (nothing could be priced), so the budget of $0.25 cannot be checked\nunpriced: 1 warning(s), 0 error(s): ok\n".to_owned()
        )
    );
}

/// A warning config in the home (`warnings.json`) judges what every
/// command counts of a run, as it judges `check`: the run list, `show`, the
/// viewer's list and run page, and the run's record give the same codes (a
/// budget, a helper rule, a denied code), where the list and the record
/// counted them without the config and `runs` said 0 for a run `check`
/// failed. Changed, the runs are counted again (a server started before
/// the change follows); removed, they are counted without it. A file that
/// is no config is an error that names it, except for the hook.
#[test]
fn a_warning_config_in_the_home_judges_every_commands_count_alike() {
    use super::raw_ref::{get_json, serve};
    let cli = Cli::new();
    let id = priced_run(&cli);
    let record = |cli: &Cli| -> Value {
        let text = std::fs::read_to_string(cli.home.path().join("runs").join(format!("{id}.json"))).unwrap_or_else(|e| panic!("{e}"));
        let record: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}"));
        record.get("warningCodes").cloned().unwrap_or_else(|| json!([]))
    };
    let codes = |value: &Value| -> Value {
        value["warningCodes"].as_array().map_or_else(|| json!([]), |codes| Value::from(codes.clone()))
    };
    let counted = |cli: &Cli, address: &str| -> Vec<Value> {
        let show: Value = serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
        let shown: Vec<Value> = show["warnings"].as_array().into_iter().flatten().filter(|warning| warning["severity"] != "info").map(|warning| warning["code"].clone()).collect();
        let (count, listed) = listed(cli, &id);
        let listed = if listed.is_null() { json!([]) } else { listed };
        assert_eq!(count, Value::from(listed.as_array().map_or(0, Vec::len)));
        vec![
            Value::from(shown),
            listed,
            codes(&get_json(address, "/api/runs")["runs"][0]),
            codes(&get_json(address, &format!("/api/runs/{id}"))["run"]),
            record(cli),
        ]
    };
    let (_server, address) = serve(&cli);
    assert_eq!(counted(&cli, &address), vec![json!([]); 5]);
    assert_eq!(checked(&cli, &[&id]).0, Some(0));

    let file = cli.home.path().join("warnings.json");
    std::fs::write(&file, r#"{"maxCost":0.01}"#).unwrap_or_else(|e| panic!("{e}"));
    let listed_now = cli.run(&["runs"]);
    assert_eq!(
        String::from_utf8_lossy(&listed_now.stderr).lines().collect::<Vec<_>>(),
        vec![format!("note: counted the warnings of 1 run again: the home's warning config ({}) changed since they were counted", file.display())]
    );
    assert_eq!(counted(&cli, &address), vec![json!(["budget_exceeded"]); 5]);
    assert_eq!(checked(&cli, &[&id]).0, Some(1));

    // The budget allowed: what `check` passes, no list counts.
    std::fs::write(&file, r#"{"maxCost":0.01,"allow":["budget_exceeded"]}"#).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counted(&cli, &address), vec![json!([]); 5]);
    assert_eq!(checked(&cli, &[&id]).0, Some(0));

    std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{e}"));
    std::fs::write(&file, r#"{"maxCost":0.01}"#).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counted(&cli, &address), vec![json!(["budget_exceeded"]); 5]);
    std::fs::remove_file(&file).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(counted(&cli, &address), vec![json!([]); 5]);

    std::fs::write(&file, r#"{"maxCost":"cheap"}"#).unwrap_or_else(|e| panic!("{e}"));
    let output = cli.run(&["runs"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(
        (output.status.code(), stderr.lines().next().map(|line| line.starts_with(&format!("error: {}: not a warning config: ", file.display())))),
        (Some(1), Some(true)),
        "{stderr}"
    );
    let hook = cli.command(&["hook"]).output().unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(hook.status.code(), Some(0));
}

/// Each way a catalog is made anew: `reindex`, its files removed, or one
/// of another schema found.
pub(super) fn rebuild_catalog(cli: &Cli, how: &str) {
    match how {
        "reindex" => {
            cli.ok(&["reindex", "--no-import", "--quiet"]);
        }
        "removed" => {
            for end in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(format!("{}{end}", cli.home.path().join("catalog.sqlite").display()));
            }
        }
        _ => super::import_usage::catalog_execute(cli, "PRAGMA user_version = 99", &[]),
    }
}

/// The ways [`rebuild_catalog`] knows.
pub(super) const REBUILDS: [&str; 3] = ["reindex", "removed", "other schema"];

/// A catalog made anew after the home's `warnings.json` was added (by
/// `reindex`, its file gone, another schema) lists the runs recorded
/// before it as it judges them, as `show` does: it marked its empty rows
/// judged by the file, then filled them from the records as they were
/// written, and `runs --warning budget_exceeded` listed none of the runs
/// `show` gave the warning.
#[test]
fn a_catalog_rebuilt_after_a_warning_config_was_added_lists_the_runs_judged_by_it() {
    let judged = |how: &'static str| {
        let cli = Cli::new();
        let id = priced_run(&cli);
        assert_eq!(listed(&cli, &id), (json!(0), Value::Null));
        std::fs::write(cli.home.path().join("warnings.json"), r#"{"maxCost":0.01}"#).unwrap_or_else(|e| panic!("{e}"));
        rebuild_catalog(&cli, how);
        let (count, codes) = listed(&cli, &id);
        let kept: Value = serde_json::from_str(&cli.ok(&["runs", "--warning", "budget_exceeded", "--json"])).unwrap_or_else(|e| panic!("{e}"));
        let show: Value = serde_json::from_str(&cli.ok(&["show", &id, "--json"])).unwrap_or_else(|e| panic!("{e}"));
        let shown: Vec<Value> = show["warnings"].as_array().into_iter().flatten().filter(|warning| warning["severity"] != "info").map(|warning| warning["code"].clone()).collect();
        (how, count, codes, kept["total"].clone(), Value::from(shown))
    };
    assert_eq!(
        REBUILDS.map(judged),
        REBUILDS.map(|how| (how, json!(1), json!(["budget_exceeded"]), json!(1), json!(["budget_exceeded"])))
    );
}

#[test]
fn a_negative_max_cost_in_the_config_file_is_refused() {
    let cli = Cli::new();
    let id = priced_run(&cli);
    std::fs::write(cli.home.path().join("warnings.json"), r#"{"maxCost":-1}"#)
        .unwrap_or_else(|e| panic!("{e}"));
    let output = cli.run(&["check", &id]);
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stderr).into_owned()
        ),
        (
            Some(1),
            format!(
                "error: {}: maxCost -1 is not an amount of US dollars\nhint: write a number of at least 0, e.g. \"maxCost\": 0.25\n",
                cli.home.path().join("warnings.json").display()
            )
        )
    );
}

/// What a GitHub Actions job sees of a suspicious run: the warning as an
/// annotation (a workflow command), the verdict, the same exit code, and
/// a step summary that holds the result, its source and the agents table.
#[test]
fn check_for_github_prints_workflow_commands_and_appends_the_step_summary() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    let summary = cli.home.path().join("step-summary.md");
    std::fs::write(&summary, "## an earlier step\n\n").unwrap_or_else(|e| panic!("{e}"));
    let summary_arg = summary.to_string_lossy().into_owned();
    let output = cli.run(&["check", &id, "--format", "github", "--summary", &summary_arg]);
    assert_eq!(
        (output.status.code(), String::from_utf8_lossy(&output.stdout).into_owned()),
        (
            Some(1),
            "::error title=helper_result_used_as_done::the run's result is word for word the final message of Dewey [thread 01a2298c-947a-75b0-8b49-6a2e1016272b]\n\
             copied: 1 warning(s), 1 error(s): FAILED\n"
                .to_owned()
        )
    );
    let text = std::fs::read_to_string(&summary).unwrap_or_else(|e| panic!("{e}"));
    assert!(text.starts_with("## an earlier step\n\n"), "appended, not replaced:\n{text}");
    insta::assert_snapshot!("check_github_step_summary", text);
}

/// An agent that has made no request yet has no cost in the step summary,
/// as `show`, `diff` and `top` leave it out: `$0.0000` beside `–` tokens
/// would read as a free agent.
#[test]
fn the_step_summary_gives_no_cost_to_an_agent_without_a_request() {
    let cli = Cli::new();
    super::viewer::generated_run(&agentrace_store::Home::at(cli.home.path()), "quiet", 1);
    let summary = cli.home.path().join("step-summary.md");
    let summary_arg = summary.to_string_lossy().into_owned();
    cli.run(&["check", "quiet", "--summary", &summary_arg]);
    let text = std::fs::read_to_string(&summary).unwrap_or_else(|e| panic!("{e}"));
    let table: Vec<&str> = text.lines().filter(|line| line.starts_with("| ")).collect();
    assert_eq!(
        table,
        [
            "| agent | role | status | tokens | cost |",
            "| --- | --- | --- | ---: | ---: |",
            "| Main | root | completed | – | – |",
            "| · Helper 1 | helper | completed | – | – |",
            "| **total** | | | – | – |",
        ],
        "{text}"
    );
}

/// A step summary that cannot be written (a folder that is not there)
/// made `check` print nothing but the error: the annotations and the
/// verdict of a failing run were lost from the job's log. They are now
/// printed first, then the error, and `check` exits 1.
#[test]
fn a_step_summary_that_cannot_be_written_still_leaves_the_annotations_and_the_verdict() {
    let cli = Cli::new();
    let id = root_copies_helper(&cli);
    let summary = cli.home.path().join("no-such-folder").join("step-summary.md");
    let summary_arg = summary.to_string_lossy().into_owned();
    let output = cli.run(&["check", &id, "--format", "github", "--summary", &summary_arg]);
    assert_eq!(
        (
            output.status.code(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
            summary.exists(),
        ),
        (
            Some(1),
            "::error title=helper_result_used_as_done::the run's result is word for word the final message of Dewey [thread 01a2298c-947a-75b0-8b49-6a2e1016272b]\n\
             copied: 1 warning(s), 1 error(s): FAILED\n"
                .to_owned(),
            format!(
                "error: cannot open {} to append the summary: No such file or directory (os error 2)\n",
                summary.display()
            ),
            false,
        )
    );
}
