//! The routers of `raftfs dev`: formatted in `DIR/routers/r<r>` on first
//! use (router r listens on port-base + 90 + r), and, once they serve, the
//! federation set up for a first look: every nameservice registered and,
//! on a new mount table, the tour's mount points with their directories:
//!
//! * `/user` → ns1:/user (with the dev user's home), `/tmp` → ns1:/tmp (1777);
//! * `/data` → ns2:/data (ns1 when there is one nameservice);
//! * `/shared` → every nameservice's `/shared`, HASH_ALL (with two or more).
//!
//! A restart finds the table as it was left; nameservices added by a larger
//! `--nameservices` are registered (not mounted).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use raftfs_client::{ClientTls, FileSystem, Identity};
use raftfs_proto::Permission;
use raftfs_router::admin_client::RouterAdminClient;
use raftfs_router::federation::{FederationChange, NameserviceRecord};
use raftfs_router::mount_table::{Destination, MountEntry, MountQuota, MountTableChange, Order};

/// Port offset of the routers from --port-base (members use 1..=89, DataNodes 101..).
pub const ROUTER_PORT_OFFSET: u64 = 90;
/// Most routers `raftfs dev` starts.
pub const MAX_DEV_ROUTERS: u64 = 9;
/// How long to wait for the routers to serve.
const ROUTERS_READY_TIMEOUT_MS: u64 = 60_000;

pub fn router_dir(root: &Path, r: u64) -> PathBuf {
    root.join("routers").join(format!("r{r}"))
}

pub fn router_pid_file(root: &Path, r: u64) -> PathBuf {
    root.join("routers").join(format!("r{r}.pid"))
}

pub fn router_log(root: &Path, r: u64) -> PathBuf {
    root.join("routers").join(format!("r{r}.log"))
}

pub fn router_addr(port_base: u16, r: u64) -> String {
    format!("127.0.0.1:{}", port_base as u64 + ROUTER_PORT_OFFSET + r)
}

/// Format routers `1..=n` not formatted yet (`raftfs router format`), of
/// `cluster_id`, with certificates from the CA in `ca_dir` (or none).
pub fn format_routers(
    exe: &Path,
    root: &Path,
    port_base: u16,
    n: u64,
    cluster_id: &str,
    ca_dir: Option<&Path>,
) -> anyhow::Result<()> {
    let spec: Vec<String> = (1..=n).map(|r| format!("{r}={}", router_addr(port_base, r))).collect();
    for r in 1..=n {
        let dir = router_dir(root, r);
        match raftfs_raft::layout::read(&dir) {
            Ok(v) if v.members.len() as u64 != n => bail!(
                "{} holds router {r} of a group of {}; start with the same --routers, or use another --dir",
                root.display(),
                v.members.len()
            ),
            Ok(_) => continue,
            Err(raftfs_raft::layout::LayoutError::NotFormatted { .. }) => {}
            Err(e) => bail!("{e}"),
        }
        let mut cmd = std::process::Command::new(exe);
        cmd.args(["router", "format", "--id", &r.to_string(), "--routers", &spec.join(",")])
            .args(["--cluster-id", cluster_id])
            .arg("--dir")
            .arg(&dir);
        match ca_dir {
            Some(ca) => cmd.arg("--ca-dir").arg(ca),
            None => cmd.arg("--insecure"),
        };
        let out = cmd.output().context("run raftfs router format")?;
        if !out.status.success() {
            bail!("format router {r}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok(())
}

fn mount(source: &str, dests: &[(String, &str)], order: Order, owner: &str) -> FederationChange {
    FederationChange::Mount(MountTableChange::Add(MountEntry {
        source: source.into(),
        destinations: dests
            .iter()
            .map(|(ns, path)| Destination {
                nameservice: ns.clone(),
                path: path.to_string(),
            })
            .collect(),
        order,
        read_only: false,
        owner: owner.into(),
        group: "supergroup".into(),
        mode: if source == "/tmp" { 0o1777 } else { 0o755 },
        quota: MountQuota::default(),
    }))
}

/// Wait until the routers serve, register every nameservice they lack
/// (`ns_uris[k-1]` is nameservice `ns<k>`) and, on an empty mount table,
/// mount the tour. Returns lines describing the mount table.
pub async fn set_up_federation(routers_uri: &str, tls: &ClientTls, ns_uris: &[String]) -> anyhow::Result<Vec<String>> {
    let me = Identity::resolve(None);
    let opts = raftfs_client::ClientOptions {
        tls: tls.clone(),
        ..Default::default()
    };
    let via = FileSystem::connect(routers_uri, me.clone(), opts.clone())?;
    let deadline = Instant::now() + Duration::from_millis(ROUTERS_READY_TIMEOUT_MS);
    while let Err(e) = via.get_file_info("/").await {
        if Instant::now() > deadline {
            bail!("the routers do not serve (see DIR/routers/r*.log): {e}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let addrs = raftfs_client::uri::parse_fs(routers_uri)?;
    let admin = RouterAdminClient::new(addrs, tls.dialer()?)?;
    let fed = admin.federation(0, 0).await?.federation;
    for (k, uri) in (1..).zip(ns_uris) {
        let name = format!("ns{k}");
        if fed.nameservice(&name).is_some() {
            continue;
        }
        let fs = FileSystem::connect(uri, me.clone(), opts.clone())?;
        let mut info = None;
        for addr in fs.members() {
            if let Ok(i) = fs.member_info(addr).await {
                info = Some(i);
                break;
            }
        }
        let info = info.with_context(|| format!("no member of {name} answers"))?;
        let record = NameserviceRecord {
            name: name.clone(),
            namespace_id: info.namespace_id,
            block_pool_id: info.block_pool_id,
            members: info.members.into_iter().map(|m| (m.id, m.addr)).collect(),
        };
        admin.change(&me.user, FederationChange::AddNameservice(record)).await?;
    }
    if fed.mounts().is_empty() {
        let names: Vec<String> = (1..=ns_uris.len()).map(|k| format!("ns{k}")).collect();
        let data_ns = names.get(1).unwrap_or(&names[0]).clone();
        let mut changes = vec![
            mount("/user", &[(names[0].clone(), "/user")], Order::Hash, &me.user),
            mount("/tmp", &[(names[0].clone(), "/tmp")], Order::Hash, &me.user),
            mount("/data", &[(data_ns, "/data")], Order::Hash, &me.user),
        ];
        if names.len() > 1 {
            let all: Vec<(String, &str)> = names.iter().map(|n| (n.clone(), "/shared")).collect();
            changes.push(mount("/shared", &all, Order::HashAll, &me.user));
        }
        for c in changes {
            admin.change(&me.user, c).await?;
        }
        // Every router routes by the new table before the tour's
        // directories are made through them.
        let version = admin.federation(0, 0).await?.federation.version();
        for addr in raftfs_client::uri::parse_fs(routers_uri)? {
            let one = RouterAdminClient::new(vec![addr.clone()], tls.dialer()?)?;
            let seen = one
                .federation(version - 1, ROUTERS_READY_TIMEOUT_MS)
                .await?
                .federation
                .version();
            if seen < version {
                bail!("router {addr} has mount table version {seen}, not {version}");
            }
        }
        via.mkdirs(&format!("/user/{}", me.user), None).await?;
        via.mkdirs("/tmp", None).await?;
        via.set_permission("/tmp", Permission::new(0o1777)).await?;
        via.mkdirs("/data", None).await?;
        if names.len() > 1 {
            for uri in ns_uris {
                FileSystem::connect(uri, me.clone(), opts.clone())?
                    .mkdirs("/shared", None)
                    .await?;
            }
        }
    }
    let fed = admin.federation(0, 0).await?.federation;
    Ok(fed
        .mounts()
        .entries()
        .map(|e| {
            let dests: Vec<String> = e
                .destinations
                .iter()
                .map(|d| format!("{}:{}", d.nameservice, d.path))
                .collect();
            format!("{} -> {} ({})", e.source, dests.join(","), e.order.name())
        })
        .collect())
}
