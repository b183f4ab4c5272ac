//! `raftfs bench webhdfs-open`: WebHDFS OPEN of one large file against the
//! SDK reading it through the DataNode (not short-circuit), rounds
//! interleaved so the machine's noise falls on both alike.
//!
//! One member and one DataNode (replication 1), both TLS. The WebHDFS side
//! is what a client library does: GET on the member's HTTPS port, follow
//! its 307 to the DataNode's, and read the body to its end (HTTP/1.1, TLS
//! trusting the cluster CA); the redirect's time is counted. The SDK side
//! reads the file sequentially with short-circuit reads off. The issue's
//! figure: OPEN of a 1 GiB file at least 0.5x the SDK's rate.
//!
//! Caveat: the DataNode serves OPEN by reading through its own SDK client
//! (a gRPC read from itself), so WebHDFS moves every byte twice on this
//! one machine; with two cores the two compete for CPU.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use raftfs_client::{ClientOptions, FileSystem, Identity};
use rustls_pki_types::ServerName;

use crate::federation::median;
use crate::localns::LocalNameservice;
use crate::ports::free_port;

/// The figure the issue sets: OPEN keeps this share of the SDK's read rate.
const TARGET_WEB_OVER_SDK: f64 = 0.5;
const SUPERUSER: &str = "hdfs";
/// Bytes per write while the file is made.
const IO_BYTES: usize = 1 << 20;
const BLOCK_BYTES: u64 = 128 << 20;
const PATH: &str = "/bench/large";

#[derive(Args, Debug, Clone)]
pub struct WebHdfsOpenArgs {
    /// Size of the file read, MiB.
    #[arg(long = "file-mib", default_value_t = 1024)]
    pub file_mib: u64,
    /// Rounds of each (the medians are over these).
    #[arg(long, default_value_t = 5)]
    pub runs: usize,
}

/// The DataNode process, killed on drop.
struct DatanodeChild(Child);

impl Drop for DatanodeChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// HTTPS/1.1 GETs trusting the cluster CA.
struct WebClient {
    tls: tokio_rustls::TlsConnector,
}

impl WebClient {
    fn new(ca_file: &Path) -> anyhow::Result<WebClient> {
        Ok(WebClient {
            tls: crate::webhdfs::https_connector(ca_file)?,
        })
    }

    /// GET `https://{addr}{path_and_query}`, the server proving `name`.
    async fn get(
        &self,
        addr: &str,
        name: &'static str,
        path_and_query: &str,
    ) -> anyhow::Result<hyper::Response<hyper::body::Incoming>> {
        let tcp = tokio::net::TcpStream::connect(addr).await?;
        tcp.set_nodelay(true)?;
        let tls = self.tls.connect(ServerName::try_from(name)?, tcp).await?;
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls)).await?;
        tokio::spawn(conn);
        let req = hyper::Request::get(path_and_query)
            .header(hyper::header::HOST, addr)
            .body(Empty::<Bytes>::new())?;
        Ok(send.send_request(req).await?)
    }
}

/// OPEN of the whole file through the member at `member_http`; seconds.
async fn web_open(web: &WebClient, member_http: &str, size: u64) -> anyhow::Result<f64> {
    let start = Instant::now();
    let first = web
        .get(
            member_http,
            "member.raftfs",
            &format!("/webhdfs/v1{PATH}?op=OPEN&user.name={SUPERUSER}"),
        )
        .await?;
    if first.status() != hyper::StatusCode::TEMPORARY_REDIRECT {
        let status = first.status();
        let body = first.into_body().collect().await?.to_bytes();
        bail!("OPEN: {status} {}", String::from_utf8_lossy(&body));
    }
    let location = first
        .headers()
        .get(hyper::header::LOCATION)
        .context("a redirect without a Location")?
        .to_str()?
        .to_string();
    let rest = location.strip_prefix("https://").context("an https:// Location")?;
    let (dn, path_and_query) = rest.split_at(rest.find('/').context("a Location with a path")?);
    let resp = web.get(dn, "datanode.raftfs", path_and_query).await?;
    if resp.status() != hyper::StatusCode::OK {
        bail!("OPEN at the DataNode: {}", resp.status());
    }
    let mut body = resp.into_body();
    let mut got = 0u64;
    while let Some(frame) = body.frame().await {
        if let Some(d) = frame?.data_ref() {
            got += d.len() as u64;
        }
    }
    if got != size {
        bail!("OPEN sent {got} of {size} bytes");
    }
    Ok(start.elapsed().as_secs_f64())
}

/// The SDK's sequential read of the whole file, none of it short-circuit; seconds.
async fn sdk_read(fs: &FileSystem, size: u64) -> anyhow::Result<f64> {
    let (secs, got, local) = crate::datapath::timed_get(fs, PATH).await?;
    if got != size || local != 0 {
        bail!("the SDK read {got} of {size} bytes, {local} short-circuit");
    }
    Ok(secs)
}

fn mibs(bytes: u64, secs: f64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0) / secs.max(1e-9)
}

pub async fn run(a: WebHdfsOpenArgs) -> anyhow::Result<()> {
    if a.runs == 0 || a.file_mib == 0 {
        bail!("--runs and --file-mib must be positive");
    }
    let size = a.file_mib << 20;
    let http = format!("127.0.0.1:{}", free_port()?);
    let mut ns = LocalNameservice::format(
        1,
        "rocksdb",
        &format!("--http-addr {http} --audit-log off --safemode-extension-ms 0"),
        SUPERUSER,
    )?;
    ns.start_all()?;
    ns.settled_leader().await?;
    let dn_dir = ns.root().join("dn1");
    let dn_http = format!("127.0.0.1:{}", free_port()?);
    let mut args: Vec<String> = vec![
        "datanode".into(),
        "--dir".into(),
        dn_dir.display().to_string(),
        "--listen".into(),
        format!("127.0.0.1:{}", free_port()?),
        "--http-addr".into(),
        dn_http.clone(),
        "--nameservice".into(),
        ns.fs_uri(),
        "--heartbeat-ms".into(),
        "500".into(),
    ];
    args.extend(ns.datanode_tls_args("dn1", &ns.root().join("dn1-tls"))?);
    let exe = std::env::current_exe().context("find the raftfs binary")?;
    let _dn = DatanodeChild(crate::datapath::spawn(&exe, &args, &ns.root().join("dn1.log"))?);
    let opts = ClientOptions {
        short_circuit: false,
        ..ns.client_options()
    };
    let fs = FileSystem::connect(&ns.fs_uri(), Identity::new(SUPERUSER, &[]), opts)?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(raftfs_proto::AdminResult::Datanodes(d)) = fs.admin(raftfs_proto::AdminOp::DatanodeReport).await {
            if d.iter().any(|n| n.live && !n.http_addr.is_empty()) {
                break;
            }
        }
        if Instant::now() > deadline {
            bail!("the DataNode did not register; see {}", ns.root().display());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let data: Vec<u8> = (0..IO_BYTES).map(|i| (i * 7 + i / 4096) as u8).collect();
    let mut w = fs.create_file_opt(PATH, true, None, 1, BLOCK_BYTES, true).await?;
    let mut left = size;
    while left > 0 {
        let n = left.min(IO_BYTES as u64) as usize;
        w.write(&data[..n]).await?;
        left -= n as u64;
    }
    w.close().await?;
    let web = WebClient::new(&ns.ca_dir().join(raftfs_trust::CA_CERT_FILE))?;
    println!(
        "webhdfs-open bench: a {} MiB file, 1 member, 1 DataNode (replication 1, TLS), {} rounds",
        a.file_mib, a.runs
    );
    let (mut sdk, mut open, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for r in 0..a.runs {
        // Alternate which goes first, so neither always runs on a warmer machine.
        let (s, w) = if r % 2 == 0 {
            let s = sdk_read(&fs, size).await?;
            (s, web_open(&web, &http, size).await?)
        } else {
            let w = web_open(&web, &http, size).await?;
            (sdk_read(&fs, size).await?, w)
        };
        let (s, w) = (mibs(size, s), mibs(size, w));
        println!(
            "round {}: SDK read {s:.0} MiB/s, WebHDFS OPEN {w:.0} MiB/s ({:.2}x)",
            r + 1,
            w / s
        );
        sdk.push(s);
        open.push(w);
        ratios.push(w / s);
    }
    let ratio = median(&mut ratios);
    let met = ratio >= TARGET_WEB_OVER_SDK;
    println!("medians over {} rounds:", a.runs);
    println!(
        "  read of {} MiB: SDK (no short-circuit) {:.0} MiB/s, WebHDFS OPEN {:.0} MiB/s; median of the rounds' \
         ratios {ratio:.2}x (target >= {TARGET_WEB_OVER_SDK}: {})",
        a.file_mib,
        median(&mut sdk),
        median(&mut open),
        if met { "met" } else { "NOT met" }
    );
    Ok(())
}
