//! What opening a connection to the server costs, measured apart from the
//! requests.
//!
//! Every timed request opens its own connection (see [`super::run`]: no
//! idle connection is kept, because llama-server closes a streamed
//! request's connection), so each TTFT holds a name lookup, a TCP handshake
//! and, over https, a TLS handshake, as a fresh client's first request
//! does. On loopback that is well under a millisecond; to a server across a
//! network it can be tens of milliseconds, and would read as a slow server.
//! So the set-up is measured on its own, a few times before the tests, and
//! shown beside TTFT: the reader can tell the server's latency from the
//! network's, and TTFT stays what a client sees.

use std::sync::Arc;
use std::time::{Duration, Instant};

use rustls::pki_types::{pem::PemObject, CertificateDer, ServerName};

use super::Endpoint;
use crate::error::{DynoError, Result};
pub use crate::vocab::serve::ConnectCost;

impl ConnectCost {
    /// Both parts together: what each request's TTFT holds beyond the
    /// server's own latency.
    pub fn total_ms(&self) -> f64 {
        self.tcp_ms + self.tls_ms.unwrap_or(0.0)
    }

    /// "TTFT includes opening a connection: 0.21 ms (TCP 0.08, TLS 0.13;
    /// medians of 5)".
    pub fn words(&self) -> String {
        let parts = match self.tls_ms {
            Some(tls) => format!("TCP {:.2}, TLS {tls:.2}; ", self.tcp_ms),
            None => "TCP; ".to_string(),
        };
        format!(
            "each TTFT includes opening a connection: {:.2} ms ({parts}median of {} fresh connections)",
            self.total_ms(),
            self.probes
        )
    }
}

/// The certificates of a PEM file: authorities to trust besides the
/// public ones (`--ca-cert`), for a server behind a private authority.
pub fn read_ca(path: &std::path::Path) -> Result<Vec<u8>> {
    let pem = std::fs::read(path).map_err(|e| {
        DynoError::BadInput(format!(
            "--ca-cert {}: {e}; give the PEM file of the authority that signed the server's certificate",
            path.display()
        ))
    })?;
    let n = CertificateDer::pem_slice_iter(&pem)
        .filter(|c| c.is_ok())
        .count();
    if n == 0 {
        return Err(DynoError::BadInput(format!(
            "--ca-cert {}: no PEM certificate in it (\"-----BEGIN CERTIFICATE-----\"); give the authority's certificate, not its key",
            path.display()
        )));
    }
    Ok(pem)
}

/// The TLS settings a probe uses: the public roots reqwest trusts, and the
/// user's own authorities.
fn tls_config(ca_pem: Option<&[u8]>) -> Option<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    for c in ca_pem
        .map(|p| {
            CertificateDer::pem_slice_iter(p)
                .flatten()
                .collect::<Vec<_>>()
        })
        .unwrap_or_default()
    {
        roots.add(c).ok()?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Some(
        rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .ok()?
            .with_root_certificates(roots)
            .with_no_client_auth(),
    )
}

/// Median of a few values (they are never empty here).
fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// Whether reqwest sends requests to `host` through a proxy from the
/// environment (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, less `NO_PROXY`):
/// a probe straight to the server would then time a path the requests do
/// not take.
fn proxied(host: &str, https: bool) -> bool {
    proxied_by(host, https, |name| {
        std::env::var(name)
            .or_else(|_| std::env::var(name.to_ascii_lowercase()))
            .ok()
    })
}

/// [`proxied`], with the environment read through `env`.
fn proxied_by(host: &str, https: bool, env: impl Fn(&str) -> Option<String>) -> bool {
    let var = |name: &str| env(name).filter(|v| !v.trim().is_empty());
    let scheme = if https { "HTTPS_PROXY" } else { "HTTP_PROXY" };
    if var(scheme).or_else(|| var("ALL_PROXY")).is_none() {
        return false;
    }
    let host = host.to_ascii_lowercase();
    !var("NO_PROXY").is_some_and(|list| {
        list.split(',').map(str::trim).any(|e| {
            let e = e.trim_start_matches('.').to_ascii_lowercase();
            e == "*" || host == e || host.ends_with(&format!(".{e}"))
        })
    })
}

/// Open `probes` connections to the server, one after another, and time
/// their set-up. `None` when one fails (the requests will then say why, in
/// their own words), or when the requests go through a proxy.
pub async fn probe(ep: &Endpoint, ca_pem: Option<&[u8]>, probes: u32) -> Option<ConnectCost> {
    let (host, port) = ep.host_port()?;
    if proxied(&host, ep.is_https()) {
        return None;
    }
    let tls = if ep.is_https() {
        let name = ServerName::try_from(host.clone()).ok()?;
        let connector = tokio_rustls::TlsConnector::from(Arc::new(tls_config(ca_pem)?));
        Some((connector, name))
    } else {
        None
    };
    let limit = Duration::from_secs(10);
    let mut tcp_ms = Vec::new();
    let mut tls_ms = Vec::new();
    for _ in 0..probes.max(1) {
        let t0 = Instant::now();
        let stream =
            tokio::time::timeout(limit, tokio::net::TcpStream::connect((host.as_str(), port)))
                .await
                .ok()?
                .ok()?;
        let _ = stream.set_nodelay(true);
        tcp_ms.push(t0.elapsed().as_secs_f64() * 1e3);
        if let Some((connector, name)) = &tls {
            let t1 = Instant::now();
            let _session = tokio::time::timeout(limit, connector.connect(name.clone(), stream))
                .await
                .ok()?
                .ok()?;
            tls_ms.push(t1.elapsed().as_secs_f64() * 1e3);
        }
    }
    Some(ConnectCost {
        probes: tcp_ms.len() as u32,
        tcp_ms: median(tcp_ms),
        tls_ms: (!tls_ms.is_empty()).then(|| median(tls_ms)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cost_is_said_with_its_parts() {
        let c = ConnectCost {
            probes: 5,
            tcp_ms: 0.5,
            tls_ms: Some(2.25),
        };
        assert_eq!(c.total_ms(), 2.75);
        assert_eq!(
            c.words(),
            "each TTFT includes opening a connection: 2.75 ms (TCP 0.50, TLS 2.25; median of 5 fresh connections)"
        );
        let plain = ConnectCost { tls_ms: None, ..c };
        assert_eq!(
            plain.words(),
            "each TTFT includes opening a connection: 0.50 ms (TCP; median of 5 fresh connections)"
        );
    }

    #[test]
    fn a_proxy_in_the_environment_is_followed_as_reqwest_follows_it() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert!(!proxied_by("gpu.lan", true, env(&[])));
        assert!(proxied_by(
            "gpu.lan",
            true,
            env(&[("HTTPS_PROXY", "http://p:3128")])
        ));
        assert!(!proxied_by(
            "gpu.lan",
            false,
            env(&[("HTTPS_PROXY", "http://p:3128")])
        ));
        assert!(proxied_by(
            "gpu.lan",
            false,
            env(&[("ALL_PROXY", "http://p:3128")])
        ));
        let bypass = env(&[
            ("ALL_PROXY", "http://p:3128"),
            ("NO_PROXY", "localhost, .lan"),
        ]);
        assert!(!proxied_by("gpu.lan", true, bypass));
        assert!(proxied_by("example.com", true, bypass));
    }

    #[test]
    fn a_file_without_a_certificate_is_refused() {
        let dir = std::env::temp_dir().join(format!("dyno-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("key.pem");
        std::fs::write(
            &f,
            "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
        )
        .unwrap();
        let e = read_ca(&f).unwrap_err().to_string();
        assert!(e.contains("no PEM certificate"), "{e}");
        let e = read_ca(&dir.join("missing.pem")).unwrap_err().to_string();
        assert!(e.contains("--ca-cert"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test]
    async fn a_plain_connection_is_timed_and_a_closed_port_gives_none() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            while let Ok((s, _)) = listener.accept().await {
                drop(s);
            }
        });
        let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        let c = probe(&ep, None, 3).await.expect("a listening port");
        assert_eq!((c.probes, c.tls_ms), (3, None));
        assert!(c.tcp_ms > 0.0 && c.tcp_ms < 1000.0, "{c:?}");
        // A port nothing listens on: no figure, and no error of its own.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = closed.local_addr().unwrap().port();
        drop(closed);
        let ep = Endpoint::parse(&format!("http://127.0.0.1:{port}")).unwrap();
        assert_eq!(probe(&ep, None, 3).await, None);
    }
}
