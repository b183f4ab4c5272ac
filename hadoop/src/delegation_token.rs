//! raftfs delegation tokens in Hadoop's own forms, so a Hadoop client
//! authenticates with one (SASL TOKEN, [`crate::digest_md5`]) as with an
//! HDFS delegation token:
//!
//! - the identifier as Hadoop's `AbstractDelegationTokenIdentifier` writes
//!   it (a version byte 0, then owner, renewer and real user as `Text`,
//!   issue and max dates as vlongs, sequence number and master key id as
//!   vints): Hadoop's clients decode it (hdfs-native reads the max date to
//!   skip a token about to expire), so it cannot be raftfs's own encoding;
//! - the token storage file Hadoop's clients read from
//!   `HADOOP_TOKEN_FILE_LOCATION` (`HDTS`, format 0: Hadoop's `Credentials`
//!   written as Writables).
//!
//! The identifier carries the same fields as raftfs's
//! [`DelegationTokenIdentifier`], so the two forms convert both ways and
//! the password (raftfs's HMAC of its own identifier) is the same; a
//! sequence number or key id past `i32::MAX`, which Hadoop's vint cannot
//! carry, is refused rather than cut.
//!
//! Caveat: the Writable integers are Hadoop's `WritableUtils` zero-
//! compressed encoding, written here from its documented layout (no crate
//! implements it).

use raftfs_proto::{DelegationToken, DelegationTokenIdentifier, FsError};

/// The token kind HDFS gives delegation tokens.
pub const DELEGATION_TOKEN_KIND: &str = "HDFS_DELEGATION_TOKEN";
/// The version byte of Hadoop's delegation token identifier.
const IDENTIFIER_VERSION: u8 = 0;
/// The first bytes of a token storage file, and its Writable format's byte.
const TOKEN_STORAGE_MAGIC: &[u8; 4] = b"HDTS";
const TOKEN_STORAGE_WRITABLE: u8 = 0;
/// Longest `Text` this decoder takes (a user name, a service).
pub const MAX_TEXT_BYTES: usize = 4096;

/// The service a Hadoop client looks a token up by, for the file system
/// `hdfs://fs`: a logical nameservice's `ha-hdfs:NS` (HDFS's
/// `HAUtil.buildTokenServiceForLogicalUri`), or a NameNode's `HOST:PORT`
/// as it is (`SecurityUtil.buildTokenService`).
pub fn token_service(fs: &str) -> String {
    if fs.contains(':') {
        fs.to_string()
    } else {
        format!("ha-hdfs:{fs}")
    }
}

fn write_vlong(out: &mut Vec<u8>, v: i64) {
    if (-112..=127).contains(&v) {
        out.push(v as u8);
        return;
    }
    let (mut len, v) = if v < 0 { (-120i32, !v) } else { (-112i32, v) };
    let mut tmp = v;
    while tmp != 0 {
        tmp >>= 8;
        len -= 1;
    }
    out.push(len as i8 as u8);
    let bytes = if len < -120 { -(len + 120) } else { -(len + 112) };
    for i in (0..bytes).rev() {
        out.push((v >> (8 * i)) as u8);
    }
}

fn write_text(out: &mut Vec<u8>, s: &str) {
    write_vlong(out, s.len() as i64);
    out.extend_from_slice(s.as_bytes());
}

fn write_bytes(out: &mut Vec<u8>, b: &[u8]) {
    write_vlong(out, b.len() as i64);
    out.extend_from_slice(b);
}

/// A reader of Writables that refuses, rather than panics on, short or bad input.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8, FsError> {
        let (&b, rest) = self
            .0
            .split_first()
            .ok_or_else(|| bad("the identifier ends too soon"))?;
        self.0 = rest;
        Ok(b)
    }

    fn vlong(&mut self) -> Result<i64, FsError> {
        let first = self.byte()? as i8;
        if first >= -112 {
            return Ok(i64::from(first));
        }
        let (negative, len) = if first < -120 {
            (true, -(i32::from(first) + 120))
        } else {
            (false, -(i32::from(first) + 112))
        };
        let mut v: i64 = 0;
        for _ in 0..len {
            v = (v << 8) | i64::from(self.byte()?);
        }
        Ok(if negative { !v } else { v })
    }

    fn vint(&mut self) -> Result<i32, FsError> {
        let v = self.vlong()?;
        i32::try_from(v).map_err(|_| bad("a vint out of range"))
    }

    fn text(&mut self) -> Result<String, FsError> {
        let len = usize::try_from(self.vint()?).map_err(|_| bad("a negative length"))?;
        if len > MAX_TEXT_BYTES || len > self.0.len() {
            return Err(bad("a text longer than the identifier"));
        }
        let (s, rest) = self.0.split_at(len);
        self.0 = rest;
        String::from_utf8(s.to_vec()).map_err(|_| bad("a text that is not UTF-8"))
    }
}

fn bad(why: &str) -> FsError {
    FsError::InvalidArgument(format!("not a Hadoop delegation token identifier: {why}"))
}

fn to_vint(v: u64, what: &str) -> Result<i64, FsError> {
    i32::try_from(v).map(i64::from).map_err(|_| {
        FsError::InvalidArgument(format!(
            "the token's {what} {v} is past what Hadoop's identifier carries (a 32-bit vint)"
        ))
    })
}

/// `id` as Hadoop's `AbstractDelegationTokenIdentifier` writes it.
pub fn encode_identifier(id: &DelegationTokenIdentifier) -> Result<Vec<u8>, FsError> {
    let mut out = vec![IDENTIFIER_VERSION];
    write_text(&mut out, &id.owner);
    write_text(&mut out, &id.renewer);
    write_text(&mut out, &id.real_user);
    write_vlong(&mut out, id.issue_ms);
    write_vlong(&mut out, id.max_ms);
    write_vlong(&mut out, to_vint(id.sequence_number, "sequence number")?);
    write_vlong(&mut out, to_vint(id.key_id, "master key id")?);
    Ok(out)
}

/// The identifier a Hadoop client presents, as raftfs's.
pub fn decode_identifier(bytes: &[u8]) -> Result<DelegationTokenIdentifier, FsError> {
    let mut r = Reader(bytes);
    let version = r.byte()?;
    if version != IDENTIFIER_VERSION {
        return Err(bad(&format!("version {version}, not {IDENTIFIER_VERSION}")));
    }
    let id = DelegationTokenIdentifier {
        owner: r.text()?,
        renewer: r.text()?,
        real_user: r.text()?,
        issue_ms: r.vlong()?,
        max_ms: r.vlong()?,
        sequence_number: u64::try_from(r.vint()?).map_err(|_| bad("a negative sequence number"))?,
        key_id: u64::try_from(r.vint()?).map_err(|_| bad("a negative key id"))?,
    };
    if !r.0.is_empty() {
        return Err(bad("bytes after the identifier"));
    }
    Ok(id)
}

/// A Hadoop token storage file (what `hdfs fetchdt` writes and Hadoop's
/// clients read from `HADOOP_TOKEN_FILE_LOCATION`) holding each token for
/// its file system `hdfs://fs` (its service, [`token_service`], is also
/// its alias: a client picks the token of the file system it reaches).
/// Two tokens for one file system are refused (the alias would repeat).
pub fn token_file(tokens: &[(&DelegationToken, &str)]) -> Result<Vec<u8>, FsError> {
    let mut services = std::collections::BTreeSet::new();
    let mut out = TOKEN_STORAGE_MAGIC.to_vec();
    out.push(TOKEN_STORAGE_WRITABLE);
    write_vlong(&mut out, tokens.len() as i64);
    for (token, fs) in tokens {
        let service = token_service(fs);
        if !services.insert(service.clone()) {
            return Err(FsError::InvalidArgument(format!("two tokens for {service}")));
        }
        write_text(&mut out, &service); // alias
        write_bytes(&mut out, &encode_identifier(&token.identifier)?);
        write_bytes(&mut out, &token.password);
        write_text(&mut out, DELEGATION_TOKEN_KIND);
        write_text(&mut out, &service);
    }
    write_vlong(&mut out, 0); // secret keys
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id() -> DelegationTokenIdentifier {
        DelegationTokenIdentifier {
            owner: "alice".into(),
            renewer: "yarn".into(),
            real_user: String::new(),
            issue_ms: 1_764_000_000_123,
            max_ms: 1_764_604_800_123,
            sequence_number: 300,
            key_id: 7,
        }
    }

    #[test]
    fn vlongs_are_hadoops_zero_compressed_encoding() {
        // WritableUtils.writeVLong's bytes for these values.
        let cases: [(i64, &[u8]); 7] = [
            (0, &[0x00]),
            (127, &[0x7f]),
            (-112, &[0x90]),
            (128, &[0x8f, 0x80]),
            (300, &[0x8e, 0x01, 0x2c]),
            (-113, &[0x87, 0x70]),
            (1_764_000_000_123, &[0x8a, 0x01, 0x9a, 0xb6, 0x97, 0xe8, 0x7b]),
        ];
        for (v, want) in cases {
            let mut out = Vec::new();
            write_vlong(&mut out, v);
            assert_eq!(out, want, "{v}");
            assert_eq!(Reader(&out).vlong().unwrap(), v);
        }
        for v in [i64::MIN, i64::MAX, -1, 1 << 40, -(1 << 40)] {
            let mut out = Vec::new();
            write_vlong(&mut out, v);
            assert_eq!(Reader(&out).vlong().unwrap(), v, "{v}");
        }
    }

    #[test]
    fn an_identifier_goes_both_ways_and_bad_ones_are_refused() {
        let bytes = encode_identifier(&id()).unwrap();
        assert_eq!(&bytes[..7], b"\x00\x05alice");
        assert_eq!(decode_identifier(&bytes).unwrap(), id());
        for cut in 0..bytes.len() {
            assert!(decode_identifier(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_identifier(&longer).is_err());
        let mut v1 = bytes;
        v1[0] = 1;
        assert!(decode_identifier(&v1).is_err());
        let huge = DelegationTokenIdentifier {
            sequence_number: 1 << 31,
            ..id()
        };
        assert!(encode_identifier(&huge).is_err());
    }

    #[test]
    fn a_token_file_is_hadoops_writable_credentials() {
        let token = DelegationToken {
            identifier: id(),
            password: vec![1, 2, 3],
            service: "ns1".into(),
        };
        assert_eq!(token_service("127.0.0.1:8020"), "127.0.0.1:8020");
        let f = token_file(&[(&token, "ns-fed")]).unwrap();
        let ident = encode_identifier(&id()).unwrap();
        let mut want = b"HDTS\x00\x01\x0eha-hdfs:ns-fed".to_vec();
        want.push(ident.len() as u8);
        want.extend(&ident);
        want.extend(b"\x03\x01\x02\x03\x15HDFS_DELEGATION_TOKEN\x0eha-hdfs:ns-fed\x00");
        assert_eq!(f, want);
        // Two file systems: two entries, each under its service.
        let two = token_file(&[(&token, "ns-fed"), (&token, "127.0.0.1:8020")]).unwrap();
        assert_eq!(&two[..6], b"HDTS\x00\x02");
        let second = &two[want.len() - 1..two.len() - 1];
        assert!(second.starts_with(b"\x0e127.0.0.1:8020"), "{second:?}");
        assert!(second.ends_with(b"\x15HDFS_DELEGATION_TOKEN\x0e127.0.0.1:8020"));
        assert!(token_file(&[(&token, "ns1"), (&token, "ns1")]).is_err());
    }
}
