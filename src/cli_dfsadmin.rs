//! `raftfs dfsadmin` (-report, -safemode, -decommission, -recommission,
//! -refreshUserToGroupsMappings, -listOpenFiles in `cli_open_files`, and -addNameservice/-removeNameservice in
//! `cli_nameservices`) and
//! `raftfs fsck`, as HDFS prints them.
//!
//! A cluster with several nameservices is named by
//! `--nameservices "raftfs://a,b,c;raftfs://d,e,f"` (env
//! `RAFTFS_NAMESERVICES`, which `raftfs dev` prints); a command then runs
//! against every nameservice, and `-report` shows each DataNode's state in
//! every block pool and for the node as a whole.

use chrono::Local;

use raftfs_client::{ClientOptions, ClientTls, FileSystem, Identity};
use raftfs_router::admin_client::RouterAdminClient;
use raftfs_router::RouterError;

use crate::cli_dfsadmin_report::{pct, report, ReportScope};
use raftfs_proto::admin::FsckReport;
use raftfs_proto::{AdminOp, AdminResult, FsError, Op, SafeModeAction};

pub const USAGE: &str = "Usage: raftfs dfsadmin [--nameservices \"raftfs://h:p,...;raftfs://h:p,...\"] [--router raftfs://h:p,...] [--user USER]
\t[-report [-live] [-dead] [-decommissioning]]
\t[-safemode <enter | leave | get | wait>]
\t[-decommission <datanode uuid | host:port | host>]
\t[-recommission <datanode uuid | host:port | host>]
\t[-refreshUserToGroupsMappings]
\t[-listOpenFiles [-path <path>]]
\t[-addNameservice <nameservice> raftfs://host:port,...]   (with --router)
\t[-removeNameservice <nameservice> [-force]]               (with --router)";

pub const FSCK_USAGE: &str = "Usage: raftfs fsck [--nameservices ...] <path> [-files [-blocks [-locations]]]";

/// Most files fsck asks for per call.
const FSCK_PAGE_FILES: u32 = 10_000;

/// One client per nameservice named by `spec` (`;`-separated raftfs:// lists).
pub fn connect_all(spec: &str, user: Option<&str>) -> Result<Vec<(String, FileSystem)>, FsError> {
    let mut out = Vec::new();
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let fs = FileSystem::connect(part, Identity::resolve(user), ClientOptions::default())?;
        out.push((part.to_string(), fs));
    }
    if out.is_empty() {
        return Err(FsError::InvalidArgument(
            "no nameservice given: pass --nameservices or --fs (or set RAFTFS_NAMESERVICES / RAFTFS_FS)".into(),
        ));
    }
    Ok(out)
}

/// `-refreshUserToGroupsMappings`: every member of every nameservice
/// rereads its group mapping (each resolves the groups of the calls it
/// serves); HDFS's message per member, and an error if any failed.
async fn refresh_groups(spec: &str, user: Option<&str>) -> Result<(), FsError> {
    let mut res = Ok(());
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let members = part.strip_prefix("raftfs://").unwrap_or(part);
        for addr in members.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let one = FileSystem::connect(
                &format!("raftfs://{addr}"),
                Identity::resolve(user),
                ClientOptions::default(),
            );
            match one?.admin(AdminOp::RefreshUserToGroupsMappings).await {
                Ok(_) => println!("Refresh user to groups mapping successful for {addr}"),
                Err(e) => {
                    eprintln!("Refresh user to groups mapping failed for {addr}: {e}");
                    res = Err(e);
                }
            }
        }
    }
    res
}

/// What `-report` covers: with `router` named, every nameservice the
/// federation registers (by name, with its block pool) and the federation
/// itself; else the nameservices of `spec`, named by their addresses.
async fn report_scope(spec: Option<&str>, router: Option<&str>, user: Option<&str>) -> Result<ReportScope, FsError> {
    let Some(router) = router else {
        let spec = spec.ok_or_else(|| {
            FsError::InvalidArgument(
                "pass --nameservices, --fs or --router (or set RAFTFS_NAMESERVICES, RAFTFS_FS or RAFTFS_ROUTER)".into(),
            )
        })?;
        return Ok(ReportScope {
            nameservices: connect_all(spec, user)?
                .into_iter()
                .map(|(n, fs)| (n, fs, None))
                .collect(),
            federation: None,
        });
    };
    let addrs = raftfs_client::uri::parse_fs(router)?;
    let admin = RouterAdminClient::new(addrs, ClientTls::FromEnv.dialer()?).map_err(|e| match e {
        RouterError::Fs(e) => e,
        e => FsError::InvalidArgument(e.to_string()),
    })?;
    let federation = admin
        .federation(0, 0)
        .await
        .map_err(|e| match e {
            RouterError::Fs(e) => e,
            e => FsError::Internal(e.to_string()),
        })?
        .federation;
    let mut nameservices = Vec::new();
    for ns in federation.nameservices() {
        let fs = crate::cli_nameservices::nameservice_client(ns, user)?;
        nameservices.push((ns.name.clone(), fs, Some(ns.block_pool_id.clone())));
    }
    Ok(ReportScope {
        nameservices,
        federation: Some(federation),
    })
}

/// The usage line of one command (`-safemode`), as Hadoop's DFSAdmin
/// prints it after a usage error in that command.
fn command_usage(cmd: &str) -> Option<String> {
    let prefix = USAGE.split(" [--").next().expect("USAGE starts with its prefix");
    raftfs_client::dfs::usage_entry(USAGE, cmd).map(|entry| format!("{prefix} {entry}"))
}

/// Hadoop's DFSAdmin's refusal: `COMMAND: MESSAGE` (the command without
/// its dash, the server's message's first line).
fn refused(cmd: &str, e: &FsError) {
    let text = e.to_string();
    eprintln!(
        "{}: {}",
        cmd.trim_start_matches('-'),
        text.lines().next().unwrap_or_default()
    );
}

pub async fn run(spec: Option<String>, router: Option<String>, user: Option<String>, args: Vec<String>) -> i32 {
    let cmd = args.first().cloned().unwrap_or_default();
    if command_usage(&cmd).is_none() {
        eprintln!("{}: Unknown command", cmd.trim_start_matches('-'));
        eprintln!("{USAGE}");
        return 255;
    }
    let usage = || {
        eprintln!("{}", command_usage(&cmd).expect("a known command has a usage line"));
        255
    };
    if args.first().is_some_and(|a| a == "-report") {
        let flags: Vec<&str> = args[1..].iter().map(String::as_str).collect();
        if flags
            .iter()
            .any(|a| !["-live", "-dead", "-decommissioning", "-json"].contains(a))
        {
            return usage();
        }
        let r = match report_scope(spec.as_deref(), router.as_deref(), user.as_deref()).await {
            Ok(scope) => report(&scope, &flags).await,
            Err(e) => Err(e),
        };
        return match r {
            Ok(()) => 0,
            Err(e) => {
                refused(&cmd, &e);
                1
            }
        };
    }
    if let Some(cmd @ ("-addNameservice" | "-removeNameservice")) = args.first().map(String::as_str) {
        let Some(router) = router else {
            eprintln!("dfsadmin: {cmd} changes the federation: pass --router (or set RAFTFS_ROUTER)");
            return 255;
        };
        let a: Vec<&str> = args[1..].iter().map(String::as_str).collect();
        return match (cmd, a.as_slice()) {
            ("-addNameservice", [name, fs]) => crate::cli_nameservices::add(&router, user.as_deref(), name, fs).await,
            ("-removeNameservice", [name]) => {
                crate::cli_nameservices::remove(&router, user.as_deref(), name, false).await
            }
            ("-removeNameservice", [name, "-force"]) => {
                crate::cli_nameservices::remove(&router, user.as_deref(), name, true).await
            }
            _ => usage(),
        };
    }
    let Some(spec) = spec else {
        eprintln!("dfsadmin: pass --nameservices (or --fs), or set RAFTFS_NAMESERVICES / RAFTFS_FS");
        return 255;
    };
    let all = match connect_all(&spec, user.as_deref()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("dfsadmin: {e}");
            return 255;
        }
    };
    let r: Result<(), FsError> = match args.first().map(String::as_str) {
        Some("-safemode") => {
            let action = match args.get(1).map(String::as_str) {
                Some("get") | Some("wait") => SafeModeAction::Get,
                Some("enter") => SafeModeAction::Enter,
                Some("leave") => SafeModeAction::Leave,
                _ => return usage(),
            };
            let wait = args.get(1).is_some_and(|a| a == "wait");
            let mut res = Ok(());
            for (name, fs) in &all {
                loop {
                    match fs.admin(AdminOp::SafeMode(action)).await {
                        Ok(AdminResult::SafeMode(s)) if wait && s.on => {
                            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
                        }
                        Ok(AdminResult::SafeMode(s)) => {
                            let state = if s.on { "ON" } else { "OFF" };
                            if all.len() > 1 {
                                println!("Safe mode is {state} in {name}");
                            } else {
                                println!("Safe mode is {state}");
                            }
                            break;
                        }
                        Ok(other) => {
                            res = Err(FsError::Internal(format!("safemode answered {other:?}")));
                            break;
                        }
                        Err(e) => {
                            res = Err(e);
                            break;
                        }
                    }
                }
            }
            res
        }
        Some(cmd @ ("-decommission" | "-recommission")) => {
            let Some(node) = args.get(1).filter(|_| args.len() == 2) else {
                return usage();
            };
            let on = cmd == "-decommission";
            let mut res = Ok(());
            for (name, fs) in &all {
                let op = Op::SetDatanodeAdmin {
                    node: node.clone(),
                    decommission: on,
                };
                match fs.call(op).await {
                    Ok(_) => println!(
                        "{} {node} in {name}",
                        if on { "Decommissioning" } else { "Recommissioned" }
                    ),
                    Err(e) => res = Err(e),
                }
            }
            res
        }
        Some("-refreshUserToGroupsMappings") if args.len() == 1 => refresh_groups(&spec, user.as_deref()).await,
        Some("-listOpenFiles") => match crate::cli_open_files::parse(&args[1..]) {
            Ok(path) => crate::cli_open_files::list(&all, &path).await,
            Err(why) if why.is_empty() => return usage(),
            Err(why) => {
                eprintln!("{why}");
                return 255;
            }
        },
        _ => return usage(),
    };
    match r {
        Ok(()) => 0,
        Err(e) => {
            refused(&cmd, &e);
            1
        }
    }
}

/// Print one fsck page; returns (files, bytes, blocks, under, missing, corrupt blocks, corrupt replicas, repl sum).
fn print_fsck(r: &FsckReport, files: bool, blocks: bool, locations: bool, t: &mut [u64; 8]) {
    for f in &r.files {
        if f.is_dir {
            if files {
                println!("{} <dir>", f.path);
            }
            continue;
        }
        t[0] += 1;
        t[1] += f.length;
        let mut issues = Vec::new();
        for b in &f.blocks {
            t[2] += 1;
            t[7] += b.live as u64;
            let corrupt = b.replicas.iter().filter(|x| x.state == "CORRUPT").count() as u64;
            t[6] += corrupt;
            if f.under_construction && std::ptr::eq(b, f.blocks.last().expect("non-empty")) {
                continue;
            }
            if b.live == 0 && b.replicas.iter().all(|x| x.state == "CORRUPT") && corrupt > 0 {
                t[5] += 1;
                issues.push(format!(
                    "{}: CORRUPT blockpool {} block blk_{}",
                    f.path, r.block_pool_id, b.block.id
                ));
            } else if b.live == 0 && b.replicas.is_empty() {
                t[4] += 1;
                issues.push(format!(
                    "{}: MISSING block {}:{} len={}",
                    f.path, r.block_pool_id, b.block, b.block.num_bytes
                ));
            } else if (b.live as u64) < f.replication as u64 {
                t[3] += 1;
                issues.push(format!(
                    "{}: Under replicated {}:{}. Target Replicas is {} but found {} live replica(s).",
                    f.path, r.block_pool_id, b.block, f.replication, b.live
                ));
            }
            for x in b.replicas.iter().filter(|x| x.state == "CORRUPT") {
                issues.push(format!(
                    "{}: replica of {}:{} on {} is CORRUPT",
                    f.path, r.block_pool_id, b.block, x.node.addr
                ));
            }
        }
        if files {
            let status = if issues.is_empty() { " OK" } else { "" };
            let uc = if f.under_construction { " OPENFORWRITE:" } else { "" };
            println!(
                "{} {} bytes, replicated: replication={}, {} block(s):{uc}{status}",
                f.path,
                f.length,
                f.replication,
                f.blocks.len()
            );
        }
        for i in &issues {
            println!("{i}");
        }
        if blocks {
            for (k, b) in f.blocks.iter().enumerate() {
                let mut line = format!(
                    "{k}. {}:{} len={} Live_repl={}",
                    r.block_pool_id, b.block, b.block.num_bytes, b.live
                );
                if locations {
                    let locs: Vec<String> = b
                        .replicas
                        .iter()
                        .map(|x| format!("DatanodeInfoWithStorage[{},{},{}]", x.node.addr, x.node.uuid, x.state))
                        .collect();
                    line.push_str(&format!(" [{}]", locs.join(", ")));
                }
                println!("{line}");
            }
            if !f.blocks.is_empty() {
                println!();
            }
        }
    }
}

pub async fn fsck(spec: Option<String>, user: Option<String>, args: Vec<String>) -> i32 {
    let Some(path) = args.iter().find(|a| !a.starts_with('-')).cloned() else {
        eprintln!("{FSCK_USAGE}");
        return 255;
    };
    if let Some(bad) = args
        .iter()
        .find(|a| a.starts_with('-') && !["-files", "-blocks", "-locations", "-racks"].contains(&a.as_str()))
    {
        eprintln!("fsck: Illegal option {bad}\n{FSCK_USAGE}");
        return 255;
    }
    let (files, blocks, locations) = (
        args.iter().any(|a| a == "-files"),
        args.iter().any(|a| a == "-blocks"),
        args.iter().any(|a| a == "-locations"),
    );
    let Some(spec) = spec else {
        eprintln!("fsck: pass --nameservices (or --fs), or set RAFTFS_NAMESERVICES / RAFTFS_FS");
        return 255;
    };
    let all = match connect_all(&spec, user.as_deref()) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fsck: {e}");
            return 255;
        }
    };
    let start = std::time::Instant::now();
    let who = Identity::resolve(user.as_deref()).user;
    let mut t = [0u64; 8];
    let mut live_nodes = 0usize;
    let mut default_repl = 0u16;
    for (name, fs) in &all {
        println!("Connecting to nameservice via {name}");
        println!(
            "FSCK started by {who} for path {path} at {}",
            Local::now().format("%a %b %d %H:%M:%S %Z %Y")
        );
        if let Ok(AdminResult::Datanodes(d)) = fs.admin(AdminOp::DatanodeReport).await {
            live_nodes = live_nodes.max(d.iter().filter(|n| n.live).count());
        }
        let mut after = String::new();
        loop {
            let op = AdminOp::Fsck {
                path: path.clone(),
                start_after: after.clone(),
                limit: FSCK_PAGE_FILES,
            };
            match fs.admin(op).await {
                Ok(AdminResult::Fsck(r)) => {
                    print_fsck(&r, files, blocks, locations, &mut t);
                    default_repl = default_repl.max(r.files.iter().map(|f| f.replication).max().unwrap_or(0));
                    match (r.more, r.files.last()) {
                        (true, Some(last)) => after = last.path.clone(),
                        _ => break,
                    }
                }
                Ok(other) => {
                    eprintln!("fsck: unexpected answer {other:?}");
                    return 1;
                }
                Err(FsError::FileNotFound(_)) => {
                    // As Hadoop's NamenodeFsck: said on stdout, and not an
                    // error (DFSck exits 0 for it).
                    println!("\n\nPath '{path}' does not exist");
                    return 0;
                }
                Err(e) => {
                    eprintln!("fsck: {}: {e}", e.exception_name());
                    return 1;
                }
            }
        }
    }
    let healthy = t[4] == 0 && t[5] == 0;
    let status = if healthy { "HEALTHY" } else { "CORRUPT" };
    let share = |n: u64| pct(n, t[2]).replace('%', " %");
    println!();
    println!("Status: {status}");
    println!(" Number of data-nodes:\t{live_nodes}");
    println!(" Total size:\t{} B", t[1]);
    println!(" Total files:\t{}", t[0]);
    println!(
        " Total blocks (validated):\t{} (avg. block size {} B)",
        t[2],
        t[1].checked_div(t[2]).unwrap_or(0)
    );
    println!(
        " Minimally replicated blocks:\t{} ({})",
        t[2] - t[4] - t[5],
        share(t[2] - t[4] - t[5])
    );
    println!(" Under-replicated blocks:\t{} ({})", t[3], share(t[3]));
    println!(" Default replication factor:\t{default_repl}");
    println!(
        " Average block replication:\t{:.1}",
        if t[2] == 0 { 0.0 } else { t[7] as f64 / t[2] as f64 }
    );
    println!(" Missing blocks:\t\t{}", t[4]);
    println!(" Corrupt blocks:\t\t{}", t[5]);
    println!(" Corrupt replicas:\t\t{}", t[6]);
    println!(
        "FSCK ended at {} in {} milliseconds",
        Local::now().format("%a %b %d %H:%M:%S %Z %Y"),
        start.elapsed().as_millis()
    );
    println!();
    println!("The filesystem under path '{path}' is {status}");
    if healthy {
        0
    } else {
        1
    }
}
