//! `ptxbench prompt TASK --arch ARCH --variant N`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use crate::arch::Arch;
use crate::prompt::{self, Variant};

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// Task id (see `ptxbench tasks list`).
    pub task: String,
    #[arg(long, default_value = "sm_90a")]
    pub arch: Arch,
    /// 1: the task; 2: + notes on the target instructions; 3: + a worked pipeline pattern.
    #[arg(long, default_value_t = 1)]
    pub variant: u8,
}

pub fn run(a: PromptArgs, dir: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let suite = super::load_suite(dir)?;
    let task = super::task(&suite, &a.task)?;
    let variant = Variant::new(a.variant).map_err(anyhow::Error::msg)?;
    let text = prompt::render(task, a.arch, variant).map_err(anyhow::Error::msg)?;
    out!("{text}")?;
    Ok(ExitCode::SUCCESS)
}
