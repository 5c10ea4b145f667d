//! `ptxbench bundle MANIFEST -o FILE.zip`: a manifest and its whole closure in one
//! deterministic zip (see `bundle`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::bundle::write_bundle;

use super::verify::StoreArgs;

#[derive(Debug, Args)]
pub struct BundleArgs {
    /// The manifest to bundle.
    pub manifest: PathBuf,
    /// The zip to write (replaced atomically).
    #[arg(short, long, value_name = "FILE.zip")]
    pub output: PathBuf,
    #[command(flatten)]
    pub store: StoreArgs,
}

pub fn run(a: BundleArgs) -> anyhow::Result<ExitCode> {
    let store = a.store.open()?;
    let s = write_bundle(&store, &a.manifest, &a.output)?;
    println!(
        "wrote {}: {} and {} objects ({} bytes)",
        a.output.display(),
        s.manifest_entry,
        s.objects,
        s.bytes
    );
    Ok(ExitCode::SUCCESS)
}
