//! A loopback HTTP server on its own thread for the scripted model mocks:
//! an ephemeral 127.0.0.1 port, a bounded lifetime, and a stop on drop.

use std::net::SocketAddr;
use std::time::Duration;

use axum::Router;

/// How long a mock serves before it stops on its own.
const LIFETIME: Duration = Duration::from_secs(300);

/// A running server; stops (and joins its thread) when dropped.
pub struct LoopbackServer {
    address: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LoopbackServer {
    /// Serves `app` on an ephemeral loopback port; `what` names it in the
    /// panic when it cannot start.
    pub fn start(app: Router, what: &str) -> Self {
        let (ready_sender, ready) = std::sync::mpsc::channel();
        let (shutdown, stop) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            runtime.block_on(async move {
                let Ok(listener) = tokio::net::TcpListener::bind("127.0.0.1:0").await else {
                    return;
                };
                let Ok(address) = listener.local_addr() else {
                    return;
                };
                let _ = ready_sender.send(address);
                let serve = axum::serve(listener, app).with_graceful_shutdown(async move {
                    let _ = tokio::time::timeout(LIFETIME, stop).await;
                });
                let _ = serve.await;
            });
        });
        let address = ready
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|error| panic!("the {what} did not start: {error}"));
        Self {
            address,
            shutdown: Some(shutdown),
            thread: Some(thread),
        }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        if let Some(shutdown) = self.shutdown.take() {
            let _ = shutdown.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
