//! Reading a node's HTTP pages as an operator does: with curl, trusting
//! the cluster CA and presenting a certificate when given one.

use std::path::Path;
use std::process::Command;

/// What a page answered.
#[derive(Debug)]
pub struct Page {
    pub status: u16,
    pub content_type: String,
    pub body: String,
}

/// GET `https://ADDR/PATH_AND_QUERY` (plain `http://` when `ca` is `None`),
/// with the credentials in `creds` (a directory with node.crt and node.key).
pub fn get(addr: &str, path_and_query: &str, ca: Option<&Path>, creds: Option<&Path>) -> Page {
    request("GET", addr, path_and_query, ca, creds)
}

/// As [`get`], with HTTP method `method` (the URL's path is sent as it is,
/// `..` included).
pub fn request(method: &str, addr: &str, path_and_query: &str, ca: Option<&Path>, creds: Option<&Path>) -> Page {
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--path-as-is", "-X", method, "--max-time", "20", "-o", "-"]);
    cmd.args(["-w", "\n%{http_code} %{content_type}"]);
    let scheme = match ca {
        Some(ca) => {
            cmd.arg("--cacert").arg(ca);
            "https"
        }
        None => "http",
    };
    if let Some(d) = creds {
        cmd.arg("--cert").arg(d.join("node.crt"));
        cmd.arg("--key").arg(d.join("node.key"));
    }
    cmd.arg(format!("{scheme}://{addr}{path_and_query}"));
    let out = cmd.output().expect("run curl (scripts/setup.sh installs it)");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (body, tail) = text.rsplit_once('\n').unwrap_or(("", &text));
    let (code, content_type) = tail.split_once(' ').unwrap_or((tail, ""));
    Page {
        status: code.parse().unwrap_or(0),
        content_type: content_type.to_string(),
        body: body.to_string(),
    }
}

/// `body` in Prometheus's text format, as (name with labels, value) per
/// sample; panics on a line that is neither a comment nor a sample, or a
/// sample whose metric has no `# TYPE`.
pub fn samples(body: &str) -> Vec<(String, f64)> {
    let mut typed = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    for line in body.lines().filter(|l| !l.is_empty()) {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            typed.insert(rest.split_whitespace().next().unwrap_or_default().to_string());
            continue;
        }
        if line.starts_with("# HELP ") {
            continue;
        }
        let (series, value) = line
            .rsplit_once(' ')
            .unwrap_or_else(|| panic!("not a sample: {line:?}"));
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("not a number in {line:?}"));
        let name = series.split('{').next().unwrap_or_default();
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s).filter(|f| typed.contains(*f)))
            .unwrap_or(name);
        assert!(typed.contains(family), "{name} has no # TYPE line");
        out.push((series.to_string(), value));
    }
    out
}

/// The value of the one sample named exactly `series` (labels included).
pub fn sample(samples: &[(String, f64)], series: &str) -> f64 {
    samples
        .iter()
        .find(|(s, _)| s == series)
        .unwrap_or_else(|| panic!("no sample {series} among {samples:?}"))
        .1
}

/// What a data transfer answered.
#[derive(Debug)]
pub struct Transfer {
    pub status: u16,
    /// The last `Location` header (a redirect's target, CREATE's file).
    pub location: Option<String>,
    pub body: Vec<u8>,
    /// What curl said on stderr (why a status is 0).
    pub curl_error: String,
}

/// `METHOD URL` with curl, trusting `ca` (plain HTTP when `None`) and
/// presenting `creds`, sending the file `upload` as the body (streamed),
/// and following redirects if `follow` (as `hdfs dfs` clients of WebHDFS do
/// for reads).
pub fn transfer(
    method: &str,
    url: &str,
    ca: Option<&Path>,
    creds: Option<&Path>,
    upload: Option<&Path>,
    follow: bool,
) -> Transfer {
    let dir = tempfile::tempdir().expect("a temp dir");
    let (headers, body) = (dir.path().join("headers"), dir.path().join("body"));
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-X", method, "--max-time", "120", "-w", "%{http_code}"]);
    cmd.arg("-D").arg(&headers).arg("-o").arg(&body);
    if let Some(ca) = ca {
        cmd.arg("--cacert").arg(ca);
    }
    if let Some(d) = creds {
        cmd.arg("--cert").arg(d.join("node.crt"));
        cmd.arg("--key").arg(d.join("node.key"));
    }
    if let Some(f) = upload {
        cmd.arg("-T").arg(f);
    }
    if follow {
        cmd.arg("-L");
    }
    let out = cmd.arg(url).output().expect("run curl (scripts/setup.sh installs it)");
    let headers = std::fs::read_to_string(&headers).unwrap_or_default();
    let location = headers
        .lines()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case("location"))
        .map(|(_, v)| v.trim().to_string())
        .next_back();
    Transfer {
        status: String::from_utf8_lossy(&out.stdout).trim().parse().unwrap_or(0),
        location,
        body: std::fs::read(&body).unwrap_or_default(),
        curl_error: String::from_utf8_lossy(&out.stderr).trim().to_string(),
    }
}
