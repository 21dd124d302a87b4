//! The server's address: checked, stripped of anything secret, and
//! redacted for sharing.

use reqwest::Url;

use crate::error::{DynoError, Result};

/// A server's base URL (scheme, host, port and any path prefix such as
/// `/v1`'s parent), as stored: never with a user, password or query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    url: Url,
}

impl Endpoint {
    /// Parse what the user typed. A missing scheme means `http://`; a
    /// trailing `/v1` is dropped, since Dyno adds the API paths itself.
    pub fn parse(input: &str) -> Result<Endpoint> {
        let text = input.trim();
        let with_scheme = if text.contains("://") {
            text.to_string()
        } else {
            format!("http://{text}")
        };
        let mut url = Url::parse(&with_scheme).map_err(|e| {
            DynoError::BadInput(format!(
                "'{}' is not a server URL ({e}); give one like http://127.0.0.1:8080",
                input.escape_default()
            ))
        })?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err(DynoError::BadInput(format!(
                "'{}' is not an http(s) server URL; give one like http://127.0.0.1:8080",
                input.escape_default()
            )));
        }
        // Credentials in a URL would be stored and printed with it.
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_query(None);
        url.set_fragment(None);
        let path = url.path().trim_end_matches('/').to_string();
        let path = path.strip_suffix("/v1").unwrap_or(&path).to_string();
        url.set_path(&format!("{path}/"));
        Ok(Endpoint { url })
    }

    /// `path` (no leading slash, e.g. `v1/models`) under the base.
    pub fn join(&self, path: &str) -> String {
        self.url
            .join(path.trim_start_matches('/'))
            .map(|u| u.to_string())
            .unwrap_or_else(|_| format!("{}{path}", self.url))
    }

    /// The base URL, as stored with the run.
    pub fn as_str(&self) -> &str {
        self.url.as_str().trim_end_matches('/')
    }

    /// The base URL with the host hidden, for exports and cards that leave
    /// the machine: `http://<host>:8080`. Loopback stays visible, since it
    /// says only "this machine".
    pub fn redacted(&self) -> String {
        if self.is_local() {
            return self.as_str().to_string();
        }
        let port = self.url.port().map(|p| format!(":{p}")).unwrap_or_default();
        let path = self.url.path().trim_end_matches('/');
        format!("{}://<host>{port}{path}", self.url.scheme())
    }

    /// `text` with this server's address hidden as [`Self::redacted`] hides
    /// it: for error texts, which may quote a URL (a run stored before they
    /// stopped doing so, or a server's own message naming itself).
    pub fn scrub(&self, text: &str) -> String {
        let Some(host) = self.url.host_str().filter(|_| !self.is_local()) else {
            return text.to_string();
        };
        text.replace(self.as_str(), &self.redacted())
            .replace(host, "<host>")
    }

    /// The host (without an IPv6 address's brackets) and port to connect
    /// to, the scheme's default port where none is given.
    pub fn host_port(&self) -> Option<(String, u16)> {
        let host = self.url.host_str()?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        Some((bare.to_string(), self.url.port_or_known_default()?))
    }

    pub fn is_https(&self) -> bool {
        self.url.scheme() == "https"
    }

    /// Loopback: the server runs on this machine.
    pub fn is_local(&self) -> bool {
        let host = self.url.host_str().unwrap_or_default();
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// A warning for plain HTTP to another machine: prompts and the API key
    /// cross the network unencrypted.
    pub fn warning(&self) -> Option<String> {
        (self.url.scheme() == "http" && !self.is_local()).then(|| {
            format!(
                "{} is not on this machine and uses plain HTTP: the prompts and any API key travel unencrypted",
                self.as_str()
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_query_and_v1_are_dropped() {
        let e = Endpoint::parse("https://me:secret@example.com:8443/api/v1/?key=abc").unwrap();
        assert_eq!(e.as_str(), "https://example.com:8443/api");
        assert_eq!(
            e.join("v1/chat/completions"),
            "https://example.com:8443/api/v1/chat/completions"
        );
        assert_eq!(e.redacted(), "https://<host>:8443/api");
        assert!(e.warning().is_none());
    }

    #[test]
    fn an_error_text_loses_the_host_wherever_it_names_it() {
        let e = Endpoint::parse("https://gpu-box.lab.example:8443").unwrap();
        let text = "cannot reach https://gpu-box.lab.example:8443/v1/chat/completions: \
                    error sending request for url (https://gpu-box.lab.example:8443/v1/x); \
                    gpu-box.lab.example refused";
        let clean = e.scrub(text);
        assert!(!clean.contains("gpu-box"), "{clean}");
        assert!(
            clean.contains("https://<host>:8443/v1/chat/completions"),
            "{clean}"
        );
        let local = Endpoint::parse("127.0.0.1:8080").unwrap();
        assert_eq!(
            local.scrub("at http://127.0.0.1:8080"),
            "at http://127.0.0.1:8080"
        );
    }

    #[test]
    fn a_bare_host_is_http_and_loopback_is_not_redacted() {
        let e = Endpoint::parse("127.0.0.1:8080").unwrap();
        assert_eq!(e.as_str(), "http://127.0.0.1:8080");
        assert_eq!(e.join("/props"), "http://127.0.0.1:8080/props");
        assert_eq!(e.redacted(), "http://127.0.0.1:8080");
        assert!(e.warning().is_none());
        assert!(Endpoint::parse("http://192.168.1.5:11434")
            .unwrap()
            .warning()
            .is_some());
    }

    #[test]
    fn not_a_server_url_is_bad_input() {
        for bad in ["", "ftp://x", "http://", "::::"] {
            assert!(
                matches!(Endpoint::parse(bad), Err(DynoError::BadInput(_))),
                "{bad}"
            );
        }
    }
}
