//! Private throwaway clusters for tests that must stop, restart or reconfigure a server
//! (`.ci/postgres.sh`), so the shared test server keeps serving the other tests.

use std::path::{Path, PathBuf};

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.ci/postgres.sh")
}

/// A throwaway cluster of this test, stopped and removed on drop.
pub struct Cluster {
    pub url: String,
    pub dir: String,
    /// With TLS: the 127.0.0.1 URL (`sslmode=require`) and the CA that signed the server.
    #[cfg_attr(not(feature = "tls-rustls"), allow(dead_code))]
    pub tls: Option<(String, PathBuf)>,
}

impl Cluster {
    pub fn start() -> Cluster {
        Self::start_with(None)
    }

    /// Also listening on 127.0.0.1 with TLS (a fresh CA and server certificate).
    #[cfg_attr(not(feature = "tls-rustls"), allow(dead_code))]
    pub fn start_tls() -> Cluster {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        Self::start_with(Some(port))
    }

    fn start_with(tls_port: Option<u16>) -> Cluster {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(script()).arg("start");
        if let Some(port) = tls_port {
            cmd.env("ARBOR_PG_TLS_PORT", port.to_string());
        }
        let out = cmd.output().expect("running .ci/postgres.sh start");
        assert!(
            out.status.success(),
            "postgres.sh start failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let value = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("export {key}='")))
                .and_then(|v| v.strip_suffix('\''))
                .unwrap_or_else(|| panic!("{key} missing in postgres.sh output: {text}"))
                .to_owned()
        };
        Cluster {
            url: value("ARBOR_TEST_POSTGRES_URL"),
            dir: value("ARBOR_TEST_POSTGRES_DIR"),
            tls: tls_port.map(|_| {
                (
                    value("ARBOR_TEST_POSTGRES_TLS_URL"),
                    PathBuf::from(value("ARBOR_TEST_POSTGRES_CA")),
                )
            }),
        }
    }

    pub fn restart(&self) {
        let out = std::process::Command::new("bash")
            .arg(script())
            .args(["restart", &self.dir])
            .output()
            .expect("running .ci/postgres.sh restart");
        assert!(
            out.status.success(),
            "postgres.sh restart failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::process::Command::new("bash")
            .arg(script())
            .args(["stop", &self.dir])
            .output();
    }
}
