//! How a Hadoop call's identity maps onto raftfs's (client id, call id),
//! the key of the nameservice's retry table, and onto lease holders.
//!
//! Hadoop keys a call by its RPC client id (16 random bytes, per client
//! process in Java, per connection in hdfs-native) and a 32-bit call id
//! that a retry repeats; a file's lease belongs to the `clientName` the
//! write calls carry. raftfs has one client id per call, which is both
//! the retry key's first half and the lease holder. So:
//!
//! - calls that name a lease holder (create, append, addBlock, complete,
//!   abandonBlock, renewLease, recoverLease, ...) use that `clientName` as
//!   raftfs's client id; other calls use `hrpc-<hex of the RPC client id>`;
//! - raftfs's call id is the 32-bit fold of the RPC client id in the high
//!   half and Hadoop's call id in the low half, so two RPC clients that
//!   share a `clientName` (hdfs-native's connections to two members, each
//!   counting from 0) do not share retry records, while a Java client's
//!   retry after a failover (same client id and call id, new connection)
//!   finds its first answer.
//!
//! Caveat: two RPC client ids of one `clientName` whose folds collide
//! (odds 2^-32 per pair) could see each other's retry records for equal
//! call ids within the retry window.

/// raftfs's client id for a call without a lease holder.
pub fn anonymous_client_id(rpc_client_id: &[u8]) -> String {
    const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(5 + rpc_client_id.len() * 2);
    s.push_str("hrpc-");
    for b in rpc_client_id {
        s.push(char::from(HEX_DIGITS[usize::from(b >> 4)]));
        s.push(char::from(HEX_DIGITS[usize::from(b & 0xf)]));
    }
    s
}

/// raftfs's call id for Hadoop call `call_id` of RPC client `rpc_client_id`.
pub fn call_id(rpc_client_id: &[u8], call_id: i32) -> u64 {
    (u64::from(fold32(rpc_client_id)) << 32) | u64::from(call_id as u32)
}

/// FNV-1a of the bytes, 32 bits: stable across processes and versions.
fn fold32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_maps_to_the_same_ids_and_other_clients_do_not() {
        let a = [7u8; 16];
        let b = [8u8; 16];
        assert_eq!(call_id(&a, 5), call_id(&a, 5));
        assert_ne!(call_id(&a, 5), call_id(&b, 5));
        assert_ne!(call_id(&a, 5), call_id(&a, 6));
        assert_eq!(call_id(&a, 5) & 0xffff_ffff, 5);
        assert_eq!(anonymous_client_id(&[0xab, 0x01]), "hrpc-ab01");
    }
}
