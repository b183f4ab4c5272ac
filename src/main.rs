//! `raftfs`: one binary with subcommands, as `hdfs` has.

mod cli_cert;
mod cli_datanode;
mod cli_dev;
mod cli_dev_auth;
mod cli_dev_hadoop_conf;
mod cli_dev_routers;
mod cli_dfsadmin;
mod cli_dfsadmin_report;
mod cli_fetchdt;
mod cli_format;
mod cli_haadmin;
mod cli_metaserver;
mod cli_nameservices;
mod cli_node;
mod cli_open_files;
mod cli_router;
mod cli_routeradmin;
mod logging;

use clap::{Parser, Subcommand};

/// mimalloc: the namespace allocates many small, short-lived objects per op,
/// where glibc malloc showed up as a third of a create's profile.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// How long exiting waits for the async runtime's tasks to stop.
const RUNTIME_SHUTDOWN_TIMEOUT_SECS: u64 = 5;

#[derive(Parser)]
#[command(
    name = "raftfs",
    version,
    about = "An HDFS-style distributed file system whose metadata service is a Raft group"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Create the identity of a new nameservice member (ClusterID, NamespaceID, BlockPoolID).
    Format(cli_format::FormatArgs),
    /// Issue certificates from the cluster CA (`raftfs cert issue --role datanode ...`).
    Cert(cli_cert::CertArgs),
    /// Run one member of a nameservice.
    Metaserver(Box<cli_metaserver::MetaserverArgs>),
    /// Start a local nameservice of several members as separate processes.
    Dev(cli_dev::DevArgs),
    /// File system shell commands, as `hdfs dfs` (run `raftfs dfs -help`).
    #[command(disable_help_flag = true)]
    Dfs {
        /// Any members of the nameservice, or the routers of a federation,
        /// raftfs://host:port[,host:port...]
        #[arg(long, env = "RAFTFS_FS")]
        fs: Option<String>,
        /// The user to act as (default: env RAFTFS_USER, else the OS user)
        #[arg(long)]
        user: Option<String>,
        /// Through routers: route each call in this client, straight to
        /// the nameservice that owns the path (direct), or send every call
        /// to a router (router)
        #[arg(long, env = "RAFTFS_ROUTING", default_value = "direct")]
        routing: raftfs_client::Routing,
        /// The command and its arguments, e.g. -ls -R /
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Run one DataNode (block storage for every nameservice's block pool).
    Datanode(cli_datanode::DatanodeArgs),
    /// Cluster administration, as `hdfs dfsadmin` (-report, -safemode, -decommission, -refreshUserToGroupsMappings, -listOpenFiles).
    #[command(disable_help_flag = true)]
    Dfsadmin {
        /// Every nameservice: "raftfs://h:p,...;raftfs://h:p,..." (default: --fs)
        #[arg(long, env = "RAFTFS_NAMESERVICES")]
        nameservices: Option<String>,
        #[arg(long, env = "RAFTFS_FS")]
        fs: Option<String>,
        /// The routers of a federation: -report then covers every
        /// nameservice they register, and shows the federation
        #[arg(long, env = "RAFTFS_ROUTER")]
        router: Option<String>,
        #[arg(long, env = "RAFTFS_USER")]
        user: Option<String>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Check files, blocks and replicas under a path, as `hdfs fsck`.
    #[command(disable_help_flag = true)]
    Fsck {
        /// Every nameservice: "raftfs://h:p,...;raftfs://h:p,..." (default: --fs)
        #[arg(long, env = "RAFTFS_NAMESERVICES")]
        nameservices: Option<String>,
        #[arg(long, env = "RAFTFS_FS")]
        fs: Option<String>,
        #[arg(long, env = "RAFTFS_USER")]
        user: Option<String>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// High-availability administration, as `hdfs haadmin`.
    #[command(disable_help_flag = true)]
    Haadmin {
        #[arg(long, env = "RAFTFS_FS")]
        fs: Option<String>,
        /// Who is asking (membership and leadership changes need the superuser).
        #[arg(long, env = "RAFTFS_USER")]
        user: Option<String>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Delegation tokens, as `hdfs fetchdt`: fetch one into a file, --print, --renew or --cancel it.
    Fetchdt(cli_fetchdt::FetchdtArgs),
    /// Format or run a router of the federation (`raftfs router format|run --help`).
    Router(cli_router::RouterArgs),
    /// The federation's mount table and nameservices, as `hdfs dfsrouteradmin` (run `raftfs routeradmin -help`).
    #[command(disable_help_flag = true)]
    Routeradmin {
        /// One or more routers: raftfs://host:port[,host:port...]
        #[arg(long, env = "RAFTFS_ROUTER")]
        router: Option<String>,
        /// Who is asking (changes need the superuser).
        #[arg(long, env = "RAFTFS_USER")]
        user: Option<String>,
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Benchmarks (NNThroughputBenchmark-style), see `raftfs bench nnthroughput --help`.
    Bench(raftfs_bench::BenchCli),
}

/// NNThroughputBenchmark spells its flags with one dash (`-op create
/// -threads 8`); accept them after `bench` by doubling the dash.
fn normalize_args(args: Vec<String>) -> Vec<String> {
    const SINGLE_DASH: [&str; 9] = [
        "-op",
        "-threads",
        "-files",
        "-dirs",
        "-filesPerDir",
        "-dirsPerDir",
        "-keepResults",
        "-useExisting",
        "-runs",
    ];
    let in_bench = args.get(1).is_some_and(|a| a == "bench");
    args.into_iter()
        .map(|a| {
            if in_bench && SINGLE_DASH.contains(&a.as_str()) {
                format!("-{a}")
            } else {
                a
            }
        })
        .collect()
}

/// Exit status of a command whose output reader went away (`| head`):
/// what a shell reports for a process killed by SIGPIPE (128 + 13).
const EXIT_BROKEN_PIPE: i32 = 141;

/// A client command piped into `head` and the like stops quietly when the
/// reader closes the pipe, as Unix tools do, rather than panicking in
/// `println!`. SIGPIPE itself stays ignored (Rust's default): the commands
/// talk gRPC over sockets, where a peer that went away must be an error the
/// client fails over from, not a signal that kills it.
fn quiet_on_broken_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info.payload_as_str().unwrap_or("");
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(EXIT_BROKEN_PIPE);
        }
        default(info);
    }));
}

fn main() {
    let cli = Cli::parse_from(normalize_args(std::env::args().collect()));
    if matches!(
        cli.cmd,
        Cmd::Dfs { .. } | Cmd::Haadmin { .. } | Cmd::Dfsadmin { .. } | Cmd::Fsck { .. } | Cmd::Routeradmin { .. }
    ) {
        quiet_on_broken_stdout();
    }
    let rt = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("raftfs: start the async runtime: {e}");
            std::process::exit(1);
        }
    };
    let code = rt.block_on(async move {
        match cli.cmd {
            Cmd::Format(a) => report(cli_format::run(a)),
            Cmd::Cert(a) => report(cli_cert::run(a)),
            // It sets up its logs itself, once it knows where its audit log goes.
            Cmd::Metaserver(a) => report(cli_metaserver::run(*a).await),
            Cmd::Dev(a) => report(cli_dev::run(a).await),
            Cmd::Dfs {
                fs,
                user,
                routing,
                args,
            } => dfs(fs, user, routing, args).await,
            Cmd::Fetchdt(a) => cli_fetchdt::run(a).await,
            Cmd::Haadmin { fs, user, args } => cli_haadmin::run(fs, user, args).await,
            Cmd::Router(a) => report(cli_router::run(a).await),
            Cmd::Routeradmin { router, user, args } => cli_routeradmin::run(router, user, args).await,
            Cmd::Datanode(a) => {
                logging::init_tracing();
                report(cli_datanode::run(a).await)
            }
            Cmd::Dfsadmin {
                nameservices,
                fs,
                router,
                user,
                args,
            } => {
                if args.is_empty() {
                    eprintln!("{}", cli_dfsadmin::USAGE);
                    return 255;
                }
                if args[0] == "-help" {
                    println!("{}", cli_dfsadmin::USAGE);
                    return 0;
                }
                cli_dfsadmin::run(nameservices.or(fs), router, user, args).await
            }
            Cmd::Fsck {
                nameservices,
                fs,
                user,
                args,
            } => cli_dfsadmin::fsck(nameservices.or(fs), user, args).await,
            Cmd::Bench(b) => {
                // Benches print their own figures; logs only when asked for.
                if std::env::var_os("RUST_LOG").is_some() {
                    logging::init_tracing();
                }
                report(raftfs_bench::run(b).await)
            }
        }
    });
    // Drop every task (and with them open RocksDB handles) before the
    // process exits: a database still open while exit runs RocksDB's static
    // destructors can abort ("pthread lock: Invalid argument").
    rt.shutdown_timeout(std::time::Duration::from_secs(RUNTIME_SHUTDOWN_TIMEOUT_SECS));
    std::process::exit(code);
}

fn report(r: anyhow::Result<()>) -> i32 {
    match r {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("raftfs: {e:#}");
            1
        }
    }
}

async fn dfs(fs: Option<String>, user: Option<String>, routing: raftfs_client::Routing, args: Vec<String>) -> i32 {
    // Help, usage and unknown commands are answered before anything is
    // dialed, as `hdfs dfs` does.
    let args = if args.first().is_some_and(|a| a == "--help") {
        vec!["-help".to_string()]
    } else {
        args
    };
    if let Some(status) =
        raftfs_client::dfs::offline(&args, &mut std::io::stdout().lock(), &mut std::io::stderr().lock())
    {
        return status;
    }
    let Some(fs) = fs else {
        eprintln!(
            "dfs: no file system given: pass --fs raftfs://host:port,... or set RAFTFS_FS (raftfs dev prints it)"
        );
        return raftfs_client::dfs::EXIT_USAGE;
    };
    let identity = raftfs_client::Identity::resolve(user.as_deref());
    let opts = raftfs_client::ClientOptions {
        routing,
        ..raftfs_client::ClientOptions::default()
    };
    let client = match raftfs_client::FileSystem::connect(&fs, identity, opts) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("dfs: {e}");
            return raftfs_client::dfs::EXIT_USAGE;
        }
    };
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let (mut out, mut err) = (stdout.lock(), stderr.lock());
    use std::io::IsTerminal;
    let progress = std::io::stderr().is_terminal();
    raftfs_client::dfs::run_with(&client, &args, &mut out, &mut err, progress).await
}
