//! `raftfs routeradmin`: the federation's mount table and nameservices, in
//! the style of `hdfs dfsrouteradmin`. Changes are made by the leader router
//! for the superuser only and reach every router within the bound of one
//! long poll (see `raftfs_router::admin`).

use std::time::Duration;

use raftfs_proto::Permission;
use raftfs_router::admin::SafeModeAction;
use raftfs_router::admin_client::RouterAdminClient;
use raftfs_router::federation::{FederationChange, NameserviceRecord};
use raftfs_router::mount_table::{Destination, MountEntry, MountQuota, MountTableChange, Order};

pub const USAGE: &str = "Usage: raftfs routeradmin [--router raftfs://host:port,...] [--user USER]
\t[-add <source> <nameservice1,nameservice2,...> <destination> [-readonly] [-order HASH|HASH_ALL|RANDOM|SPACE] [-owner <owner>] [-group <group>] [-mode <mode>]]
\t[-update <source> [<nameservice1,nameservice2,...> <destination>] [-readonly true|false] [-order HASH|HASH_ALL|RANDOM|SPACE] [-owner <owner>] [-group <group>] [-mode <mode>]]
\t[-rm <source>]
\t[-ls [<path>]]
\t[-setQuota <path> -nsQuota <nsQuota> -ssQuota <quota in bytes>]
\t[-clrQuota <path>]
\t[-nameservice enable | disable <nameservice>]
\t[-getDisabledNameservices]
\t[-addNameservice <nameservice> raftfs://host:port,...]
\t[-removeNameservice <nameservice>]
\t[-listNameservices]
\t[-safemode enter | leave | get]
\t[-status]";

/// Exit status for a usage error, as the Hadoop tools give.
const EXIT_USAGE: i32 = 255;

fn usage(why: &str) -> i32 {
    eprintln!("routeradmin: {why}\n{USAGE}");
    EXIT_USAGE
}

/// Options after an -add or -update's positional arguments.
#[derive(Default)]
struct EntryOptions {
    read_only: Option<bool>,
    order: Option<Order>,
    owner: Option<String>,
    group: Option<String>,
    mode: Option<u16>,
}

fn entry_options(args: &[String], update: bool) -> Result<EntryOptions, String> {
    let mut o = EntryOptions::default();
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| args.get(i + 1).cloned().ok_or(format!("{} needs a value", args[i]));
        match args[i].as_str() {
            "-readonly" if update => {
                o.read_only = Some(match value(i)?.as_str() {
                    "true" => true,
                    "false" => false,
                    v => return Err(format!("-readonly takes true or false, not {v}")),
                });
                i += 1;
            }
            "-readonly" => o.read_only = Some(true),
            "-order" => {
                o.order = Some(Order::parse(&value(i)?).map_err(|e| e.to_string())?);
                i += 1;
            }
            "-owner" => {
                o.owner = Some(value(i)?);
                i += 1;
            }
            "-group" => {
                o.group = Some(value(i)?);
                i += 1;
            }
            "-mode" => {
                let m = value(i)?;
                o.mode = Some(
                    u16::from_str_radix(&m, 8)
                        .ok()
                        .filter(|m| *m <= 0o7777)
                        .ok_or(format!("-mode {m} is not an octal permission"))?,
                );
                i += 1;
            }
            other => return Err(format!("unknown option {other}")),
        }
        i += 1;
    }
    Ok(o)
}

fn destinations(nameservices: &str, path: &str) -> Vec<Destination> {
    nameservices
        .split(',')
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .map(|n| Destination {
            nameservice: n.to_string(),
            path: path.to_string(),
        })
        .collect()
}

/// A quota number: bytes or names, with an optional k/m/g/t/p suffix for bytes.
fn parse_quota(s: &str) -> Option<u64> {
    let (digits, mult) = match s.chars().last()?.to_ascii_lowercase() {
        'k' => (&s[..s.len() - 1], 1u64 << 10),
        'm' => (&s[..s.len() - 1], 1 << 20),
        'g' => (&s[..s.len() - 1], 1 << 30),
        't' => (&s[..s.len() - 1], 1 << 40),
        'p' => (&s[..s.len() - 1], 1 << 50),
        _ => (s, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(mult).filter(|v| *v > 0)
}

fn quota_text(q: Option<u64>) -> String {
    q.map_or("-".into(), |v| v.to_string())
}

pub(crate) fn print_entries<'a>(entries: impl Iterator<Item = &'a MountEntry>) {
    println!("Mount Table Entries:");
    println!(
        "{:<25} {:<25} {:<12} {:<12} {:<10} {:<9} {:<8} Quota",
        "Source", "Destinations", "Owner", "Group", "Mode", "Order", "ReadOnly"
    );
    for e in entries {
        let dests: Vec<String> = e
            .destinations
            .iter()
            .map(|d| format!("{}->{}", d.nameservice, d.path))
            .collect();
        println!(
            "{:<25} {:<25} {:<12} {:<12} {:<10} {:<9} {:<8} [NsQuota: {}, SsQuota: {}]",
            e.source,
            dests.join(","),
            e.owner,
            e.group,
            Permission(e.mode).to_string(),
            e.order.name(),
            e.read_only,
            quota_text(e.quota.ns_quota),
            quota_text(e.quota.ss_quota)
        );
    }
}

/// How long `-addNameservice` waits for a starting nameservice to know its
/// membership (a member answers `MemberInfo` before its Raft group has
/// loaded or initialized it).
const MEMBERSHIP_WAIT_MS: u64 = 10_000;

/// Register the nameservice whose member answers at one of `fs`'s
/// addresses, once that member knows the nameservice's membership.
pub(crate) async fn nameservice_record(name: &str, fs: &str) -> Result<NameserviceRecord, String> {
    let deadline = std::time::Instant::now() + Duration::from_millis(MEMBERSHIP_WAIT_MS);
    loop {
        let r = nameservice_record_once(name, fs).await?;
        if !r.members.is_empty() {
            return Ok(r);
        }
        if std::time::Instant::now() >= deadline {
            return Err(format!(
                "the members at {fs} report no membership after {MEMBERSHIP_WAIT_MS} ms: \
                 is nameservice {name} still starting (raftfs haadmin -getAllServiceState)?"
            ));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn nameservice_record_once(name: &str, fs: &str) -> Result<NameserviceRecord, String> {
    let addrs = raftfs_client::uri::parse_fs(fs).map_err(|e| e.to_string())?;
    let dialer = raftfs_client::ClientTls::FromEnv.dialer().map_err(|e| e.to_string())?;
    let mut last = format!("no member of {fs} answered");
    for addr in addrs {
        match raftfs_router::server::nameservice_check::member_info(&dialer, &addr).await {
            Ok(info) if info.nameservice != name => {
                return Err(format!(
                    "the member at {addr} belongs to nameservice {}, not {name}",
                    info.nameservice
                ))
            }
            Ok(info) => {
                return Ok(NameserviceRecord {
                    name: name.to_string(),
                    namespace_id: info.namespace_id,
                    block_pool_id: info.block_pool_id,
                    members: info.members.into_iter().map(|m| (m.id, m.addr)).collect(),
                })
            }
            Err(e) => last = format!("{addr}: {e}"),
        }
    }
    Err(last)
}

/// A client of the routers `--router` names, with the environment's TLS.
pub(crate) fn connect(router: &str) -> Result<RouterAdminClient, String> {
    let addrs = raftfs_client::uri::parse_fs(router).map_err(|e| e.to_string())?;
    let dialer = raftfs_client::ClientTls::FromEnv.dialer().map_err(|e| e.to_string())?;
    RouterAdminClient::new(addrs, dialer).map_err(|e| e.to_string())
}

/// Make `c` as `me` and print `done` with the new version.
async fn make_change(router: &str, me: &str, c: FederationChange, done: String) -> i32 {
    let client = match connect(router) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("routeradmin: {e}");
            return EXIT_USAGE;
        }
    };
    match client.change(me, c).await {
        Ok(version) => {
            println!("{done} (mount table version {version})");
            0
        }
        Err(e) => {
            eprintln!("routeradmin: {e}");
            1
        }
    }
}

/// The federation as a router has it.
async fn federation(router: &str) -> Result<raftfs_router::Federation, i32> {
    let client = connect(router).map_err(|e| {
        eprintln!("routeradmin: {e}");
        EXIT_USAGE
    })?;
    client.federation(0, 0).await.map(|r| r.federation).map_err(|e| {
        eprintln!("routeradmin: {e}");
        1
    })
}

pub async fn run(router: Option<String>, user: Option<String>, args: Vec<String>) -> i32 {
    if matches!(args.first().map(String::as_str), Some("-help" | "-h" | "--help")) {
        println!("{USAGE}");
        return 0;
    }
    let Some(router) = router else {
        return usage("pass --router or set RAFTFS_ROUTER");
    };
    let identity = raftfs_client::Identity::resolve(user.as_deref());
    let me = identity.user.clone();
    let cmd = args.first().map(String::as_str).unwrap_or("");
    let change = |c: FederationChange, done: String| {
        let (router, me) = (router.clone(), me.clone());
        async move { make_change(&router, &me, c, done).await }
    };
    match cmd {
        "-add" => {
            if args.len() < 4 {
                return usage("-add needs <source> <nameservices> <destination>");
            }
            let o = match entry_options(&args[4..], false) {
                Ok(o) => o,
                Err(e) => return usage(&e),
            };
            let entry = MountEntry {
                source: args[1].clone(),
                destinations: destinations(&args[2], &args[3]),
                order: o.order.unwrap_or(Order::Hash),
                read_only: o.read_only.unwrap_or(false),
                owner: o.owner.unwrap_or_else(|| me.clone()),
                group: o
                    .group
                    .or_else(|| identity.groups.first().cloned())
                    .unwrap_or_else(|| me.clone()),
                mode: o.mode.unwrap_or(0o755),
                quota: MountQuota::default(),
            };
            let done = format!("Successfully added mount point {}", args[1]);
            change(FederationChange::Mount(MountTableChange::Add(entry)), done).await
        }
        "-update" => {
            if args.len() < 2 {
                return usage("-update needs <source>");
            }
            let positional = args.len() >= 4 && !args[2].starts_with('-');
            let o = match entry_options(&args[if positional { 4 } else { 2 }..], true) {
                Ok(o) => o,
                Err(e) => return usage(&e),
            };
            let current = match federation(&router).await {
                Ok(f) => f,
                Err(code) => return code,
            };
            let source = raftfs_router::mount_table::normalize(&args[1]).unwrap_or_else(|_| args[1].clone());
            let Some(mut entry) = current.mounts().get(&source).cloned() else {
                eprintln!("routeradmin: no mount point {}", args[1]);
                return 1;
            };
            if positional {
                entry.destinations = destinations(&args[2], &args[3]);
            }
            entry.read_only = o.read_only.unwrap_or(entry.read_only);
            entry.order = o.order.unwrap_or(entry.order);
            entry.owner = o.owner.unwrap_or(entry.owner);
            entry.group = o.group.unwrap_or(entry.group);
            entry.mode = o.mode.unwrap_or(entry.mode);
            let done = format!("Successfully updated mount point {}", args[1]);
            change(FederationChange::Mount(MountTableChange::Update(entry)), done).await
        }
        "-rm" if args.len() == 2 => {
            let done = format!("Successfully removed mount point {}", args[1]);
            let c = MountTableChange::Remove {
                source: args[1].clone(),
            };
            change(FederationChange::Mount(c), done).await
        }
        "-ls" if args.len() <= 2 => match federation(&router).await {
            Ok(f) => {
                let prefix = args
                    .get(1)
                    .map(|p| raftfs_router::mount_table::normalize(p).unwrap_or_else(|_| p.clone()));
                let under = |s: &str| match &prefix {
                    None => true,
                    Some(p) if p == "/" => true,
                    Some(p) => s == p || s.starts_with(&format!("{p}/")),
                };
                print_entries(f.mounts().entries().filter(|e| under(&e.source)));
                0
            }
            Err(code) => code,
        },
        "-setQuota" => {
            let mut quota = MountQuota::default();
            let mut i = 2;
            while i + 1 < args.len() {
                let v = parse_quota(&args[i + 1]);
                match (args[i].as_str(), v) {
                    ("-nsQuota", Some(v)) => quota.ns_quota = Some(v),
                    ("-ssQuota", Some(v)) => quota.ss_quota = Some(v),
                    (flag, _) => return usage(&format!("bad quota {flag} {}", args[i + 1])),
                }
                i += 2;
            }
            if args.len() < 4 || i != args.len() {
                return usage("-setQuota needs <path> and -nsQuota N and/or -ssQuota N");
            }
            let done = format!("Successfully set quota for mount point {}", args[1]);
            let c = MountTableChange::SetQuota {
                source: args[1].clone(),
                quota,
            };
            change(FederationChange::Mount(c), done).await
        }
        "-clrQuota" if args.len() == 2 => {
            let done = format!("Successfully cleared quota for mount point {}", args[1]);
            let c = MountTableChange::SetQuota {
                source: args[1].clone(),
                quota: MountQuota::default(),
            };
            change(FederationChange::Mount(c), done).await
        }
        "-nameservice" if args.len() == 3 && (args[1] == "enable" || args[1] == "disable") => {
            let disabled = args[1] == "disable";
            let done = format!("Successfully {}d nameservice {}", args[1], args[2]);
            let c = MountTableChange::DisableNameservice {
                nameservice: args[2].clone(),
                disabled,
            };
            change(FederationChange::Mount(c), done).await
        }
        "-getDisabledNameservices" if args.len() == 1 => match federation(&router).await {
            Ok(f) => {
                for n in f.mounts().disabled_nameservices() {
                    println!("{n}");
                }
                0
            }
            Err(code) => code,
        },
        "-addNameservice" if args.len() == 3 => match nameservice_record(&args[1], &args[2]).await {
            Ok(r) => {
                let done = format!(
                    "Successfully added nameservice {} (NamespaceID {}, BlockPoolID {}, {} members)",
                    r.name,
                    r.namespace_id,
                    r.block_pool_id,
                    r.members.len()
                );
                change(FederationChange::AddNameservice(r), done).await
            }
            Err(e) => {
                eprintln!("routeradmin: {e}");
                1
            }
        },
        "-removeNameservice" if args.len() == 2 => {
            let done = format!("Successfully removed nameservice {}", args[1]);
            let c = FederationChange::RemoveNameservice { name: args[1].clone() };
            change(c, done).await
        }
        "-listNameservices" if args.len() == 1 => match federation(&router).await {
            Ok(f) => {
                println!(
                    "{:<16} {:<12} {:<40} Members",
                    "Nameservice", "NamespaceID", "BlockPoolID"
                );
                for n in f.nameservices() {
                    let members: Vec<String> = n.members.iter().map(|(id, a)| format!("{id}={a}")).collect();
                    let disabled = if f.mounts().is_disabled(&n.name) {
                        " (disabled)"
                    } else {
                        ""
                    };
                    println!(
                        "{:<16} {:<12} {:<40} {}{disabled}",
                        n.name,
                        n.namespace_id,
                        n.block_pool_id,
                        members.join(",")
                    );
                }
                0
            }
            Err(code) => code,
        },
        "-safemode" if args.len() == 2 => {
            let action = match args[1].as_str() {
                "enter" => SafeModeAction::Enter,
                "leave" => SafeModeAction::Leave,
                "get" => SafeModeAction::Get,
                other => return usage(&format!("-safemode takes enter, leave or get, not {other}")),
            };
            let client = match connect(&router) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("routeradmin: {e}");
                    return EXIT_USAGE;
                }
            };
            // Safe mode is each router's own: every router named is asked.
            let mut status = 0;
            for addr in raftfs_client::uri::parse_fs(&router).unwrap_or_default() {
                match client.safe_mode(&addr, &me, action).await {
                    Ok(None) => println!("{addr}: Safe Mode: OFF"),
                    Ok(Some(why)) => println!("{addr}: Safe Mode: ON ({why})"),
                    Err(e) => {
                        eprintln!("routeradmin: {addr}: {e}");
                        status = 1;
                    }
                }
            }
            status
        }
        "-status" if args.len() == 1 => {
            let client = match connect(&router) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("routeradmin: {e}");
                    return EXIT_USAGE;
                }
            };
            let addrs = raftfs_client::uri::parse_fs(&router).unwrap_or_default();
            let mut status = 0;
            for addr in addrs {
                match client.status(&addr).await {
                    Ok(s) => println!(
                        "{addr}: router {} {} term {} leader {} applied {} version {} {}{}",
                        s.router_id,
                        s.state.to_uppercase(),
                        s.term,
                        s.leader.map_or("-".into(), |l| l.to_string()),
                        s.applied_index,
                        s.version,
                        s.health,
                        s.safe_mode.map(|why| format!(" SAFEMODE: {why}")).unwrap_or_default()
                    ),
                    Err(e) => {
                        println!("{addr}: {e}");
                        status = 1;
                    }
                }
            }
            status
        }
        "-help" | "-h" | "--help" => {
            println!("{USAGE}");
            0
        }
        "" => usage("no command"),
        other => usage(&format!("unknown or malformed command {other}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotas_and_options_parse() {
        assert_eq!(parse_quota("10"), Some(10));
        assert_eq!(parse_quota("2k"), Some(2048));
        assert_eq!(parse_quota("1G"), Some(1 << 30));
        assert_eq!(parse_quota("0"), None);
        assert_eq!(parse_quota("x"), None);
        let o = entry_options(
            &["-readonly", "-order", "hash_all", "-mode", "750"].map(String::from),
            false,
        )
        .unwrap();
        assert_eq!(
            (o.read_only, o.order, o.mode),
            (Some(true), Some(Order::HashAll), Some(0o750))
        );
        assert!(entry_options(&["-mode".to_string(), "999".to_string()], false).is_err());
        assert!(entry_options(&["-bogus".to_string()], false).is_err());
        let u = entry_options(&["-readonly", "false"].map(String::from), true).unwrap();
        assert_eq!(u.read_only, Some(false));
    }
}
