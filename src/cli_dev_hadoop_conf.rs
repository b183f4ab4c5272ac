//! The Hadoop client configuration `raftfs dev` writes, so that Hadoop's
//! own clients (`hadoop fs`, hdfs-native, Spark) reach the cluster with
//! `HADOOP_CONF_DIR` and nothing else: `core-site.xml` names the first
//! nameservice given as `fs.defaultFS` (the routers' [`ROUTERS_NAMESERVICE`],
//! the whole federated namespace, when there are routers, as RBF's
//! documentation sets it up); `hdfs-site.xml` lists every nameservice
//! (`dfs.nameservices`), its NameNodes (`dfs.ha.namenodes.NS`,
//! `dfs.namenode.rpc-address.NS.ID`: each member's, or router's,
//! `--hadoop-rpc-addr`) and Hadoop's `ConfiguredFailoverProxyProvider`,
//! which moves on from a follower's `StandbyException` to the leader (and
//! from a router in safe mode to another router).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The directory under `raftfs dev`'s DIR that holds the two files.
pub const HADOOP_CONF_DIR_NAME: &str = "hadoop-conf";

/// The name Hadoop's clients know the routers by (the federated namespace).
pub const ROUTERS_NAMESERVICE: &str = "ns-fed";

/// One nameservice: its name and each NameNode's id and Hadoop RPC
/// address; NameNode `I` is named `{id_prefix}I` (`m1` for member 1,
/// `r1` for router 1).
pub struct HadoopNameservice<'a> {
    pub name: String,
    pub id_prefix: &'static str,
    pub members: &'a BTreeMap<u64, String>,
}

fn property(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(
        out,
        "  <property>\n    <name>{name}</name>\n    <value>{value}</value>\n  </property>"
    );
}

fn configuration(body: &str) -> String {
    format!("<?xml version=\"1.0\"?>\n<!-- Written by raftfs dev; rewritten at every start. -->\n<configuration>\n{body}</configuration>\n")
}

/// Write `DIR/hadoop-conf/{core,hdfs}-site.xml`; returns the directory.
/// `token_auth`: the cluster authenticates every caller, and Hadoop's
/// clients are to negotiate SASL (they authenticate with the delegation
/// tokens `HADOOP_TOKEN_FILE_LOCATION` names): the configuration says
/// `hadoop.security.authentication=kerberos`, as a secure HDFS's does.
pub fn write(dir: &Path, nameservices: &[HadoopNameservice<'_>], token_auth: bool) -> anyhow::Result<PathBuf> {
    let conf = dir.join(HADOOP_CONF_DIR_NAME);
    std::fs::create_dir_all(&conf).with_context(|| format!("create {}", conf.display()))?;
    let first = nameservices.first().context("a cluster has a nameservice")?;
    let mut core = String::new();
    property(&mut core, "fs.defaultFS", &format!("hdfs://{}", first.name));
    if token_auth {
        property(&mut core, "hadoop.security.authentication", "kerberos");
    }
    let mut hdfs = String::new();
    let names: Vec<&str> = nameservices.iter().map(|n| n.name.as_str()).collect();
    property(&mut hdfs, "dfs.nameservices", &names.join(","));
    for ns in nameservices {
        let p = ns.id_prefix;
        let ids: Vec<String> = ns.members.keys().map(|i| format!("{p}{i}")).collect();
        property(&mut hdfs, &format!("dfs.ha.namenodes.{}", ns.name), &ids.join(","));
        for (i, addr) in ns.members {
            property(&mut hdfs, &format!("dfs.namenode.rpc-address.{}.{p}{i}", ns.name), addr);
        }
        property(
            &mut hdfs,
            &format!("dfs.client.failover.proxy.provider.{}", ns.name),
            "org.apache.hadoop.hdfs.server.namenode.ha.ConfiguredFailoverProxyProvider",
        );
    }
    for (file, body) in [("core-site.xml", core), ("hdfs-site.xml", hdfs)] {
        let path = conf.join(file);
        std::fs::write(&path, configuration(&body)).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(conf)
}
