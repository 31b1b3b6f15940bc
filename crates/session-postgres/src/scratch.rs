//! Throwaway schemas for tests and the conformance run (`cargo xtask conformance`): each
//! `ScratchSchema` names a fresh schema and drops it, with everything in it, when dropped.

use std::sync::atomic::{AtomicU32, Ordering};

use crate::config::PostgresOptions;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// A uniquely named schema on the server at `url`, removed on drop.
#[derive(Debug)]
pub struct ScratchSchema {
    /// The connection string the schema lives behind (also used to drop it).
    pub url: String,
    /// The schema's name, unique per process and call.
    pub name: String,
}

impl ScratchSchema {
    /// Names a fresh schema (`t_<pid>_<n>_<nanos>`); the repository creates it on connect.
    pub fn new(url: &str) -> ScratchSchema {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        ScratchSchema {
            url: url.to_owned(),
            name: format!(
                "t_{}_{}_{nanos}",
                std::process::id(),
                COUNTER.fetch_add(1, Ordering::Relaxed)
            ),
        }
    }

    /// Default options on this schema; `application_name` is the schema's name too, so a test
    /// can find (and terminate) exactly this repository's connections.
    pub fn options(&self) -> PostgresOptions {
        PostgresOptions {
            schema: self.name.clone(),
            application_name: self.name.clone(),
            ..Default::default()
        }
    }
}

impl Drop for ScratchSchema {
    fn drop(&mut self) {
        let (url, name) = (self.url.clone(), self.name.clone());
        // Drop may run inside a runtime: the blocking cleanup gets a thread of its own.
        // Cleanup is best effort; a leftover schema only costs space on a test server.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async move {
                if let Ok((client, conn)) =
                    tokio_postgres::connect(&url, tokio_postgres::NoTls).await
                {
                    tokio::spawn(async move {
                        let _ = conn.await;
                    });
                    // Connections of the schema's repositories may still be open (a test's
                    // runtime can be blocked on this very drop): end them so their locks go.
                    let _ = client
                        .execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                             WHERE application_name = $1 AND pid <> pg_backend_pid()",
                            &[&name],
                        )
                        .await;
                    let _ = client
                        .batch_execute(&format!("DROP SCHEMA IF EXISTS {name} CASCADE"))
                        .await;
                }
            });
        })
        .join();
    }
}
