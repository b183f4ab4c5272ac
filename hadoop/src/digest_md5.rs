//! The server side of SASL DIGEST-MD5 (RFC 2831) as Hadoop's IPC uses it
//! for TOKEN authentication: the client proves it holds a delegation
//! token's password without sending it. Only what Hadoop's TOKEN method
//! uses: realm and server id `default`, protocol empty (digest-uri
//! `/default`), `qop=auth` (authentication only: no integrity or
//! confidentiality layer, so calls travel in the clear afterwards, as with
//! Hadoop's `hadoop.rpc.protection=authentication`), one round (`nc`
//! 00000001), the username being the base64 of the token identifier and
//! the password the base64 of the token's password
//! (`SaslRpcServer.encodeIdentifier`/`encodePassword`).
//!
//! ```text
//!   server NEGOTIATE  TOKEN/DIGEST-MD5, challenge: realm, nonce, qop=auth
//!   client INITIATE   username, nonce, cnonce, nc, digest-uri, response
//!   server SUCCESS    rspauth (proves the server knew the password too)
//! ```
//!
//! MD5 is RustCrypto's; this module only builds the RFC's strings. A
//! response for another nonce, realm, digest-uri, qop or nc is refused; so
//! is a malformed one, with a reason (never a panic).

use md5::{Digest, Md5};

/// Hadoop's SASL realm and server id for TOKEN authentication.
pub const REALM: &str = "default";
pub const SERVER_ID: &str = "default";
/// Hadoop's SASL protocol for TOKEN authentication (empty).
pub const PROTOCOL: &str = "";
/// Longest DIGEST-MD5 response taken (RFC 2831 allows 4096 bytes).
pub const MAX_RESPONSE_BYTES: usize = 4096;

/// A client's DIGEST-MD5 response, its directives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DigestResponse {
    pub username: String,
    pub realm: String,
    pub nonce: String,
    pub cnonce: String,
    pub nc: String,
    pub qop: String,
    pub digest_uri: String,
    pub response: String,
    pub authzid: Option<String>,
}

fn md5(parts: &[&[u8]]) -> [u8; 16] {
    let mut h = Md5::new();
    for p in parts {
        h.update(p);
    }
    h.finalize().into()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The digest-uri Hadoop's client sends: `PROTOCOL/SERVER_ID`.
pub fn digest_uri() -> String {
    format!("{PROTOCOL}/{SERVER_ID}")
}

/// The server's first challenge with `nonce`.
pub fn challenge(nonce: &str) -> Vec<u8> {
    format!(r#"realm="{REALM}",nonce="{nonce}",qop="auth",charset=utf-8,algorithm=md5-sess"#).into_bytes()
}

/// A fresh nonce: 16 random bytes from the OS, base64.
pub fn new_nonce() -> String {
    use base64::Engine;
    use rand::RngCore;
    let mut b = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut b);
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// The directives of a response (`key=value` or `key="quoted"`, comma
/// separated, `\` escaping inside quotes).
pub fn parse_response(bytes: &[u8]) -> Result<DigestResponse, String> {
    if bytes.len() > MAX_RESPONSE_BYTES {
        return Err(format!("a DIGEST-MD5 response of {} bytes", bytes.len()));
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "a DIGEST-MD5 response that is not UTF-8".to_string())?;
    let mut out = DigestResponse::default();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let key: String = chars.by_ref().take_while(|c| *c != '=').collect();
        let mut value = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('\\') => value.extend(chars.next()),
                    Some('"') => break,
                    Some(c) => value.push(c),
                    None => return Err(format!("an unterminated quoted value of {key}")),
                }
            }
        } else {
            while let Some(c) = chars.peek().copied().filter(|c| *c != ',') {
                value.push(c);
                chars.next();
            }
        }
        let slot = match key.trim() {
            "username" => &mut out.username,
            "realm" => &mut out.realm,
            "nonce" => &mut out.nonce,
            "cnonce" => &mut out.cnonce,
            "nc" => &mut out.nc,
            "qop" => &mut out.qop,
            "digest-uri" => &mut out.digest_uri,
            "response" => &mut out.response,
            "authzid" => {
                out.authzid = Some(value);
                continue;
            }
            _ => continue, // charset, maxbuf, cipher: nothing to check
        };
        *slot = value;
    }
    for (name, v) in [
        ("username", &out.username),
        ("nonce", &out.nonce),
        ("cnonce", &out.cnonce),
        ("nc", &out.nc),
        ("digest-uri", &out.digest_uri),
        ("response", &out.response),
    ] {
        if v.is_empty() {
            return Err(format!("a DIGEST-MD5 response without {name}"));
        }
    }
    Ok(out)
}

/// `response` (qop auth) of `r` for `password`, with `a2_prefix`
/// `AUTHENTICATE` for the client's response, empty for the server's rspauth.
fn compute(r: &DigestResponse, password: &str, a2_prefix: &str) -> String {
    let secret = md5(&[
        r.username.as_bytes(),
        b":",
        r.realm.as_bytes(),
        b":",
        password.as_bytes(),
    ]);
    let mut a1 = vec![&secret[..], b":", r.nonce.as_bytes(), b":", r.cnonce.as_bytes()];
    if let Some(z) = &r.authzid {
        a1.extend([&b":"[..], z.as_bytes()]);
    }
    let ha1 = hex(&md5(&a1));
    let ha2 = hex(&md5(&[a2_prefix.as_bytes(), b":", r.digest_uri.as_bytes()]));
    hex(&md5(&[
        ha1.as_bytes(),
        b":",
        r.nonce.as_bytes(),
        b":",
        r.nc.as_bytes(),
        b":",
        r.cnonce.as_bytes(),
        b":",
        r.qop.as_bytes(),
        b":",
        ha2.as_bytes(),
    ]))
}

/// Whether two strings are equal, in time that does not depend on where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Check `r` against the challenge of `nonce`, for the password the
/// username's token has (`password`, already base64 as Hadoop encodes it);
/// the server's final message (`rspauth=...`) when it proves the password.
pub fn verify(r: &DigestResponse, nonce: &str, password: &str) -> Result<Vec<u8>, String> {
    let checks = [
        ("nonce", r.nonce.as_str(), nonce),
        ("realm", r.realm.as_str(), REALM),
        ("qop", r.qop.as_str(), "auth"),
        ("nc", r.nc.as_str(), "00000001"),
    ];
    for (name, got, want) in checks {
        if got != want {
            return Err(format!("DIGEST-MD5 {name} {got:?}, not {want:?}"));
        }
    }
    if r.digest_uri != digest_uri() {
        return Err(format!(
            "DIGEST-MD5 digest-uri {:?}, not {:?}",
            r.digest_uri,
            digest_uri()
        ));
    }
    if !same(&compute(r, password, "AUTHENTICATE"), &r.response.to_ascii_lowercase()) {
        return Err("DIGEST-MD5 response does not prove the token's password".into());
    }
    Ok(format!("rspauth={}", compute(r, password, "")).into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 2831 §4's example (qop auth, realm elwood.innosoft.com).
    fn rfc_example() -> DigestResponse {
        parse_response(
            br#"charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",nc=00000001,cnonce="OA6MHXh6VqTrRk",digest-uri="imap/elwood.innosoft.com",response=d388dad90d4bbd760a152321f2143af7,qop=auth"#,
        )
        .unwrap()
    }

    #[test]
    fn the_rfc_example_computes_its_response_and_rspauth() {
        let r = rfc_example();
        assert_eq!(r.username, "chris");
        assert_eq!(r.digest_uri, "imap/elwood.innosoft.com");
        assert_eq!(
            compute(&r, "secret", "AUTHENTICATE"),
            "d388dad90d4bbd760a152321f2143af7"
        );
        assert_eq!(compute(&r, "secret", ""), "ea40f60335c427b5527b84dbabcdfffd");
    }

    /// A response as Hadoop's client builds it for `password`.
    fn hadoop_response(nonce: &str, password: &str) -> DigestResponse {
        let mut r = DigestResponse {
            username: "AAVhbGljZQ==".into(),
            realm: REALM.into(),
            nonce: nonce.into(),
            cnonce: "c-nonce".into(),
            nc: "00000001".into(),
            qop: "auth".into(),
            digest_uri: digest_uri(),
            response: String::new(),
            authzid: None,
        };
        r.response = compute(&r, password, "AUTHENTICATE");
        r
    }

    #[test]
    fn the_password_is_proved_and_anything_else_refused() {
        let nonce = new_nonce();
        assert_ne!(nonce, new_nonce());
        let good = hadoop_response(&nonce, "cGFzcw==");
        let rspauth = verify(&good, &nonce, "cGFzcw==").unwrap();
        assert_eq!(
            rspauth,
            format!("rspauth={}", compute(&good, "cGFzcw==", "")).into_bytes()
        );
        assert!(verify(&good, &nonce, "d3Jvbmc=").is_err(), "another password");
        assert!(verify(&good, "another nonce", "cGFzcw==").is_err());
        for bad in [
            DigestResponse {
                nc: "00000002".into(),
                ..good.clone()
            },
            DigestResponse {
                qop: "auth-int".into(),
                ..good.clone()
            },
            DigestResponse {
                realm: "other".into(),
                ..good.clone()
            },
            DigestResponse {
                digest_uri: "hdfs/default".into(),
                ..good.clone()
            },
        ] {
            assert!(verify(&bad, &nonce, "cGFzcw==").is_err(), "{bad:?}");
        }
        // What the client sends parses back to what it computed.
        let text = format!(
            r#"username="{}",realm="default",nonce="{}",cnonce="c-nonce",nc=00000001,qop=auth,digest-uri="/default",response={},charset=utf-8"#,
            good.username, nonce, good.response
        );
        assert_eq!(parse_response(text.as_bytes()).unwrap(), good);
    }

    #[test]
    fn malformed_responses_are_refused() {
        for bad in [
            &b""[..],
            b"username=\"unterminated",
            b"username=\"u\",nonce=\"n\"",
            &[0xff, 0xfe][..],
            &vec![b'a'; MAX_RESPONSE_BYTES + 1][..],
        ] {
            assert!(parse_response(bad).is_err(), "{bad:?}");
        }
        let challenge = String::from_utf8(challenge("n1")).unwrap();
        assert!(
            challenge.contains(r#"nonce="n1""#) && challenge.contains(r#"qop="auth""#),
            "{challenge}"
        );
    }
}
