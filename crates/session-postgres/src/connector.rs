//! How connections reach the server: plain, or TLS through rustls with the `tls-rustls`
//! feature (DECISIONS §24.15). The connection string's `sslmode` decides whether TLS is tried
//! (`prefer`, the default) or required (`require`); with TLS the server's certificate and host
//! name are always verified, against `PostgresOptions::tls_root_cert` or the webpki roots.

use deadpool_postgres::{Manager, ManagerConfig};
use tokio_postgres::config::SslMode;
use tokio_postgres::{Client, Config};

use crate::config::{PostgresOptions, Target};
use arbor_session::error::SessionError;

/// The TLS setup of one repository, shared by its pool and its writers' connections.
#[derive(Clone)]
pub(crate) enum Connector {
    Plain,
    #[cfg(feature = "tls-rustls")]
    Rustls(tokio_postgres_rustls::MakeRustlsConnect),
}

impl Connector {
    pub(crate) fn new(
        target: &Target,
        options: &PostgresOptions,
    ) -> Result<Connector, SessionError> {
        #[cfg(feature = "tls-rustls")]
        {
            if target.config.get_ssl_mode() == SslMode::Disable {
                return Ok(Connector::Plain);
            }
            let config = rustls_config(options.tls_root_cert.as_deref())?;
            Ok(Connector::Rustls(
                tokio_postgres_rustls::MakeRustlsConnect::new(config),
            ))
        }
        #[cfg(not(feature = "tls-rustls"))]
        {
            let without = |what: &str| {
                Err(SessionError::Storage(format!(
                    "{what} for {} needs TLS, and this build has no TLS support (build with the \
                     `tls-rustls` feature)",
                    target.display
                )))
            };
            if target.config.get_ssl_mode() == SslMode::Require {
                return without("sslmode=require");
            }
            if let Some(path) = &options.tls_root_cert {
                return without(&format!("a TLS root certificate ({})", path.display()));
            }
            Ok(Connector::Plain)
        }
    }

    /// The pool's connection manager.
    pub(crate) fn manager(&self, config: Config, manager: ManagerConfig) -> Manager {
        match self {
            Connector::Plain => Manager::from_config(config, tokio_postgres::NoTls, manager),
            #[cfg(feature = "tls-rustls")]
            Connector::Rustls(tls) => Manager::from_config(config, tls.clone(), manager),
        }
    }

    /// A new connection outside the pool; its I/O runs on a task of its own until the client is
    /// dropped or the server goes away (the next use of the client then reports the loss).
    pub(crate) async fn connect(&self, config: &Config) -> Result<Client, tokio_postgres::Error> {
        match self {
            Connector::Plain => {
                let (client, connection) = config.connect(tokio_postgres::NoTls).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            }
            #[cfg(feature = "tls-rustls")]
            Connector::Rustls(tls) => {
                let (client, connection) = config.connect(tls.clone()).await?;
                tokio::spawn(async move {
                    let _ = connection.await;
                });
                Ok(client)
            }
        }
    }
}

/// rustls with the ring provider (no process-wide default needed), trusting the PEM
/// certificates of `root_cert` when given, else the Mozilla roots of `webpki-roots`.
#[cfg(feature = "tls-rustls")]
fn rustls_config(
    root_cert: Option<&std::path::Path>,
) -> Result<rustls::ClientConfig, SessionError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;

    let mut roots = rustls::RootCertStore::empty();
    match root_cert {
        Some(path) => {
            let bad = |detail: String| {
                SessionError::Storage(format!("TLS root certificate {}: {detail}", path.display()))
            };
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .map_err(|e| bad(e.to_string()))?
                .collect::<Result<_, _>>()
                .map_err(|e| bad(e.to_string()))?;
            if certs.is_empty() {
                return Err(bad("no PEM certificate in the file".into()));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| bad(e.to_string()))?;
            }
        }
        None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| SessionError::Storage(format!("TLS setup: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}
