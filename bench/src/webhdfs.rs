//! `raftfs bench webhdfs`: WebHDFS GETFILESTATUS against the SDK's
//! getFileInfo, on one member serving both (its gRPC port and its HTTPS
//! port), rounds interleaved so the machine's noise falls on both alike.
//!
//! The WebHDFS side is what a client library does: one kept-alive HTTPS
//! connection (HTTP/1.1, TLS trusting the cluster CA) per concurrent
//! caller, a GET per file, the JSON body read whole. The figure:
//! WebHDFS at least 0.5x the SDK's rate at 64 concurrent callers.
//!
//! Caveat: one member, so the SDK's calls and WebHDFS's both reach the
//! leader (a follower answers WebHDFS with StandbyException).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use raftfs_client::{FileSystem, Identity};
use raftfs_proto::Op;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

use crate::federation::{creates, median, throughput};
use crate::localns::LocalNameservice;
use crate::ports::free_port;

/// The figure the issue sets: WebHDFS keeps this share of the SDK's rate.
const TARGET_WEB_OVER_SDK: f64 = 0.5;
const SUPERUSER: &str = "hdfs";
/// The name a member's certificate proves (what a client verifies).
const MEMBER_SERVER_NAME: &str = "member.raftfs";

#[derive(Args, Debug, Clone)]
pub struct WebHdfsArgs {
    /// Files stat'ed per round.
    #[arg(long, default_value_t = 20_000)]
    pub files: usize,
    /// Concurrent callers (each WebHDFS caller has its own connection).
    #[arg(long, default_value_t = 64)]
    pub clients: usize,
    /// Rounds of each (the medians are over these).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
    /// memory or rocksdb.
    #[arg(long, default_value = "rocksdb")]
    pub store: String,
}

/// What a WebHDFS caller needs: the member's HTTPS address and how to trust it.
struct WebTarget {
    addr: String,
    tls: tokio_rustls::TlsConnector,
}

/// A TLS connector for HTTPS/1.1 that trusts the CA in `ca_file` (as a
/// WebHDFS client library given the cluster CA).
pub(crate) fn https_connector(ca_file: &std::path::Path) -> anyhow::Result<tokio_rustls::TlsConnector> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_file_iter(ca_file).context("read the CA certificate")? {
        roots.add(c?)?;
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(cfg)))
}

impl WebTarget {
    fn new(addr: String, ca_file: &std::path::Path) -> anyhow::Result<WebTarget> {
        Ok(WebTarget {
            addr,
            tls: https_connector(ca_file)?,
        })
    }

    /// One caller's connection.
    async fn connect(&self) -> anyhow::Result<hyper::client::conn::http1::SendRequest<Empty<Bytes>>> {
        let tcp = tokio::net::TcpStream::connect(&self.addr).await?;
        tcp.set_nodelay(true)?;
        let tls = self.tls.connect(ServerName::try_from(MEMBER_SERVER_NAME)?, tcp).await?;
        let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(conn);
        Ok(send)
    }
}

/// GETFILESTATUS of every path in `paths` with `clients` callers; ops/s.
async fn web_throughput(target: &Arc<WebTarget>, paths: Vec<String>, clients: usize) -> anyhow::Result<f64> {
    let paths = Arc::new(paths);
    let next = Arc::new(AtomicUsize::new(0));
    let mut conns = Vec::new();
    for _ in 0..clients.max(1) {
        conns.push(target.connect().await?);
    }
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for mut send in conns {
        let (paths, next, host) = (paths.clone(), next.clone(), target.addr.clone());
        set.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(p) = paths.get(i) else {
                    return Ok::<(), anyhow::Error>(());
                };
                let req = hyper::Request::get(format!("/webhdfs/v1{p}?op=GETFILESTATUS&user.name={SUPERUSER}"))
                    .header(hyper::header::HOST, &host)
                    .body(Empty::<Bytes>::new())?;
                let resp = send.send_request(req).await?;
                let status = resp.status();
                let body = resp.into_body().collect().await?.to_bytes();
                if status != hyper::StatusCode::OK || !body.starts_with(b"{\"FileStatus\"") {
                    bail!("GETFILESTATUS {p}: {status} {}", String::from_utf8_lossy(&body));
                }
            }
        });
    }
    while let Some(r) = set.join_next().await {
        r??;
    }
    Ok(paths.len() as f64 / started.elapsed().as_secs_f64())
}

pub async fn run(a: WebHdfsArgs) -> anyhow::Result<()> {
    if a.runs == 0 || a.files == 0 || a.clients == 0 {
        bail!("--runs, --files and --clients must be positive");
    }
    let http = format!("127.0.0.1:{}", free_port()?);
    let mut ns = LocalNameservice::format(1, &a.store, &format!("--http-addr {http} --audit-log off"), SUPERUSER)?;
    ns.start_all()?;
    ns.settled_leader().await?;
    let fs = FileSystem::connect(&ns.fs_uri(), Identity::new(SUPERUSER, &[]), ns.client_options())?;
    throughput(&fs, creates("/bench", a.files), a.clients).await?;
    let target = Arc::new(WebTarget::new(http, &ns.ca_dir().join(raftfs_trust::CA_CERT_FILE))?);
    let paths: Vec<String> = (0..a.files).map(|i| format!("/bench/f{i}")).collect();
    let stats = || -> Vec<Op> { paths.iter().map(|p| Op::GetFileInfo { path: p.clone() }).collect() };
    println!(
        "webhdfs bench: getFileInfo, 1 member ({} store, TLS), {} callers, {} files per round, {} rounds",
        a.store, a.clients, a.files, a.runs
    );
    let (mut sdk, mut web) = (Vec::new(), Vec::new());
    for r in 0..a.runs {
        // Alternate which goes first, so neither always runs on a warmer machine.
        let (s, w) = if r % 2 == 0 {
            let s = throughput(&fs, stats(), a.clients).await?;
            (s, web_throughput(&target, paths.clone(), a.clients).await?)
        } else {
            let w = web_throughput(&target, paths.clone(), a.clients).await?;
            (throughput(&fs, stats(), a.clients).await?, w)
        };
        println!(
            "round {}: SDK getFileInfo {s:.0}/s, WebHDFS GETFILESTATUS {w:.0}/s ({:.2}x)",
            r + 1,
            w / s
        );
        sdk.push(s);
        web.push(w);
    }
    // Each round's ratio compares the two side by side; their median is
    // what a drifting machine (the rates of later rounds can differ by a
    // third) moves least.
    let mut ratios: Vec<f64> = web.iter().zip(&sdk).map(|(w, s)| w / s).collect();
    let ratio = median(&mut ratios);
    let (s, w) = (median(&mut sdk), median(&mut web));
    let met = ratio >= TARGET_WEB_OVER_SDK;
    println!("medians over {} rounds:", a.runs);
    println!(
        "  getFileInfo: SDK {s:.0} ops/s, WebHDFS {w:.0} ops/s; median of the rounds' ratios {ratio:.2}x \
         (target >= {TARGET_WEB_OVER_SDK}: {})",
        if met { "met" } else { "NOT met" }
    );
    Ok(())
}
