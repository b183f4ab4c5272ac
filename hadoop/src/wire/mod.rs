//! Hadoop's wire messages, as raftfs reads and writes them.
//!
//! These are our own prost definitions of the messages Hadoop's `.proto`
//! files describe (hadoop-common's `RpcHeader`, `IpcConnectionContext`,
//! `ProtobufRpcEngine2`, `Security`; hadoop-hdfs-client's `hdfs` and
//! `ClientNamenodeProtocol`, `ClientDatanodeProtocol`, `datatransfer`): the field numbers and types are the wire
//! format's, the names are ours, and only what raftfs reads or answers is
//! declared (a decoder skips unknown fields, as protobuf does). proto2
//! `required` fields are declared `required` so they are always written:
//! Java's parser refuses a message without them.
//!
//! Caveat: a field Hadoop adds later is skipped until it is declared here;
//! the tests against an independent client (`hdfs-native`) are what say
//! these definitions agree with Hadoop's.

pub mod client_datanode;
pub mod datatransfer;
pub mod hdfs;
pub mod namenode;
pub mod rpc;
