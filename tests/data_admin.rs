//! Operating the data path: the `dfs` data commands, `dfsadmin -report`,
//! `-safemode`, decommissioning, safe mode after a restart, and a DataNode
//! of another cluster refused untouched.

use crate::common;

use std::time::{Duration, Instant};

const ARGS: &[&str] = &[
    "--safemode-extension-ms",
    "0",
    "--replication-interval-ms",
    "200",
    "--datanode-dead-ms",
    "3000",
];

fn local(dir: &std::path::Path, name: &str, data: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, data).unwrap();
    p.display().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dfs_data_commands() {
    let mut c = common::Cluster::start_with(3, "rocksdb", ARGS);
    c.wait_ready().await;
    c.start_datanodes(3, &[]);
    c.wait_datanodes(3).await;
    let tmp = tempfile::tempdir().unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| b'a' + (i % 26) as u8).collect();
    let src = local(tmp.path(), "in.bin", &data);

    assert_eq!(c.dfs("hdfs", &["-mkdir", "-p", "/d"]).0, 0);
    let (code, out, err) = c.dfs("hdfs", &["-put", &src, "/d/f"]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    let (code, _, err) = c.dfs("hdfs", &["-put", &src, "/d/f"]);
    assert_eq!((code, err.as_str()), (1, "put: `/d/f': File exists\n"));
    assert_eq!(c.dfs("hdfs", &["-put", "-f", &src, "/d/f"]).0, 0);
    let (_, ls, _) = c.dfs("hdfs", &["-ls", "/d"]);
    assert!(ls.contains(" 3000000 ") && ls.contains("/d/f"), "{ls}");
    assert!(!ls.contains("_COPYING_"), "{ls}");

    let got = tmp.path().join("out.bin");
    let g = got.display().to_string();
    let (code, _, err) = c.dfs("hdfs", &["-get", "/d/f", &g]);
    assert_eq!(code, 0, "{err}");
    assert!(std::fs::read(&got).unwrap() == data, "-get copies the bytes");
    let (code, _, err) = c.dfs("hdfs", &["-get", "/d/f", &g]);
    assert_eq!((code, err), (1, format!("get: `{g}': File exists\n")));
    let (code, _, err) = c.dfs("hdfs", &["-copyToLocal", "/nope", &g]);
    assert_eq!(
        (code, err.as_str()),
        (1, "copyToLocal: `/nope': No such file or directory\n")
    );

    let small = local(tmp.path(), "s.txt", b"hello\n");
    assert_eq!(c.dfs("hdfs", &["-copyFromLocal", &small, "/d/s"]).0, 0);
    let more = local(tmp.path(), "m.txt", b"world\n");
    assert_eq!(c.dfs("hdfs", &["-appendToFile", &more, &small, "/d/s"]).0, 0);
    let (code, out, _) = c.dfs("hdfs", &["-cat", "/d/s"]);
    assert_eq!((code, out.as_str()), (0, "hello\nworld\nhello\n"));
    let (code, out, _) = c.dfs("hdfs", &["-cat", "/d/s", "/d/s"]);
    assert_eq!((code, out.len()), (0, 36));
    let (code, _, err) = c.dfs("hdfs", &["-cat", "/d"]);
    assert_eq!((code, err.as_str()), (1, "cat: `/d': Is a directory\n"));

    let (code, out, _) = c.dfs("hdfs", &["-tail", "/d/f"]);
    assert_eq!(code, 0);
    assert!(out.as_bytes() == &data[data.len() - 1024..], "-tail prints the last KB");

    assert_eq!(c.dfs("hdfs", &["-cp", "/d/f", "/d/g"]).0, 0);
    let (_, sums, _) = c.dfs("hdfs", &["-checksum", "/d/f", "/d/g"]);
    let lines: Vec<&str> = sums.lines().collect();
    assert_eq!(lines.len(), 2, "{sums}");
    let field = |l: &str, i: usize| l.split('\t').nth(i).map(str::to_string);
    assert_eq!(field(lines[0], 0).as_deref(), Some("/d/f"));
    assert_eq!(field(lines[0], 1).as_deref(), Some("MD5-of-0MD5-of-512CRC32C"));
    assert_eq!(field(lines[0], 2), field(lines[1], 2), "a copy has the same checksum");
    assert_eq!(field(lines[0], 2).unwrap().len(), 56);

    // dfsadmin.
    let (code, out, err) = c.dfsadmin(&["-report"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("Live datanodes (3):"), "{out}");
    assert_eq!(out.matches("Decommission Status : Normal").count(), 3, "{out}");
    let (code, out, _) = c.dfsadmin(&["-safemode", "get"]);
    assert_eq!((code, out.as_str()), (0, "Safe mode is OFF\n"));
    let (code, _, err) = c.dfsadmin(&["-safemode", "sideways"]);
    assert_eq!(code, 255, "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn decommission_drains_a_node_and_safe_mode_waits_for_reports() {
    let mut c = common::Cluster::start_with(3, "rocksdb", ARGS);
    c.wait_ready().await;
    c.start_datanodes(4, &[]);
    c.wait_datanodes(4).await;
    let fs = c.client("hdfs", &["hdfs"]);
    let data = vec![42u8; 2_500_000];
    for i in 0..3 {
        let mut w = fs
            .create_file_opt(&format!("/dec/f{i}"), true, None, 3, 1 << 20, true)
            .await
            .unwrap();
        w.write(&data).await.unwrap();
        w.close().await.unwrap();
    }
    let loc = fs.block_locations("/dec/f0").await.unwrap();
    let node = loc.blocks[0].locations[0].clone();
    let (code, out, err) = c.dfsadmin(&["-decommission", &node.addr]);
    assert_eq!(code, 0, "{out}{err}");
    let deadline = Instant::now() + Duration::from_secs(45);
    loop {
        let (_, out, _) = c.dfsadmin(&["-report"]);
        let section = out
            .split("Name: ")
            .find(|s| s.starts_with(&node.addr))
            .unwrap_or("")
            .to_string();
        if section.contains("Decommission Status : Decommissioned") {
            break;
        }
        assert!(Instant::now() < deadline, "not decommissioned:\n{out}\n{}", c.logs());
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    for i in 0..3 {
        let p = format!("/dec/f{i}");
        for b in fs.block_locations(&p).await.unwrap().blocks {
            let others = b.locations.iter().filter(|l| l.uuid != node.uuid).count();
            assert!(
                others >= 3,
                "{p} {}: {others} replicas off the decommissioned node",
                b.block
            );
        }
        let got = fs.open(&p).await.unwrap().read_to_end().await.unwrap();
        assert!(got == data);
    }
    let (code, _, _) = c.dfsadmin(&["-recommission", &node.addr]);
    assert_eq!(code, 0);

    // A restart with blocks: safe mode until the DataNodes report them.
    c.kill_all();
    c.restart_all();
    c.wait_ready().await;
    let (_, out, _) = c.dfsadmin(&["-safemode", "get"]);
    assert_eq!(out, "Safe mode is ON\n");
    let e = fs.mkdirs("/x", None).await.err();
    assert!(
        matches!(
            e,
            Some(raftfs_proto::FsError::SafeMode(_)) | Some(raftfs_proto::FsError::Timeout(_))
        ),
        "{e:?}"
    );
    c.start_datanodes(4, &[]);
    c.wait_datanodes(4).await;
    let (_, out, _) = c.dfsadmin(&["-safemode", "get"]);
    assert_eq!(out, "Safe mode is OFF\n");
    assert!(fs.mkdirs("/x", None).await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_datanode_of_another_cluster_is_refused_untouched() {
    let mut c = common::Cluster::start_with(1, "memory", ARGS);
    c.wait_ready().await;
    let dir = c.dn_dir(1);
    std::fs::create_dir_all(dir.join("current")).unwrap();
    let id = r#"{"cluster_id":"CID-someone-else","datanode_uuid":"u-1","storage_id":"DS-1","node_type":"DATA_NODE","layout_version":1}"#;
    std::fs::write(dir.join("current/ID"), id).unwrap();
    c.start_datanodes(1, &[]);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let log = std::fs::read_to_string(c.root.path().join("dn1.log")).unwrap_or_default();
        if log.contains("refusing") {
            assert!(log.contains("CID-someone-else"), "{log}");
            break;
        }
        assert!(Instant::now() < deadline, "no refusal in the log:\n{log}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        std::fs::read_to_string(dir.join("current/ID")).unwrap(),
        id,
        "ID untouched"
    );
    let entries: Vec<_> = std::fs::read_dir(dir.join("current")).unwrap().flatten().collect();
    assert_eq!(entries.len(), 1, "no block pool directory was created");
    let (_, out, _) = c.dfsadmin(&["-report"]);
    assert!(out.contains("Live datanodes (0):"), "{out}");
}
