fn main() -> Result<(), Box<dyn std::error::Error>> {
    // No system protoc: use the one shipped inside protoc-bin-vendored.
    let protoc = protoc_bin_vendored::protoc_bin_path()?;
    std::env::set_var("PROTOC", protoc);
    println!("cargo:rerun-if-changed=proto/raftfs.proto");
    tonic_prost_build::configure().compile_protos(&["proto/raftfs.proto"], &["proto"])?;
    Ok(())
}
