//! `raftfs fetchdt`: delegation tokens, as `hdfs fetchdt`. Fetch one into a
//! file (as a user with a certificate: `RAFTFS_CREDENTIALS`), print it,
//! renew it (as its renewer) or cancel it (as its owner or renewer). A
//! process given the file through `RAFTFS_DELEGATION_TOKEN` acts as the
//! token's owner.

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
