fn main() -> Result<(), Box<dyn std::error::Error>> {
    // No system protoc: use the one shipped inside protoc-bin-vendored.
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/raftfs.proto");
    // Block data travels as `bytes::Bytes`, so packets are forwarded down a
    // pipeline without copies.
    tonic_prost_build::configure()
        .bytes(".raftfs.v1.WritePacket.data")
        .bytes(".raftfs.v1.WritePacket.checksums")
        .bytes(".raftfs.v1.ReadChunk.data")
        .bytes(".raftfs.v1.ReadChunk.checksums")
        .bytes(".raftfs.v1.SnapshotChunk.data")
        .compile_protos(&["proto/raftfs.proto"], &["proto"])?;
    Ok(())
}
