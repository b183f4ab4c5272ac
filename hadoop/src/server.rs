//! The Hadoop IPC server: one task per connection, calls run
//! concurrently within a connection, answers written in completion order
//! (Hadoop's clients match answers to calls by call id). What it serves
//! is an [`IpcService`]: ClientNamenodeProtocol on members and routers
//! (on a port of their own, [`serve`]), ClientDatanodeProtocol on
//! DataNodes (on their data port, whose connections that open with
//! `hrpc` go to [`serve_connection`]).
//!
//! A connection, as Hadoop's `Server` reads it:
//!
//! ```text
//! "hrpc" version(9) service-class auth-protocol(0 NONE | -33 SASL)
//! [SASL NEGOTIATE, call id -33]        -> SUCCESS (SIMPLE needs no more)
//!                                      -> NEGOTIATE TOKEN, INITIATE -> SUCCESS (strong)
//! connection context, call id -3       (effective user, protocol)
//! { frame: u32 length | RpcRequestHeader | RequestHeader | request }*
//!                                      -> { u32 length | RpcResponseHeader | answer }
//! ```
//!
//! Every piece after the preamble is varint-length-delimited inside a
//! frame of at most [`MAX_IPC_FRAME_BYTES`]. A fatal answer (wrong
//! version, a bad header, an undecodable request, a refused user) is
//! written and the connection closed; an error answer (an exception, an
//! unknown method) leaves it open.
//!
//! Authentication: where the service takes SIMPLE the connection
//! context's user is trusted, as HDFS's SIMPLE authentication trusts it
//! (for trusted networks); a real user other than the effective one (a
//! proxy user) is refused, as HDFS refuses one no `hadoop.proxyuser.*`
//! rule allows. Where it requires a token (`--auth strong` for
//! ClientNamenodeProtocol, block tokens on for ClientDatanodeProtocol) a
//! connection authenticates with one (SASL TOKEN, DIGEST-MD5:
//! [`crate::sasl`]) and acts for its owner; a SIMPLE client is refused
//! with `AccessControlException` ("SIMPLE authentication is not
//! enabled"), as a secure HDFS refuses one. KERBEROS is not served. A
//! connection whose context names another protocol than the service's is
//! refused (`RpcNoSuchProtocolException`).
//!
//! Caveat: Hadoop IPC is plaintext TCP, and TOKEN authentication here
//! offers `qop=auth` only (HDFS can add integrity or privacy with SASL
//! QOP, `hadoop.rpc.protection`); it carries no data blocks.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use futures::future::BoxFuture;
use prost::Message;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::OwnedReadHalf;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Semaphore};

use crate::ipc_service::{AuthenticatedToken, Call, IpcCaller, IpcService, Refusal};
use crate::remote_error::RemoteError;
use crate::sasl::SaslExchange;
use crate::wire::rpc::*;

/// Bytes a connection asks the socket for at a time: frames are parsed
/// out of one buffer and handed on as slices of it (no copy and no
/// allocation per frame).
pub const READ_CHUNK_BYTES: usize = 64 * 1024;
/// The IPC version Hadoop 2 and 3 speak.
pub const HADOOP_IPC_VERSION: u8 = 9;
/// The largest frame read (Hadoop's `ipc.maximum.data.length` is 128 MiB;
/// ClientProtocol's requests are a few KiB).
pub const MAX_IPC_FRAME_BYTES: usize = 64 * 1024 * 1024;
/// Connections served at once; more wait in the listen queue.
pub const MAX_IPC_CONNECTIONS: usize = 4096;
/// Calls of one connection running at once; its next frame waits.
pub const MAX_CALLS_IN_FLIGHT_PER_CONNECTION: usize = 256;
/// Answers of one connection waiting to be written.
pub const MAX_QUEUED_ANSWERS_PER_CONNECTION: usize = 256;
/// Answers waiting are gathered into one write up to this many bytes.
pub const MAX_WRITE_BATCH_BYTES: usize = 256 * 1024;
/// The preamble and connection context must arrive within this.
pub const HANDSHAKE_TIMEOUT_MS: u64 = 10_000;
/// A connection that sends nothing (not even a ping, which Hadoop's
/// clients send every minute) for this long is closed.
pub const IDLE_CONNECTION_TIMEOUT_MS: u64 = 300_000;

/// `AuthProtocol` bytes of the preamble.
const AUTH_PROTOCOL_NONE: u8 = 0;
const AUTH_PROTOCOL_SASL: u8 = 0xdf; // -33

const VERSION_MISMATCH_CLASS: &str = "org.apache.hadoop.ipc.RPC$VersionMismatch";
const ACCESS_CONTROL_CLASS: &str = "org.apache.hadoop.security.AccessControlException";
const AUTHORIZATION_CLASS: &str = "org.apache.hadoop.security.authorize.AuthorizationException";
const IPC_EXCEPTION_CLASS: &str = "org.apache.hadoop.ipc.IpcException";
const RPC_SERVER_EXCEPTION_CLASS: &str = "org.apache.hadoop.ipc.RpcServerException";

/// Serve `service` over Hadoop IPC on `listener` until `shutdown` completes.
#[inline(never)]
pub fn serve(
    listener: TcpListener,
    service: Arc<dyn IpcService>,
    shutdown: BoxFuture<'static, ()>,
) -> BoxFuture<'static, ()> {
    Box::pin(async move {
        let slots = Arc::new(Semaphore::new(MAX_IPC_CONNECTIONS));
        tokio::pin!(shutdown);
        loop {
            let permit = tokio::select! {
                _ = &mut shutdown => return,
                p = slots.clone().acquire_owned() => p.expect("the semaphore is never closed"),
            };
            let accepted = tokio::select! {
                _ = &mut shutdown => return,
                a = listener.accept() => a,
            };
            match accepted {
                Ok((stream, peer)) => {
                    let service = service.clone();
                    tokio::spawn(async move {
                        let _permit = permit;
                        if let Err(why) = serve_connection(stream, peer, service).await {
                            tracing::debug!(%peer, %why, "Hadoop IPC connection closed");
                        }
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Hadoop IPC accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    })
}

/// Why a connection ended (for the debug log).
type Closed = String;

fn response_header(call_id: i32, rpc_client_id: &Bytes, status: i32) -> RpcResponseHeader {
    RpcResponseHeader {
        call_id: call_id as u32,
        status,
        server_ipc_version_num: Some(u32::from(HADOOP_IPC_VERSION)),
        client_id: Some(rpc_client_id.clone()),
        ..Default::default()
    }
}

/// `h` and then (if any) a varint-delimited `answer`, framed, in one
/// allocation.
fn header_frame(h: &RpcResponseHeader, answer: Option<&[u8]>) -> Vec<u8> {
    let header_len = h.encoded_len();
    let answer_len = answer.map_or(0, |a| prost::length_delimiter_len(a.len()) + a.len());
    let len = prost::length_delimiter_len(header_len) + header_len + answer_len;
    let mut out = Vec::with_capacity(4 + len);
    out.extend_from_slice(&(len as u32).to_be_bytes());
    h.encode_length_delimited(&mut out)
        .expect("a Vec grows to take what is encoded");
    if let Some(a) = answer {
        prost::encoding::encode_varint(a.len() as u64, &mut out);
        out.extend_from_slice(a);
    }
    debug_assert_eq!(out.len(), 4 + len, "the frame's length is what was written");
    out
}

/// A call's answer: its header carries the state the member has applied
/// (`stateId`), which observer-read clients keep and send back.
fn success_frame(call_id: i32, rpc_client_id: &Bytes, state_id: Option<u64>, answer: &[u8]) -> Vec<u8> {
    let mut h = response_header(call_id, rpc_client_id, STATUS_SUCCESS);
    h.state_id = state_id.map(|s| s as i64);
    header_frame(&h, Some(answer))
}

fn error_frame(call_id: i32, rpc_client_id: &Bytes, status: i32, class: &str, message: &str, code: i32) -> Vec<u8> {
    let mut h = response_header(call_id, rpc_client_id, status);
    h.exception_class_name = Some(class.to_string());
    h.error_msg = Some(message.to_string());
    h.error_detail = Some(code);
    header_frame(&h, None)
}

/// Write a fatal answer and end the connection with `why`.
async fn fatal(stream: &mut TcpStream, call_id: i32, code: i32, class: &str, message: String) -> Result<(), Closed> {
    let f = error_frame(call_id, &Bytes::new(), STATUS_FATAL, class, &message, code);
    let _ = stream.write_all(&f).await;
    let _ = stream.shutdown().await;
    Err(message)
}

/// Read one frame's bytes (`None` at a clean end of stream) from `r`
/// through `inbuf`, which keeps what arrived past the frame for the next.
async fn read_frame(r: &mut OwnedReadHalf, inbuf: &mut BytesMut, idle: Duration) -> Result<Option<Bytes>, FrameError> {
    while inbuf.len() < 4 {
        if !fill(r, inbuf, 4, idle).await? {
            return if inbuf.is_empty() {
                Ok(None)
            } else {
                Err(FrameError::Io("a frame's length cut off".into()))
            };
        }
    }
    let len = u32::from_be_bytes([inbuf[0], inbuf[1], inbuf[2], inbuf[3]]) as usize;
    if len > MAX_IPC_FRAME_BYTES {
        return Err(FrameError::TooLong(len));
    }
    inbuf.advance(4);
    while inbuf.len() < len {
        if !fill(r, inbuf, len, idle).await? {
            return Err(FrameError::Io("a frame cut off".into()));
        }
    }
    Ok(Some(inbuf.split_to(len).freeze()))
}

/// Read what the socket has into `inbuf`, with room for at least `want`
/// bytes in all; `false` at the end of the stream.
async fn fill(r: &mut OwnedReadHalf, inbuf: &mut BytesMut, want: usize, idle: Duration) -> Result<bool, FrameError> {
    let room = want.saturating_sub(inbuf.len()).max(READ_CHUNK_BYTES);
    if inbuf.capacity() - inbuf.len() < room / 2 {
        inbuf.reserve(room);
    }
    match tokio::time::timeout(idle, r.read_buf(inbuf)).await {
        Err(_) => Err(FrameError::Idle),
        Ok(Err(e)) => Err(FrameError::Io(e.to_string())),
        Ok(Ok(n)) => Ok(n > 0),
    }
}

enum FrameError {
    Idle,
    TooLong(usize),
    Io(String),
}

/// A frame's header and the bytes after it.
fn split_header(mut buf: Bytes) -> Result<(RpcRequestHeader, Bytes), String> {
    let header = RpcRequestHeader::decode_length_delimited(&mut buf).map_err(|e| format!("RpcRequestHeader: {e}"))?;
    Ok((header, buf))
}

/// The next length-delimited piece of `buf`.
fn delimited(buf: &mut Bytes) -> Result<Bytes, String> {
    let len = prost::encoding::decode_length_delimiter(&mut *buf).map_err(|e| e.to_string())?;
    if len > buf.remaining() {
        return Err(format!("a piece of {len} bytes in {} left", buf.remaining()));
    }
    Ok(buf.split_to(len))
}

/// Serve `service` on one accepted connection from `peer`, from its
/// preamble to its end; why it closed, if not cleanly.
pub async fn serve_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    service: Arc<dyn IpcService>,
) -> Result<(), Closed> {
    let _ = stream.set_nodelay(true);
    let handshake = Duration::from_millis(HANDSHAKE_TIMEOUT_MS);
    let mut preamble = [0u8; 7];
    match tokio::time::timeout(handshake, stream.read_exact(&mut preamble)).await {
        Err(_) => return Err("no preamble in time".into()),
        Ok(Err(e)) => return Err(format!("reading the preamble: {e}")),
        Ok(Ok(_)) => {}
    }
    if &preamble[..4] != b"hrpc" {
        if &preamble[..4] == b"GET " || &preamble[..4] == b"POST" {
            let text = "It looks like you are making an HTTP request to a Hadoop IPC port. This is not the correct \
                        port for the web interface on this daemon.\r\n";
            let answer = format!(
                "HTTP/1.1 404 Not Found\r\nContent-type: text/plain\r\nContent-Length: {}\r\n\r\n{text}",
                text.len()
            );
            let _ = stream.write_all(answer.as_bytes()).await;
        }
        let _ = stream.shutdown().await;
        return Err("not a Hadoop IPC preamble".into());
    }
    if preamble[4] != HADOOP_IPC_VERSION {
        let msg = format!(
            "Server IPC version {HADOOP_IPC_VERSION} cannot communicate with client version {}",
            preamble[4]
        );
        return fatal(
            &mut stream,
            INVALID_CALL_ID,
            FATAL_VERSION_MISMATCH,
            VERSION_MISMATCH_CLASS,
            msg,
        )
        .await;
    }
    let sasl = match preamble[6] {
        AUTH_PROTOCOL_NONE => false,
        AUTH_PROTOCOL_SASL => true,
        other => {
            let msg = format!("Unknown auth protocol:{}", other as i8);
            return fatal(
                &mut stream,
                INVALID_CALL_ID,
                FATAL_UNAUTHORIZED,
                IPC_EXCEPTION_CLASS,
                msg,
            )
            .await;
        }
    };
    let strong = service.requires_token();
    if strong && !sasl {
        return fatal(
            &mut stream,
            INVALID_CALL_ID,
            FATAL_UNAUTHORIZED,
            ACCESS_CONTROL_CLASS,
            "SIMPLE authentication is not enabled.  Available:[TOKEN]".to_string(),
        )
        .await;
    }
    let exchange = sasl.then_some(SaslExchange::Negotiate { strong });

    let (read_half, mut write_half) = stream.into_split();
    let mut reader = read_half;
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(MAX_QUEUED_ANSWERS_PER_CONNECTION);
    let writer = tokio::spawn(async move {
        // Answers that finished while the last write was under way go out
        // in one write (one syscall for many small answers, as HTTP/2
        // batches the SDK's).
        let mut batch = Vec::new();
        while let Some(f) = rx.recv().await {
            batch.extend_from_slice(&f);
            while batch.len() < MAX_WRITE_BATCH_BYTES {
                match rx.try_recv() {
                    Ok(f) => batch.extend_from_slice(&f),
                    Err(_) => break,
                }
            }
            if write_half.write_all(&batch).await.is_err() {
                return;
            }
            batch.clear();
            batch.shrink_to(MAX_WRITE_BATCH_BYTES);
        }
        let _ = write_half.shutdown().await;
    });
    let result = calls(&mut reader, &tx, peer, service, exchange, strong).await;
    if let Err(Fatal {
        call_id,
        code,
        class,
        message,
    }) = &result
    {
        let _ = tx
            .send(error_frame(
                *call_id,
                &Bytes::new(),
                STATUS_FATAL,
                class,
                message,
                *code,
            ))
            .await;
    }
    drop(tx);
    let _ = writer.await;
    result.map_err(|f| f.message)
}

/// A fatal answer, after which the connection is closed.
struct Fatal {
    call_id: i32,
    code: i32,
    class: &'static str,
    message: String,
}

impl Fatal {
    fn new(call_id: i32, code: i32, class: &'static str, message: impl Into<String>) -> Fatal {
        Fatal {
            call_id,
            code,
            class,
            message: message.into(),
        }
    }
}

/// Read the SASL exchange, the connection context and then calls, until
/// the stream ends or something is fatal.
async fn calls(
    reader: &mut OwnedReadHalf,
    tx: &mpsc::Sender<Vec<u8>>,
    peer: SocketAddr,
    service: Arc<dyn IpcService>,
    mut exchange: Option<SaslExchange>,
    strong: bool,
) -> Result<(), Fatal> {
    let handshake = Duration::from_millis(HANDSHAKE_TIMEOUT_MS);
    let idle = Duration::from_millis(IDLE_CONNECTION_TIMEOUT_MS);
    let mut caller: Option<Arc<IpcCaller>> = None;
    let in_flight = Arc::new(Semaphore::new(MAX_CALLS_IN_FLIGHT_PER_CONNECTION));
    let mut inbuf = BytesMut::new();
    loop {
        let wait = if caller.is_some() { idle } else { handshake };
        let buf = match read_frame(reader, &mut inbuf, wait).await {
            Ok(Some(b)) => b,
            Ok(None) => return Ok(()),
            Err(FrameError::Idle) => return Ok(()),
            Err(FrameError::Io(e)) => return Err(Fatal::new(INVALID_CALL_ID, FATAL_INVALID_RPC_HEADER, IPC_EXCEPTION_CLASS, e)),
            Err(FrameError::TooLong(n)) => {
                return Err(Fatal::new(
                    INVALID_CALL_ID,
                    FATAL_INVALID_RPC_HEADER,
                    RPC_SERVER_EXCEPTION_CLASS,
                    format!("Requested data length {n} is longer than maximum configured RPC length {MAX_IPC_FRAME_BYTES}.  RPC came from {}", peer.ip()),
                ))
            }
        };
        let (header, mut rest) = split_header(buf)
            .map_err(|e| Fatal::new(INVALID_CALL_ID, FATAL_INVALID_RPC_HEADER, IPC_EXCEPTION_CLASS, e))?;
        let call_id = header.call_id;
        if header.rpc_kind != Some(RPC_KIND_PROTOCOL_BUFFER) {
            return Err(Fatal::new(
                call_id,
                FATAL_UNSUPPORTED_SERIALIZATION,
                IPC_EXCEPTION_CLASS,
                format!(
                    "Unsupported rpc kind {:?}: only RPC_PROTOCOL_BUFFER is served",
                    header.rpc_kind
                ),
            ));
        }
        if header.rpc_op == Some(RPC_OP_CLOSE_CONNECTION) {
            return Ok(());
        }
        match call_id {
            SASL_CALL_ID if exchange.as_ref().is_some_and(|x| !x.is_done()) => {
                let piece = delimited(&mut rest)
                    .map_err(|e| Fatal::new(call_id, FATAL_DESERIALIZING_REQUEST, IPC_EXCEPTION_CLASS, e))?;
                let m = RpcSasl::decode(piece).map_err(|e| {
                    Fatal::new(call_id, FATAL_DESERIALIZING_REQUEST, IPC_EXCEPTION_CLASS, e.to_string())
                })?;
                let at = exchange.take().expect("matched above");
                let step = at.step(&m, &*service).await.map_err(|why| {
                    tracing::warn!(%peer, %why, "Hadoop IPC authentication refused");
                    Fatal::new(call_id, FATAL_UNAUTHORIZED, ACCESS_CONTROL_CLASS, why)
                })?;
                exchange = Some(step.next);
                send(
                    tx,
                    success_frame(SASL_CALL_ID, &Bytes::new(), None, &step.answer.encode_to_vec()),
                )
                .await?;
            }
            CONNECTION_CONTEXT_CALL_ID if caller.is_none() => {
                let piece = delimited(&mut rest)
                    .map_err(|e| Fatal::new(call_id, FATAL_DESERIALIZING_REQUEST, IPC_EXCEPTION_CLASS, e))?;
                let ctx = IpcConnectionContext::decode(piece).map_err(|e| {
                    Fatal::new(call_id, FATAL_DESERIALIZING_REQUEST, IPC_EXCEPTION_CLASS, e.to_string())
                })?;
                let token = match &exchange {
                    Some(SaslExchange::Done { token }) => token.clone(),
                    _ => None,
                };
                if strong && token.is_none() {
                    return Err(Fatal::new(
                        call_id,
                        FATAL_UNAUTHORIZED,
                        ACCESS_CONTROL_CLASS,
                        "the connection context came before TOKEN authentication",
                    ));
                }
                caller = Some(Arc::new(authorize(&ctx, peer, token, service.protocol())?));
            }
            PING_CALL_ID => {}
            id if id >= 0 => {
                let Some(who) = caller.clone() else {
                    return Err(Fatal::new(
                        id,
                        FATAL_INVALID_RPC_HEADER,
                        IPC_EXCEPTION_CLASS,
                        "Connection context not established",
                    ));
                };
                let request_header = delimited(&mut rest)
                    .map_err(|e| e.to_string())
                    .and_then(|p| RequestHeader::decode(p).map_err(|e| e.to_string()))
                    .map_err(|e| {
                        Fatal::new(
                            id,
                            FATAL_DESERIALIZING_REQUEST,
                            IPC_EXCEPTION_CLASS,
                            format!("RequestHeader: {e}"),
                        )
                    })?;
                let request = delimited(&mut rest).map_err(|e| {
                    Fatal::new(
                        id,
                        FATAL_DESERIALIZING_REQUEST,
                        IPC_EXCEPTION_CLASS,
                        format!("request: {e}"),
                    )
                })?;
                let permit = in_flight.clone().acquire_owned().await.expect("never closed");
                let (service, tx) = (service.clone(), tx.clone());
                tokio::spawn(async move {
                    let _permit = permit;
                    let f = run_call(&*service, &who, &header, &request_header, &request).await;
                    let _ = tx.send(f).await;
                });
            }
            other => {
                return Err(Fatal::new(
                    other,
                    FATAL_INVALID_RPC_HEADER,
                    IPC_EXCEPTION_CLASS,
                    format!("Unexpected call id {other} at this point of the connection"),
                ))
            }
        }
    }
}

async fn send(tx: &mpsc::Sender<Vec<u8>>, f: Vec<u8>) -> Result<(), Fatal> {
    tx.send(f).await.map_err(|_| {
        Fatal::new(
            INVALID_CALL_ID,
            FATAL_INVALID_RPC_HEADER,
            IPC_EXCEPTION_CLASS,
            "the writer is gone",
        )
    })
}

/// Who the connection acts for: the owner of the token it authenticated
/// with (a context naming someone else is an impersonation, refused), or
/// else the context's effective user, trusted as SIMPLE authentication
/// trusts it. A context for another protocol than `protocol` is refused.
fn authorize(
    ctx: &IpcConnectionContext,
    peer: SocketAddr,
    token: Option<(String, AuthenticatedToken)>,
    protocol: &str,
) -> Result<IpcCaller, Fatal> {
    let id = CONNECTION_CONTEXT_CALL_ID;
    if let Some(p) = ctx.protocol.as_deref() {
        if p != protocol {
            let e = RemoteError::no_such_protocol(p);
            return Err(Fatal::new(id, FATAL_UNAUTHORIZED, e.class, e.message));
        }
    }
    let info = ctx.user_info.clone().unwrap_or_default();
    let named = info.effective_user.filter(|u| !u.is_empty()).or(info.real_user.clone());
    let impersonates = |real: &str, user: &str| {
        Fatal::new(
            id,
            FATAL_UNAUTHORIZED,
            AUTHORIZATION_CLASS,
            format!("User: {real} is not allowed to impersonate {user}"),
        )
    };
    if let Some((owner, token)) = token {
        return match named.filter(|u| !u.is_empty()) {
            Some(user) if user != owner => Err(impersonates(&owner, &user)),
            _ => Ok(IpcCaller {
                user: owner,
                ip: peer.ip().to_string(),
                token: Some(token),
            }),
        };
    }
    let Some(user) = named.filter(|u| !u.is_empty()) else {
        return Err(Fatal::new(
            id,
            FATAL_UNAUTHORIZED,
            ACCESS_CONTROL_CLASS,
            "the connection context names no user",
        ));
    };
    if let Some(real) = info.real_user.filter(|r| !r.is_empty() && *r != user) {
        return Err(impersonates(&real, &user));
    }
    Ok(IpcCaller {
        user,
        ip: peer.ip().to_string(),
        token: None,
    })
}

/// One call's answer frame.
async fn run_call(
    service: &dyn IpcService,
    who: &IpcCaller,
    header: &RpcRequestHeader,
    request_header: &RequestHeader,
    request: &[u8],
) -> Vec<u8> {
    let (id, client) = (header.call_id, &header.client_id);
    if request_header.declaring_class_protocol_name != service.protocol().as_bytes() {
        let named = String::from_utf8_lossy(&request_header.declaring_class_protocol_name);
        let e = RemoteError::no_such_protocol(&named);
        return error_frame(id, client, STATUS_ERROR, e.class, &e.message, e.code);
    }
    let Ok(method) = std::str::from_utf8(&request_header.method_name) else {
        let message = "the method name is not UTF-8";
        return error_frame(
            id,
            client,
            STATUS_ERROR,
            RPC_SERVER_EXCEPTION_CLASS,
            message,
            ERROR_RPC_SERVER,
        );
    };
    let call = Call {
        caller: who,
        rpc_client_id: client,
        call_id: id,
        seen_state_id: header.state_id.map(|s| s.max(0) as u64),
    };
    match service.answer(&call, method, request).await {
        Ok(answer) => success_frame(id, client, service.state_id(), &answer),
        Err(Refusal::Remote(e)) => error_frame(id, client, STATUS_ERROR, e.class, &e.message, e.code),
        Err(Refusal::Undecodable(e)) => error_frame(
            id,
            client,
            STATUS_ERROR,
            RPC_SERVER_EXCEPTION_CLASS,
            &format!("{method}: the request does not decode: {e}"),
            ERROR_RPC_SERVER,
        ),
    }
}
