//! The shell's output, fixed by a golden script: `tests/golden_shell/*.txt`
//! hold `raftfs dfs`, `dfsadmin`, `haadmin` and `fsck` command lines and
//! what each printed, so a change to any message or column shows as a
//! diff. Hadoop's FsShell and DFSAdmin sources are the spec for the
//! messages; the scripts' comments say where a line departs and why.
//!
//! Script format, one command per `$` line and its output after it:
//!
//! ```text
//! # a comment (kept)
//! $ dfs -mkdir /a              run as the superuser hdfs
//! bob$ dfs -mkdir /b           run as bob
//! > a line of stdout
//! ! a line of stderr
//! ? 1                          the exit status, when not 0
//! ```
//!
//! Arguments split on spaces, `'...'` quotes one argument. `| grep TEXT`
//! after a command keeps the output lines holding TEXT (for reports whose
//! other lines hold disk sizes). `$LOCAL` is a local scratch directory;
//! `local-write NAME TEXT...` writes a local file there. Output is
//! normalized: dates and times, ports, the cluster's ids and DataNode
//! UUIDs become placeholders. `UPDATE_GOLDEN=1` rewrites the scripts with
//! what ran.

use crate::common;

use std::path::Path;

use common::Cluster;

const GOLDEN_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden_shell");

/// One step of a script.
enum Step {
    Comment(String),
    Command { user: String, line: String },
}

fn parse(script: &str) -> Vec<Step> {
    let mut steps = Vec::new();
    for line in script.lines() {
        if line.starts_with("> ") || line.starts_with("! ") || line.starts_with("? ") || line == ">" || line == "!" {
            continue; // output of the previous run
        }
        if let Some((user, cmd)) = line.split_once("$ ") {
            if !user.contains(' ') && !user.starts_with('#') {
                let user = if user.is_empty() { "hdfs" } else { user };
                steps.push(Step::Command {
                    user: user.to_string(),
                    line: cmd.to_string(),
                });
                continue;
            }
        }
        steps.push(Step::Comment(line.to_string()));
    }
    steps
}

/// Split on spaces; `'...'` is one argument.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut any = false;
    for ch in line.chars() {
        match ch {
            '\'' => {
                quoted = !quoted;
                any = true;
            }
            ' ' if !quoted => {
                if any {
                    out.push(std::mem::take(&mut cur));
                    any = false;
                }
            }
            c => {
                cur.push(c);
                any = true;
            }
        }
    }
    assert!(!quoted, "an unclosed quote in {line:?}");
    if any {
        out.push(cur);
    }
    out
}

/// Replace every run of `pattern` (`d` a digit, `x` a hex digit, other
/// characters themselves) in `text` by `with`.
fn mask(text: &str, pattern: &str, with: &str) -> String {
    let (t, p) = (text.as_bytes(), pattern.as_bytes());
    let fits = |at: usize| {
        at + p.len() <= t.len()
            && p.iter().zip(&t[at..]).all(|(pc, tc)| match pc {
                b'd' => tc.is_ascii_digit(),
                b'x' => tc.is_ascii_hexdigit(),
                c => c == tc,
            })
    };
    let mut out = Vec::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        if fits(i) {
            out.extend_from_slice(with.as_bytes());
            i += p.len();
        } else {
            out.push(t[i]);
            i += 1;
        }
    }
    String::from_utf8(out).expect("masking keeps UTF-8")
}

fn normalize(c: &Cluster, local: &Path, text: &str) -> String {
    let mut s = text.replace(&local.display().to_string(), "$LOCAL");
    for (id, name) in [(&c.ids.0, "<cluster-id>"), (&c.ids.2, "<block-pool-id>")] {
        s = s.replace(id.as_str(), name);
    }
    s = s.replace(&format!(" {} ", c.ids.1), " <namespace-id> ");
    s = mask(&s, "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx", "<uuid>");
    s = mask(&s, "dddd-dd-dd dd:dd:dd", "<date> <time>");
    s = mask(&s, "dddd-dd-dd dd:dd", "<date> <time>");
    // fsck's start and end times (Java's Date format) and its duration.
    let s: String = s
        .lines()
        .map(|l| {
            if let (true, Some((head, _))) = (l.starts_with("FSCK started by "), l.split_once(" at ")) {
                format!("{head} at <date>\n")
            } else if let (true, Some((_, ms))) = (l.starts_with("FSCK ended at "), l.rsplit_once(" in ")) {
                let unit = ms.split_once(' ').map_or("", |(_, u)| u);
                format!("FSCK ended at <date> in <n> {unit}\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    // Ports: every 127.0.0.1:N.
    let mut out = String::new();
    let mut rest = s.as_str();
    while let Some(at) = rest.find("127.0.0.1:") {
        out.push_str(&rest[..at + "127.0.0.1:".len()]);
        rest = &rest[at + "127.0.0.1:".len()..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits > 0 {
            out.push_str("<port>");
        }
        rest = &rest[digits..];
    }
    out.push_str(rest);
    out
}

/// Run one command line; its output in the script's form.
fn run(c: &Cluster, local: &Path, user: &str, line: &str) -> String {
    let (line, grep) = match line.split_once(" | grep ") {
        Some((l, g)) => (l, Some(g)),
        None => (line, None),
    };
    let args = words(&line.replace("$LOCAL", &local.display().to_string()));
    let (code, stdout, stderr) = match args[0].as_str() {
        "local-write" => {
            std::fs::write(local.join(&args[1]), format!("{}\n", args[2..].join(" "))).unwrap();
            (0, String::new(), String::new())
        }
        tool @ ("dfs" | "dfsadmin" | "haadmin" | "fsck") => {
            let args: Vec<&str> = args[1..].iter().map(String::as_str).collect();
            c.tool(tool, user, &args)
        }
        other => panic!("unknown tool {other:?} in {line:?}"),
    };
    let keep = |l: &&str| grep.is_none_or(|g| l.contains(g));
    let mut text = String::new();
    for l in normalize(c, local, &stdout).lines().filter(keep) {
        text.push_str(&format!("> {l}\n").replace("> \n", ">\n"));
    }
    for l in normalize(c, local, &stderr).lines().filter(keep) {
        text.push_str(&format!("! {l}\n").replace("! \n", "!\n"));
    }
    if code != 0 {
        text.push_str(&format!("? {code}\n"));
    }
    text
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shells_output_matches_its_golden_scripts() {
    let c = Cluster::start_with_datanodes(1, "memory", 1).await;
    let mut scripts: Vec<_> = std::fs::read_dir(GOLDEN_DIR)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    scripts.sort();
    assert!(!scripts.is_empty(), "no scripts in {GOLDEN_DIR}");
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut failures = Vec::new();
    for script in scripts {
        let local = tempfile::tempdir().unwrap();
        let want = std::fs::read_to_string(&script).unwrap();
        let mut got = String::new();
        for step in parse(&want) {
            match step {
                Step::Comment(l) => {
                    got.push_str(&l);
                    got.push('\n');
                }
                Step::Command { user, line } => {
                    let prompt = if user == "hdfs" { String::new() } else { user.clone() };
                    got.push_str(&format!("{prompt}$ {line}\n"));
                    got.push_str(&run(&c, local.path(), &user, &line));
                }
            }
        }
        if got != want {
            if update {
                std::fs::write(&script, &got).unwrap();
            } else {
                let diff: Vec<String> = want
                    .lines()
                    .zip(got.lines())
                    .enumerate()
                    .filter(|(_, (w, g))| w != g)
                    .take(10)
                    .map(|(i, (w, g))| format!("line {}:\n  want {w}\n  got  {g}", i + 1))
                    .collect();
                failures.push(format!(
                    "{}: differs (UPDATE_GOLDEN=1 rewrites it)\n{}\n--- whole output ---\n{got}",
                    script.display(),
                    diff.join("\n")
                ));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
