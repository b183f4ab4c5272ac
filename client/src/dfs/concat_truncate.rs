//! The `dfs` commands that change which bytes a file holds without
//! copying any: -concat (the sources' blocks move to the target) and
//! -truncate (blocks are dropped or cut on the DataNodes).

use std::time::{Duration, Instant};

use super::{flags, help, Shell};

/// Longest `-truncate -w` waits for one file's last block to be cut.
pub const MAX_TRUNCATE_WAIT_MS: u64 = 600_000;
/// How often `-truncate -w` asks whether the file is closed.
const TRUNCATE_POLL_MS: u64 = 200;

impl Shell<'_> {
    /// Hadoop's `Concat`: a target and at least two sources, each an
    /// existing file, checked before the call (its messages).
    pub(super) async fn concat(&mut self, args: &[String]) -> Result<(), String> {
        let (_, ops) = flags(args, &[])?;
        let usage = help::command_usage("concat")
            .and_then(|u| u.strip_prefix("-concat "))
            .unwrap_or_default();
        if ops.is_empty() {
            self.fail_msg(format!("Target path not specified. {usage}"));
            return Ok(());
        }
        if ops.len() < 3 {
            self.fail_msg(format!("The number of source paths is less than 2. {usage}"));
            return Ok(());
        }
        for (i, p) in ops.iter().enumerate() {
            let is_file = match self.fs.get_file_info(p).await {
                Ok(st) => st.is_some_and(|s| !s.is_dir()),
                Err(e) => {
                    self.fail(p, &e);
                    return Ok(());
                }
            };
            if !is_file {
                let what = if i == 0 { "Target path " } else { "" };
                self.fail_msg(format!("{what}{p} does not exist or is not file."));
                return Ok(());
            }
        }
        let sources: Vec<String> = ops[1..].iter().map(|s| s.to_string()).collect();
        if let Err(e) = self.fs.concat(ops[0], &sources).await {
            self.fail(ops[0], &e);
        }
        Ok(())
    }

    /// Hadoop's `Truncate`: each file to LENGTH; with `-w`, wait until the
    /// files whose last block is being cut are closed (at most
    /// [`MAX_TRUNCATE_WAIT_MS`] each).
    pub(super) async fn truncate(&mut self, args: &[String]) -> Result<(), String> {
        let (f, ops) = flags(args, &["-w"])?;
        let wait = f.contains(&"-w");
        if ops.len() < 2 {
            return Err(format!("Not enough arguments: expected 2 but got {}", ops.len()));
        }
        let Ok(new_length) = ops[0].parse::<i64>() else {
            let _ = writeln!(
                self.err,
                "{}: Illegal length, a non-negative integer expected",
                self.cmd
            );
            return Err(format!("For input string: \"{}\"", ops[0]));
        };
        let Ok(new_length) = u64::try_from(new_length) else {
            return Err("length must be >= 0".into());
        };
        let mut waiting = Vec::new();
        for p in &ops[1..] {
            let Some(st) = self.status(p).await else { continue };
            if st.is_dir() {
                self.fail_msg(format!("`{p}': Is a directory"));
                continue;
            }
            if new_length > st.length {
                self.fail_msg(format!(
                    "Cannot truncate to a larger file size. Current size: {}, truncate size: {new_length}.",
                    st.length
                ));
                continue;
            }
            match self.fs.truncate(p, new_length).await {
                Ok(true) => {
                    let _ = writeln!(self.out, "Truncated {p} to length: {new_length}");
                }
                Ok(false) if wait => waiting.push(*p),
                Ok(false) => {
                    let _ = writeln!(
                        self.out,
                        "Truncating {p} to length: {new_length}. Wait for block recovery to complete before further updating this file."
                    );
                }
                Err(e) => self.fail(p, &e),
            }
        }
        for p in waiting {
            let _ = writeln!(self.out, "Waiting for {p} ...");
            let deadline = Instant::now() + Duration::from_millis(MAX_TRUNCATE_WAIT_MS);
            loop {
                match self.fs.get_file_info(p).await {
                    Ok(Some(st)) if !st.under_construction => {
                        let _ = writeln!(self.out, "Truncated {p} to length: {new_length}");
                        break;
                    }
                    Ok(_) if Instant::now() < deadline => {
                        tokio::time::sleep(Duration::from_millis(TRUNCATE_POLL_MS)).await;
                    }
                    Ok(_) => {
                        self.fail_msg(format!(
                            "`{p}': its last block was not cut within {} s; see raftfs dfsadmin -listOpenFiles -path {p}",
                            MAX_TRUNCATE_WAIT_MS / 1000
                        ));
                        break;
                    }
                    Err(e) => {
                        self.fail(p, &e);
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}
