//! The one integration-test binary of `agentrace-host`: the pure helpers,
//! the client and every read against the fake host (across a restart too),
//! and the reads against the real `codex app-server` over captured rollouts.

// Outside tests the workspace denies unwrap; here the first unexpected error
// should fail the test loudly, with its value.
#![expect(clippy::unwrap_used)]

mod all {
    mod answer;
    mod client;
    mod marker;
    mod reads;
    mod real_host;
    mod restart;
    mod spawn;
    mod support;
    mod tokens;
}
