//! TLS (DECISIONS §24.15). With `tls-rustls`: a private cluster serving TLS on 127.0.0.1 with a
//! certificate of a fresh CA; sessions work over it, every connection of the repository is
//! encrypted, and a server whose certificate is not trusted is refused. Without the feature:
//! asking for TLS is refused with a message that says how to get it.

#[cfg(feature = "tls-rustls")]
mod with_rustls {
    use arbor_session::SessionStorage;
    use arbor_session_postgres::PostgresRepository;

    use super::super::cluster::Cluster;
    use super::super::{admin, session, user, Schema};

    #[tokio::test]
    async fn sessions_work_over_verified_tls_and_untrusted_servers_are_refused() {
        let _shared = crate::pg!();
        let cluster = Cluster::start_tls();
        let (tls_url, ca) = cluster.tls.clone().unwrap();
        let schema = Schema::new(&cluster.url);
        let mut options = schema.options();
        options.tls_root_cert = Some(ca.clone());
        let repo = PostgresRepository::connect_with(&tls_url, options.clone())
            .await
            .expect("connect over TLS");
        let s = session(&repo).await;
        let e = s.append(user("over tls")).await.unwrap();
        let reader = repo.open_read_only(s.id()).await.unwrap();
        assert_eq!(reader.leaf_id().await.unwrap(), Some(e.id));

        // Pool and writer connections alike are TLS (seen from a Unix-socket admin session).
        let c = admin(&cluster.url).await.unwrap();
        let row = c
            .query_one(
                "SELECT count(*), count(*) FILTER (WHERE s.ssl)
                 FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
                 WHERE a.application_name = $1",
                &[&schema.name],
            )
            .await
            .unwrap();
        let (all, encrypted): (i64, i64) = (row.get(0), row.get(1));
        assert!(all >= 2, "pool and writer connections: {all}");
        assert_eq!(all, encrypted, "every connection is encrypted");

        // The webpki roots do not know the test CA: refused, naming the server.
        options.tls_root_cert = None;
        let err = PostgresRepository::connect_with(&tls_url, options.clone())
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("postgres://postgres@127.0.0.1:"), "{err}");
        assert!(err.to_lowercase().contains("certificate"), "{err}");

        // A CA file that is not PEM is named.
        let junk = std::env::temp_dir().join(format!("arbor-not-a-cert-{}", std::process::id()));
        std::fs::write(&junk, "not a certificate\n").unwrap();
        options.tls_root_cert = Some(junk.clone());
        let err = PostgresRepository::connect_with(&tls_url, options)
            .await
            .unwrap_err()
            .to_string();
        std::fs::remove_file(&junk).unwrap();
        assert!(err.contains(&junk.display().to_string()), "{err}");
        drop(s);
        drop(reader);
        drop(repo);
        drop(schema);
    }
}

#[cfg(not(feature = "tls-rustls"))]
mod without_tls {
    use arbor_session_postgres::{PostgresOptions, PostgresRepository};

    #[tokio::test]
    async fn asking_for_tls_without_the_feature_is_refused_before_connecting() {
        // Port 1 on 127.0.0.1: nothing listens, so getting past the check would fail differently.
        let err = PostgresRepository::connect("postgres://u:pw@127.0.0.1:1/db?sslmode=require")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("sslmode=require"), "{err}");
        assert!(err.contains("tls-rustls"), "{err}");
        assert!(err.contains("postgres://u@127.0.0.1:1/db"), "{err}");
        let options = PostgresOptions {
            tls_root_cert: Some("/etc/ca.pem".into()),
            ..PostgresOptions::default()
        };
        let err = PostgresRepository::connect_with("postgres://u@127.0.0.1:1/db", options)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("/etc/ca.pem") && err.contains("tls-rustls"),
            "{err}"
        );
    }
}
