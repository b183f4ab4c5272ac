//! `raftfs fetchdt`: delegation tokens, as `hdfs fetchdt`. Fetch one into a
//! file (as a user with a certificate: `RAFTFS_CREDENTIALS`), print it,
//! renew it (as its renewer) or cancel it (as its owner or renewer). A
//! process given the file through `RAFTFS_DELEGATION_TOKEN` acts as the
//! token's owner. With `--hadoop-token-file`, the fetched token is also
//! written in Hadoop's token storage format, for Hadoop's clients
//! (`HADOOP_TOKEN_FILE_LOCATION`), which then authenticate with it over
//! Hadoop RPC (SASL TOKEN) to a member or router under `--auth strong`.

use std::path::PathBuf;

use clap::Args;

use raftfs_client::{ClientOptions, DelegationTokenSource, FileSystem, Identity};

#[derive(Args, Debug)]
pub struct FetchdtArgs {
    /// Any member of the nameservice, raftfs://host:port[,host:port...]
    #[arg(long, env = "RAFTFS_FS")]
    pub fs: Option<String>,
    /// The user to act as (default: the user certificate's, env RAFTFS_USER, else the OS user)
    #[arg(long)]
    pub user: Option<String>,
    /// Who may renew the token (default: the user it is for)
    #[arg(long, default_value = "")]
    pub renewer: String,
    /// Renew the token in FILE (as its renewer)
    #[arg(long, conflicts_with_all = ["cancel", "print"])]
    pub renew: bool,
    /// Cancel the token in FILE (as its owner or renewer)
    #[arg(long, conflicts_with = "print")]
    pub cancel: bool,
    /// Print the token in FILE
    #[arg(long)]
    pub print: bool,
    /// Also write the fetched token here in Hadoop's token storage format
    /// (mode 0600), for Hadoop clients: HADOOP_TOKEN_FILE_LOCATION=FILE
    #[arg(long = "hadoop-token-file", requires = "hadoop_nameservice", conflicts_with_all = ["renew", "cancel", "print"])]
    pub hadoop_token_file: Option<PathBuf>,
    /// The file system Hadoop's clients reach with the token, hdfs://NS: a
    /// logical nameservice (raftfs dev's ns1, ns2, ... for a nameservice's
    /// members, ns-fed for the routers; the token's service is ha-hdfs:NS)
    /// or one member's or router's Hadoop RPC HOST:PORT
    #[arg(long = "hadoop-nameservice", requires = "hadoop_token_file")]
    pub hadoop_nameservice: Option<String>,
    /// The token file (written mode 0600 when fetching)
    pub file: PathBuf,
}

/// Exit status of a refused or failed command.
const EXIT_FAILED: i32 = 1;

pub async fn run(a: FetchdtArgs) -> i32 {
    match run_inner(a).await {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("fetchdt: {e}");
            EXIT_FAILED
        }
    }
}

async fn run_inner(a: FetchdtArgs) -> anyhow::Result<()> {
    if a.print {
        let t = raftfs_client::read_token_file(&a.file)?;
        println!("Token ({}) for {}", t, t.service);
        return Ok(());
    }
    let fs = a
        .fs
        .clone()
        .ok_or_else(|| anyhow::anyhow!("no file system given: pass --fs raftfs://host:port,... or set RAFTFS_FS"))?;
    let opts = ClientOptions {
        // Fetching and renewing need a certificate; a token in the environment would stand in for it.
        delegation_token: DelegationTokenSource::None,
        ..ClientOptions::default()
    };
    let client = FileSystem::connect(&fs, Identity::resolve(a.user.as_deref()), opts)?;
    if a.renew {
        let t = raftfs_client::read_token_file(&a.file)?;
        let until = client.renew_delegation_token(&t).await.map_err(named)?;
        println!("Renewed token for {} until: {}", t.service, date(until));
    } else if a.cancel {
        let t = raftfs_client::read_token_file(&a.file)?;
        client.cancel_delegation_token(&t).await.map_err(named)?;
        println!("Cancelled token for {}", t.service);
    } else {
        let t = client.get_delegation_token(&a.renewer).await.map_err(named)?;
        raftfs_client::write_token_file(&a.file, &t)?;
        println!("Fetched token for {} into {}", t.service, a.file.display());
        if let (Some(path), Some(ns)) = (&a.hadoop_token_file, &a.hadoop_nameservice) {
            let bytes = raftfs_hadoop::delegation_token::token_file(&[(&t, ns)])?;
            raftfs_client::write_credential_file(path, &bytes)?;
            println!(
                "Wrote it for Hadoop clients of hdfs://{ns} (service {}) into {}",
                raftfs_hadoop::delegation_token::token_service(ns),
                path.display()
            );
        }
    }
    Ok(())
}

/// The error with the HDFS exception name a user would search for.
fn named(e: raftfs_client::FsError) -> anyhow::Error {
    anyhow::anyhow!("{}: {e}", e.exception_name())
}

fn date(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|d| d.format("%a %b %d %H:%M:%S UTC %Y").to_string())
        .unwrap_or_else(|| ms.to_string())
}
