//! The status pages (the NameNode UI's and the router's) as an operator
//! sees them: each page read with curl and checked for what it must show,
//! then loaded in headless Chromium (Debian's `chromium`, installed by
//! `scripts/setup.sh`), whose rendered DOM is checked again and whose
//! screenshot is kept in `target/test-artifacts/status-pages/`.
//!
//! The cluster: three members, two DataNodes, one router with a mount
//! point. A file is held open by a writer (the open-files tabs and
//! `dfsadmin -listOpenFiles`), a file's
//! name holds HTML (escaped on every page), and the file browser lists as
//! the caller, downloads through WebHDFS, and refuses what the caller may
//! not list.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::http::{get, transfer};
use common::routers::Routers;
use common::Cluster;

/// Where the screenshots are kept.
const ARTIFACTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/target/test-artifacts/status-pages");
/// Debian's headless browser (see `scripts/setup.sh`).
const CHROMIUM: &str = "chromium";
/// Longest one browser run may take (seconds).
const CHROMIUM_TIMEOUT_S: &str = "90";

/// `timeout … chromium --headless …` with the flags every run takes.
/// Chromium trusts no cluster CA, hence `--ignore-certificate-errors`
/// (the pages' TLS is checked by curl against the CA).
fn chromium_command(profile: &Path) -> Command {
    let mut cmd = Command::new("timeout");
    cmd.args(["-k", "5", CHROMIUM_TIMEOUT_S, CHROMIUM])
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--ignore-certificate-errors",
        ])
        .args(["--disable-dev-shm-usage", "--no-first-run", "--hide-scrollbars"])
        .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Load `url` in headless Chromium: the DOM it rendered, and a screenshot
/// kept as `name.png`.
fn in_browser(url: &str, name: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = chromium_command(profile.path())
        .args(["--dump-dom", url])
        .output()
        .unwrap_or_else(|e| panic!("run {CHROMIUM} ({e}): scripts/setup.sh installs it"));
    assert!(
        out.status.success(),
        "chromium --dump-dom {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dom = String::from_utf8_lossy(&out.stdout).to_string();
    std::fs::create_dir_all(ARTIFACTS).unwrap();
    let shot = Path::new(ARTIFACTS).join(format!("{name}.png"));
    let _ = std::fs::remove_file(&shot);
    let out = chromium_command(profile.path())
        .arg(format!("--screenshot={}", shot.display()))
        .args(["--window-size=1280,1000", url])
        .output()
        .unwrap();
    assert!(
        out.status.success() && shot.metadata().map(|m| m.len() > 0).unwrap_or(false),
        "chromium --screenshot {url}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    dom
}

/// A page read with curl (trusting the cluster CA): its body, which must be
/// an HTML 200.
fn page(ca: &Path, addr: &str, path: &str) -> String {
    let p = get(addr, path, Some(ca), None);
    assert_eq!(p.status, 200, "{path}: {p:?}");
    assert!(p.content_type.starts_with("text/html"), "{path}: {}", p.content_type);
    p.body
}

/// The rows of table `id` in `html`, as cell texts (tags dropped).
fn rows(html: &str, id: &str) -> Vec<Vec<String>> {
    let start = html
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table #{id} in {html}"));
    let table = &html[start..];
    let table = &table[..table.find("</table>").unwrap()];
    table
        .split("<tr")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let cell = &cell[cell.find('>').unwrap() + 1..];
                    let cell = &cell[..cell.find("</td>").unwrap_or(cell.len())];
                    let mut text = String::new();
                    let mut in_tag = false;
                    for ch in cell.chars() {
                        match ch {
                            '<' => in_tag = true,
                            '>' => in_tag = false,
                            c if !in_tag => text.push(c),
                            _ => {}
                        }
                    }
                    text.trim().to_string()
                })
                .collect::<Vec<String>>()
        })
        .filter(|cells| !cells.is_empty())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_pages_show_the_cluster_and_browse_its_files() {
    let c = Cluster::start_with_datanodes(3, "memory", 2).await;
    let ca = c.ca_cert();
    let leader = c.leader().await;
    let follower = (1..=3).find(|i| *i != leader).unwrap();
    let hdfs = c.client("hdfs", &["supergroup"]);
    hdfs.mkdirs("/user/alice/private", None).await.unwrap();
    hdfs.set_owner("/user/alice", Some("alice"), None).await.unwrap();
    hdfs.set_owner("/user/alice/private", Some("alice"), None)
        .await
        .unwrap();
    hdfs.set_permission("/user/alice/private", raftfs_proto::Permission(0o700))
        .await
        .unwrap();
    let alice = c.client("alice", &[]);
    let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 1000) as u8).collect();
    for (path, bytes) in [("/user/alice/data.bin", &data[..]), ("/user/alice/<b>odd&name", b"x")] {
        let mut w = alice.create_file(path, true).await.unwrap();
        w.write(bytes).await.unwrap();
        w.close().await.unwrap();
    }
    // A writer that holds its file open while the pages are read.
    let mut open = alice.create_file("/user/alice/growing.log", true).await.unwrap();
    open.write(&[7u8; 5000]).await.unwrap();
    open.hflush().await.unwrap();

    // Overview, on a follower: every member with its role.
    let overview = page(&ca, &c.http_addr(follower), "/dfshealth.html");
    assert!(overview.contains(&c.ids.0), "the ClusterID: {overview}");
    let members = rows(&overview, "members");
    assert_eq!(members.len(), 3, "{members:?}");
    let roles: Vec<&str> = members.iter().map(|r| r[3].as_str()).collect();
    assert_eq!(roles.iter().filter(|r| **r == "LEADER").count(), 1, "{members:?}");
    assert_eq!(roles.iter().filter(|r| **r == "FOLLOWER").count(), 2, "{members:?}");
    for r in &members {
        let applied: u64 = r[7].parse().unwrap();
        assert!(applied > 0, "an applied index: {r:?}");
        assert_eq!(r[9], "HEALTHY", "{r:?}");
    }
    let summary = rows(&overview, "summary");
    assert!(summary.iter().any(|r| r[0] == "off"), "safe mode is off: {summary:?}");
    let capacity = rows(&overview, "capacity");
    assert!(
        capacity.iter().any(|r| r == &vec!["2".to_string()]),
        "2 live nodes: {capacity:?}"
    );

    // DataNodes, on the leader.
    let dns = rows(&page(&ca, &c.http_addr(leader), "/datanodes.html"), "datanodes");
    assert_eq!(dns.len(), 2, "{dns:?}");
    for r in &dns {
        assert_eq!(r[3], "In Service", "{r:?}");
        assert!(r[5].ends_with("iB"), "a capacity: {r:?}");
    }

    // Open files: the writer's file, by path, with its holder.
    let open_files = rows(&page(&ca, &c.http_addr(leader), "/openfiles.html"), "openfiles");
    assert_eq!(open_files.len(), 1, "{open_files:?}");
    assert_eq!(open_files[0][0], "/user/alice/growing.log", "{open_files:?}");
    assert!(!open_files[0][3].is_empty(), "a lease holder: {open_files:?}");

    // dfsadmin -listOpenFiles: Hadoop's header and columns, -path filters.
    let (code, out, err) = c.dfsadmin(&["-listOpenFiles"]);
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("{:<20}\t{:<20}\t{}", "Client Host", "Client Name", "Open File Path")
    );
    assert_eq!(lines.len(), 2, "{out}");
    let cols: Vec<&str> = lines[1].split('\t').collect();
    assert_eq!(cols.len(), 3, "{out}");
    assert_eq!(cols[1].trim(), open_files[0][3], "the holder: {out}");
    assert_eq!(cols[2].trim(), "/user/alice/growing.log", "{out}");
    let (code, out, _) = c.dfsadmin(&["-listOpenFiles", "-path", "/user/alice/"]);
    assert_eq!((code, out.lines().count()), (0, 2), "{out}");
    let (code, out, _) = c.dfsadmin(&["-listOpenFiles", "-path", "/user/al"]);
    assert_eq!(
        (code, out.lines().count()),
        (0, 1),
        "a path is not a name prefix: {out}"
    );

    // The file browser lists as the caller, escapes names, links downloads.
    let listing = page(
        &ca,
        &c.http_addr(leader),
        "/explorer.html?path=/user/alice&user.name=alice",
    );
    let names: Vec<String> = rows(&listing, "listing").iter().map(|r| r[7].clone()).collect();
    assert_eq!(
        names,
        [
            "&lt;b&gt;odd&amp;name",
            "data.bin",
            "growing.log (open for write)",
            "private/"
        ],
        "{listing}"
    );
    assert!(!listing.contains("<b>odd"), "a name is text, not markup");
    let href = listing
        .split("href=\"")
        .map(|h| &h[..h.find('"').unwrap()])
        .find(|h| h.starts_with("/webhdfs/v1/user/alice/data.bin?"))
        .unwrap_or_else(|| panic!("a download link: {listing}"))
        .replace("&amp;", "&");
    assert!(href.contains("op=OPEN") && href.contains("user.name=alice"), "{href}");
    let download = transfer(
        "GET",
        &format!("https://{}{href}", c.http_addr(leader)),
        Some(&ca),
        None,
        None,
        true,
    );
    assert_eq!(download.status, 200, "{download:?}");
    assert!(download.body == data, "the download is the file");
    let bob = get(
        &c.http_addr(leader),
        "/explorer.html?path=/user/alice/private&user.name=bob",
        Some(&ca),
        None,
    );
    assert_eq!(bob.status, 403, "{bob:?}");
    assert!(bob.body.contains("AccessControlException"), "{}", bob.body);
    let missing = get(&c.http_addr(leader), "/explorer.html?path=/nowhere", Some(&ca), None);
    assert_eq!(missing.status, 404, "{missing:?}");
    let root = get(&c.http_addr(leader), "/", Some(&ca), None);
    assert_eq!(root.status, 303, "/ leads to the overview: {root:?}");

    // The router: its group, the nameservice's members, the mount table.
    let routers = Routers::start(&c, 1);
    routers.admin_ok(&["-addNameservice", "ns1", &c.fs_uri()]);
    routers.admin_ok(&["-add", "/home", "ns1", "/user", "-readonly"]);
    let r_http = routers.http_addrs[0].clone();
    let fed = page(&ca, &r_http, "/federationhealth.html");
    let router_rows = rows(&fed, "routers");
    assert_eq!(router_rows.len(), 1, "{router_rows:?}");
    assert_eq!(router_rows[0][2], "LEADER", "{router_rows:?}");
    assert!(fed.contains("Nameservice ns1"), "{fed}");
    let ns_section = &fed[fed.find("data-nameservice=\"ns1\"").expect("a table of ns1")..];
    let ns_members = rows(&format!("<table id=\"ns1\" {ns_section}"), "ns1");
    assert_eq!(ns_members.len(), 3, "{ns_members:?}");
    let mounts = rows(&page(&ca, &r_http, "/mounts.html"), "mounts");
    assert_eq!(mounts.len(), 1, "{mounts:?}");
    assert_eq!(mounts[0][0], "/home");
    assert_eq!(mounts[0][1], "ns1-&gt;/user");
    assert_eq!(mounts[0][3], "yes", "read-only: {mounts:?}");
    let r_listing = page(&ca, &r_http, "/explorer.html?path=/home/alice&user.name=alice");
    let r_names: Vec<String> = rows(&r_listing, "listing").iter().map(|r| r[7].clone()).collect();
    assert!(r_names.contains(&"data.bin".to_string()), "{r_listing}");
    // The router's DataNodes (one table per block pool) and open files
    // (each with its federated path), as ns1's leader reports them.
    let r_dns = page(&ca, &r_http, "/datanodes.html");
    let pool = &r_dns[r_dns
        .find("data-block-pool=")
        .unwrap_or_else(|| panic!("a table per block pool: {r_dns}"))..];
    let r_dns = rows(&format!("<table id=\"pool\" {pool}"), "pool");
    assert_eq!(r_dns.len(), 2, "{r_dns:?}");
    assert!(r_dns.iter().all(|r| r[3] == "In Service"), "{r_dns:?}");
    let r_open = page(&ca, &r_http, "/openfiles.html");
    let ns1 = &r_open[r_open.find("data-nameservice=\"ns1\"").expect("ns1's open files")..];
    let r_open = rows(&format!("<table id=\"ns1\" {ns1}"), "ns1");
    assert_eq!(r_open.len(), 1, "{r_open:?}");
    assert_eq!(
        r_open[0][0], "/home/alice/growing.log",
        "the federated path: {r_open:?}"
    );
    assert_eq!(r_open[0][1], "/user/alice/growing.log", "ns1's path: {r_open:?}");
    assert_eq!(r_open[0][4], open_files[0][3], "the holder: {r_open:?}");

    // The member's mount tab shows what the routers gave it.
    let owned = page(&ca, &c.http_addr(leader), "/mounts.html");
    assert!(rows(&owned, "owned").iter().any(|r| r[0] == "/user"), "{owned}");

    // The same pages in a browser, with screenshots kept.
    let shots = [
        (c.http_addr(follower), "/dfshealth.html", "member-overview", "Members"),
        (c.http_addr(leader), "/datanodes.html", "member-datanodes", "In Service"),
        (
            c.http_addr(leader),
            "/openfiles.html",
            "member-openfiles",
            "/user/alice/growing.log",
        ),
        (c.http_addr(leader), "/mounts.html", "member-mounts", "/user"),
        (
            c.http_addr(leader),
            "/explorer.html?path=/user/alice&user.name=alice",
            "member-explorer",
            "&lt;b&gt;odd&amp;name",
        ),
        (
            r_http.clone(),
            "/federationhealth.html",
            "router-overview",
            "Nameservice ns1",
        ),
        (r_http.clone(), "/datanodes.html", "router-datanodes", "In Service"),
        (
            r_http.clone(),
            "/openfiles.html",
            "router-openfiles",
            "/home/alice/growing.log",
        ),
        (r_http.clone(), "/mounts.html", "router-mounts", "ns1-&gt;/user"),
        (
            r_http.clone(),
            "/explorer.html?path=/home/alice&user.name=alice",
            "router-explorer",
            "data.bin",
        ),
    ];
    for (addr, path, name, shows) in shots {
        let dom = in_browser(&format!("https://{addr}{path}"), name);
        assert!(dom.contains(shows), "{name} in the browser shows {shows:?}: {dom}");
        assert!(dom.contains("<nav>"), "{name} has the tabs: {dom}");
    }
    open.close().await.unwrap();
}
