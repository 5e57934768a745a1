//! The JSON-RPC client against the fake host: correlation, server requests,
//! notifications, timeouts, shutdown, NotFound versus transport failures.

use std::sync::Arc;
use std::time::Duration;

use agentrace_host::client::{ClientOptions, Event, ServerReply, ServerRequest};
use agentrace_host::fake::{FakeHost, ThreadSpec, TurnPlan};
use agentrace_host::HostError;
use serde_json::{json, Value};

#[tokio::test]
async fn concurrent_requests_each_get_their_own_answer() {
    let host = FakeHost::new();
    let first = host.start_thread(&ThreadSpec::default());
    let second = host.start_thread(&ThreadSpec {
        model: "other-model".to_owned(),
        ..ThreadSpec::default()
    });
    let client = host.connect(ClientOptions::default()).await.unwrap();
    let read = |thread: String| {
        let client = &client;
        async move {
            let answer = client
                .request("thread/read", json!({"threadId": thread}))
                .await
                .unwrap();
            (
                answer["thread"]["id"].clone(),
                answer["thread"]["model"].clone(),
            )
        }
    };
    let (a, b) = tokio::join!(read(first.clone()), read(second.clone()));
    assert_eq!(
        (a, b),
        (
            (json!(first), json!("mock-model")),
            (json!(second), json!("other-model"))
        )
    );
}

#[tokio::test]
async fn a_server_request_is_refused_explicitly_by_default() {
    let host = FakeHost::new();
    let client = host.connect(ClientOptions::default()).await.unwrap();
    let mut events = client.subscribe();
    let answer = host.send_server_request(
        "item/commandExecution/requestApproval",
        json!({"threadId": "t"}),
    );
    let answer = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer,
        json!({"id": 0, "isError": true, "answer": {
            "code": -32000,
            "message": "agentrace host client does not answer item/commandExecution/requestApproval: refused"
        }})
    );
    let event = events.recv().await.unwrap();
    assert_eq!(
        event,
        Event::ServerRequest {
            request: ServerRequest {
                id: json!(0),
                method: "item/commandExecution/requestApproval".to_owned(),
                params: Some(json!({"threadId": "t"})),
            },
            reply: ServerReply::Refuse {
                code: -32000,
                message: "agentrace host client does not answer item/commandExecution/requestApproval: refused".to_owned(),
            },
        }
    );
}

#[tokio::test]
async fn a_server_request_is_answered_by_the_given_handler() {
    let host = FakeHost::new();
    let options = ClientOptions {
        server_requests: Arc::new(|_: &ServerRequest| {
            ServerReply::Result(json!({"decision": "decline"}))
        }),
        ..ClientOptions::default()
    };
    let _client = host.connect(options).await.unwrap();
    let answer = host.send_server_request("item/commandExecution/requestApproval", json!({}));
    let answer = tokio::time::timeout(Duration::from_secs(10), answer)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        answer,
        json!({"id": 0, "isError": false, "answer": {"decision": "decline"}})
    );
}

#[tokio::test]
async fn notifications_reach_the_subscriber_in_order() {
    let host = FakeHost::new();
    let thread = host.start_thread(&ThreadSpec::default());
    let client = host.connect(ClientOptions::default()).await.unwrap();
    let mut events = client.subscribe();
    let turn = host
        .run_turn(&thread, &TurnPlan::answering("hi", "hello"))
        .unwrap();
    let mut methods = Vec::new();
    while methods.len() < 5 {
        match events.recv().await.unwrap() {
            Event::Notification { method, params } => {
                let params = params.unwrap_or(Value::Null);
                let about = params["turn"]["id"]
                    .as_str()
                    .or(params["turnId"].as_str())
                    .map(|id| id == turn);
                methods.push((method, about));
            }
            other => panic!("unexpected event {other:?}"),
        }
    }
    assert_eq!(
        methods,
        vec![
            ("thread/status/changed".to_owned(), None),
            ("turn/started".to_owned(), Some(true)),
            ("item/completed".to_owned(), Some(true)),
            ("turn/completed".to_owned(), Some(true)),
            ("thread/status/changed".to_owned(), None),
        ]
    );
}

#[tokio::test]
async fn a_request_without_an_answer_times_out() {
    let host = FakeHost::new();
    host.stall("thread/read");
    let options = ClientOptions {
        timeout: Duration::from_millis(200),
        ..ClientOptions::default()
    };
    let client = host.connect(options).await.unwrap();
    let error = client
        .request("thread/read", json!({"threadId": "x"}))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "thread/read: no answer from the host within 200ms"
    );
    // The connection still works after a timeout.
    let answer = client.request("thread/list", json!({})).await.unwrap();
    assert_eq!(answer["data"], json!([]));
}

#[tokio::test]
async fn an_unknown_thread_is_not_found_and_an_unknown_method_is_not() {
    let host = FakeHost::new();
    let client = host.connect(ClientOptions::default()).await.unwrap();
    let missing = client
        .request("thread/read", json!({"threadId": "01b00000-dead"}))
        .await
        .unwrap_err();
    let unknown_method = client
        .request("thread/frobnicate", json!({}))
        .await
        .unwrap_err();
    assert_eq!(
        (
            missing.is_not_found(),
            missing.to_string(),
            unknown_method.is_not_found()
        ),
        (
            true,
            "thread/read: the host has no such thread: thread not loaded: 01b00000-dead".to_owned(),
            false
        )
    );
}

#[tokio::test]
async fn after_shutdown_requests_fail_as_closed_never_as_not_found() {
    let host = FakeHost::new();
    let client = host.connect(ClientOptions::default()).await.unwrap();
    let mut events = client.subscribe();
    let host_view = agentrace_host::Host::new(client);
    let thread = "01b00000-0000-7000-8000-000000000001";
    // A second handle to the same connection is not available after shutdown,
    // so read the close from the subscriber.
    host_view.shutdown().await;
    let closed = events.recv().await.unwrap();
    assert_eq!(
        closed,
        Event::Closed {
            reason: "shut down by the client".to_owned()
        }
    );
    let fresh = host.connect(ClientOptions::default()).await.unwrap();
    host.restart();
    let error = fresh
        .request("thread/read", json!({"threadId": thread}))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, HostError::Closed { reason, .. } if reason == "the host restarted"),
        "{error:?}"
    );
    assert!(!error.is_not_found());
}
