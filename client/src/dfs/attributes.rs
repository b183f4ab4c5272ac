//! The `dfs` commands that set attributes, on each path or with `-R` on
//! everything below it: -chmod, -chown, -chgrp and -setrep. As Hadoop's
//! shell, an unchanged value is not set again and a refusal says what was
//! being changed.

use futures::future::LocalBoxFuture;
use futures::FutureExt;
use raftfs_proto::{FileStatus, Permission};

use super::{child_path, flags, shell_message, Mode, Shell};

enum WalkOp {
    Chmod(Permission),
    Chown(Option<String>, Option<String>),
    Setrep(u16),
    Skip,
}

impl Shell<'_> {
    /// Apply `f` to each path, and with `recursive` to everything below it.
    fn walk<'s>(
        &'s mut self,
        path: String,
        recursive: bool,
        f: &'s (dyn Fn(&FileStatus) -> WalkOp + Sync),
    ) -> LocalBoxFuture<'s, ()> {
        async move {
            let Some(st) = self.status(&path).await else { return };
            self.apply_walk(&path, &st, f).await;
            if recursive && st.is_dir() {
                match self.fs.list_status(&path).await {
                    Ok(children) => {
                        for c in children {
                            let cp = child_path(&path, &c.path_suffix);
                            if c.is_dir() {
                                self.walk(cp, true, f).await;
                            } else {
                                self.apply_walk(&cp, &c, f).await;
                            }
                        }
                    }
                    Err(e) => self.fail(&path, &e),
                }
            }
        }
        .boxed_local()
    }

    async fn apply_walk(&mut self, path: &str, st: &FileStatus, f: &(dyn Fn(&FileStatus) -> WalkOp + Sync)) {
        // As Hadoop's shell, an unchanged permission or owner is not set
        // again, and a refusal says what was being changed.
        let changing = |what: &'static str| move |e| (Some(what), e);
        let r = match f(st) {
            WalkOp::Chmod(p) if p == st.permission => Ok(()),
            WalkOp::Chmod(p) => (self.fs.set_permission(path, p).await)
                .map(|_| ())
                .map_err(changing("permissions")),
            WalkOp::Chown(o, g) => {
                let o = o.filter(|o| *o != st.owner);
                let g = g.filter(|g| *g != st.group);
                if o.is_none() && g.is_none() {
                    Ok(())
                } else {
                    (self.fs.set_owner(path, o.as_deref(), g.as_deref()).await).map_err(changing("ownership"))
                }
            }
            WalkOp::Setrep(n) => match self.fs.set_replication(path, n).await {
                Ok(true) => {
                    let _ = writeln!(self.out, "Replication {n} set: {path}");
                    Ok(())
                }
                Ok(false) => Ok(()),
                Err(e) => Err((None, e)),
            },
            WalkOp::Skip => Ok(()),
        };
        match r {
            Err((Some(what), e)) => self.fail_msg(format!("changing {what} of '{path}': {}", shell_message(&e))),
            Err((None, e)) => self.fail(path, &e),
            Ok(()) => {}
        }
    }

    pub(super) async fn chmod(&mut self, args: &[String]) -> Result<(), String> {
        let (f, ops) = flags(args, &["-R"])?;
        let [mode, paths @ ..] = ops.as_slice() else {
            return Err("Not enough arguments: expected 2 but got 0".into());
        };
        if paths.is_empty() {
            return Err("Not enough arguments: expected 2 but got 1".into());
        }
        let mode =
            Mode::parse(mode).ok_or_else(|| format!("chmod : mode '{mode}' does not match the expected pattern."))?;
        let op = move |s: &FileStatus| WalkOp::Chmod(mode.apply(s.permission, s.is_dir()));
        for p in paths {
            self.walk(p.to_string(), f.contains(&"-R"), &op).await;
        }
        Ok(())
    }

    pub(super) async fn chown(&mut self, args: &[String], group_only: bool) -> Result<(), String> {
        let (f, ops) = flags(args, &["-R"])?;
        let [spec, paths @ ..] = ops.as_slice() else {
            return Err("Not enough arguments: expected 2 but got 0".into());
        };
        if paths.is_empty() {
            return Err("Not enough arguments: expected 2 but got 1".into());
        }
        // Hadoop's FsShellPermissions: names of [-_./@a-zA-Z0-9].
        let name_ok = |s: &str| s.chars().all(|c| c.is_ascii_alphanumeric() || "-_./@".contains(c));
        let some = |s: &str| if s.is_empty() { None } else { Some(s.to_string()) };
        let (owner, group) = if group_only {
            if spec.is_empty() || !name_ok(spec) {
                return Err(format!("'{spec}' does not match expected pattern for group"));
            }
            (None, some(spec))
        } else {
            let (o, g) = spec.split_once(':').unwrap_or((spec, ""));
            if !name_ok(o) || !name_ok(g) {
                return Err(format!("'{spec}' does not match expected pattern for [owner][:group]."));
            }
            (some(o), some(g))
        };
        if owner.is_none() && group.is_none() {
            return Err(format!("'{spec}' does not specify owner or group."));
        }
        let op = move |_: &FileStatus| WalkOp::Chown(owner.clone(), group.clone());
        for p in paths {
            self.walk(p.to_string(), f.contains(&"-R"), &op).await;
        }
        Ok(())
    }

    pub(super) async fn setrep(&mut self, args: &[String]) -> Result<(), String> {
        let (_, ops) = flags(args, &["-R", "-w"])?;
        let [n, paths @ ..] = ops.as_slice() else {
            return Err("Not enough arguments: expected 2 but got 0".into());
        };
        // Hadoop's SetReplication parses a short and says what Java says.
        let n: i16 = n.parse().map_err(|_| format!("For input string: \"{n}\""))?;
        let n = u16::try_from(n)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| "replication must be >= 1".to_string())?;
        if paths.is_empty() {
            return Err("Not enough arguments: expected 2 but got 1".into());
        }
        // As in HDFS, a directory sets the replication of every file below it.
        let op = move |s: &FileStatus| if s.is_dir() { WalkOp::Skip } else { WalkOp::Setrep(n) };
        for p in paths {
            self.walk(p.to_string(), true, &op).await;
        }
        Ok(())
    }
}
